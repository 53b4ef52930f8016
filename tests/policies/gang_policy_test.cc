// The pool's gang rule as a placement policy (--policy gang): the same
// function the simulator schedules with, over a cluster's free GPUs.
#include <gtest/gtest.h>

#include "common/synthetic_cluster.h"
#include "policies/placement_engine.h"

namespace gpulaunch {
namespace {

JobRequest GangJob(int ranks) {
  JobRequest r;
  r.ranks = ranks;
  r.layout = *ParseLayout("", ranks);
  r.policy = "gang";
  return r;
}

// Two leaf switches of three 8-GPU hosts; node0001 has GPUs 0-3 busy.
ClusterTopology TwoLeavesOneFragment() {
  ClusterTopology c = *MakeSyntheticCluster("switch:2 node:3 gpu:8");
  c.hosts[0].gpu_busy.assign(8, false);
  for (int g = 0; g < 4; ++g) c.hosts[0].gpu_busy[g] = true;
  return c;
}

TEST(GangPolicy, UsesTheFragmentForTheRemainderAndKeepsAWholeHostFree) {
  const ClusterTopology c = TwoLeavesOneFragment();
  // 12 GPUs: one whole host plus 4 more, under the leaf with the least room
  // that holds both, the 4 on the fullest host that fits them (node0001's
  // free half), so node0003 stays whole.
  auto p = Place(GangJob(12), c);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->hosts, (std::vector<std::string>{"node0001", "node0002"}));
  int on_fragment = 0;
  for (const RankSlot& s : p->ranks) {
    if (s.host != "node0001") continue;
    ++on_fragment;
    ASSERT_EQ(s.gpus.size(), 1u);
    EXPECT_GE(s.gpus[0], 4) << "rank " << s.rank << " got a busy GPU";
  }
  EXPECT_EQ(on_fragment, 4);
  bool explained = false;
  for (const std::string& line : p->explain) explained |= line.find("gang: 2 hosts under 1 leaf switch") != std::string::npos;
  EXPECT_TRUE(explained);
}

TEST(GangPolicy, ASmallJobGoesToTheFullestHostThatFits) {
  const ClusterTopology c = TwoLeavesOneFragment();
  auto p = Place(GangJob(3), c);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->hosts, (std::vector<std::string>{"node0001"}));
}

TEST(GangPolicy, ABigJobNeedsWholeFreeHosts) {
  // Half of node0004 busy too: 40 GPUs free, but only 4 hosts whole. A
  // 40-GPU gang needs 5 whole hosts; two halves are no whole host.
  ClusterTopology c = TwoLeavesOneFragment();
  c.hosts[3].gpu_busy.assign(8, false);
  for (int g = 0; g < 4; ++g) c.hosts[3].gpu_busy[g] = true;
  auto p = Place(GangJob(40), c);
  EXPECT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInfeasible) << p.status().ToString();
  // 36: the 4 whole hosts and one half for the remainder.
  auto fits = Place(GangJob(36), c);
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(fits->hosts.size(), 5u);
}

TEST(GangPolicy, IsListedWithTheOtherPolicies) {
  JobRequest r = GangJob(2);
  r.policy = "gangs";
  auto p = Place(r, TwoLeavesOneFragment());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("fragmented, gang, or by-slot"), std::string::npos) << p.status().message();
}

}  // namespace
}  // namespace gpulaunch
