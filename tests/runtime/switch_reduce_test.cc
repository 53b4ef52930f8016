// The hierarchical reduction with a switch level (runtime/rank_hierarchy.h):
// which ranks collect what, the one-rank bits for every mapping of ranks onto
// hosts and of hosts onto switches, and what crosses between switches: each
// element once up and once down, as a ring over the switches would send, where
// hosts alone send it once a host.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "runtime/rank_hierarchy.h"
#include "tests/runtime/reduction_test_support.h"

namespace gpulaunch::rt {
namespace {

using namespace reduction_test;  // NOLINT: the helpers of this test family

TEST(RankHierarchy, KeepsASwitchLevelOnlyWhenSwitchesGroupHosts) {
  auto both = RankHierarchy::Make({0, 0, 1, 1, 2, 2, 3, 3}, {7, 7, 7, 7, 9, 9, 9, 9});
  ASSERT_TRUE(both.ok());
  EXPECT_TRUE(both->has_switches());
  EXPECT_EQ(both->top(), 2);
  EXPECT_EQ(both->switch_of(), (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  // One switch over everything, or one host a switch: nothing to gain.
  EXPECT_FALSE(RankHierarchy::Make({0, 0, 1, 1}, {5, 5, 5, 5})->has_switches());
  EXPECT_FALSE(RankHierarchy::Make({0, 0, 1, 1}, {5, 5, 6, 6})->has_switches());
  EXPECT_EQ(RankHierarchy::Make({0, 0, 1, 1}, {5, 5, 6, 6})->top(), 1);
  EXPECT_TRUE(RankHierarchy::Make({0, 1, 2}, {0, 0, 1})->has_switches());  // uneven: still a level
  auto split = RankHierarchy::Make({0, 0, 1, 1}, {0, 1, 2, 2});
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.status().message().find("ranks 0 and 1 share a host but name different switches"), std::string::npos)
      << split.status().message();
  EXPECT_FALSE(RankHierarchy::Make({0, 0, 1}, {0, 0}).ok());
}

// In every group of every level: each rank's range has one collector, a
// member of the group; t is its own collector wherever it is a member; a
// collector below a group's collector is that collector when it lies there;
// and equal groups share the ranges out evenly.
TEST(RankHierarchy, CollectorsPartitionTheRangesConsistentlyAndEvenly) {
  const std::vector<std::pair<std::vector<int>, std::vector<int>>> shapes = {
      {{0, 0, 1, 1, 2, 2, 3, 3}, {0, 0, 0, 0, 1, 1, 1, 1}},
      {{0, 1, 2, 3, 0, 1, 2, 3}, {0, 1, 0, 1, 0, 1, 0, 1}},
      {{0, 0, 0, 1, 1, 2, 2, 3}, {0, 0, 0, 0, 0, 1, 1, 1}},
      {{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}, {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}},
  };
  for (const auto& [hosts, switches] : shapes) {
    auto h = RankHierarchy::Make(hosts, switches);
    ASSERT_TRUE(h.ok());
    for (int level = 0; level <= h->top(); ++level) {
      const RankGroups& groups = h->levels()[static_cast<size_t>(level)];
      for (int g = 0; g < groups.groups(); ++g) {
        const auto& members = groups.members[static_cast<size_t>(g)];
        const auto collected = h->CollectedBy(level, g);
        std::vector<int> all;
        for (const auto& c : collected) all.insert(all.end(), c.begin(), c.end());
        std::sort(all.begin(), all.end());
        ASSERT_EQ(all.size(), static_cast<size_t>(h->size())) << Describe(hosts) << " level " << level;
        for (int t = 0; t < h->size(); ++t) {
          ASSERT_EQ(all[static_cast<size_t>(t)], t);
          const int c = h->Collector(level, g, t);
          EXPECT_EQ(groups.group_of[static_cast<size_t>(c)], g);
          if (groups.group_of[static_cast<size_t>(t)] == g) {
            EXPECT_EQ(c, t);
          }
          if (level < h->top()) {
            const int above = h->Collector(level + 1, h->levels()[static_cast<size_t>(level) + 1].group_of[static_cast<size_t>(members[0])], t);
            if (groups.group_of[static_cast<size_t>(above)] == g) {
              EXPECT_EQ(c, above);
            }
          }
        }
        bool equal_groups = true;
        for (const auto& m : groups.members) equal_groups &= m.size() == members.size();
        if (equal_groups) {
          for (const auto& c : collected) EXPECT_EQ(c.size(), static_cast<size_t>(groups.groups())) << Describe(hosts);
        }
      }
    }
  }
}

// Every set partition of `hosts` host indices into `switches` switches.
std::vector<std::vector<int>> SwitchAssignments(int hosts, int switches) {
  std::vector<std::vector<int>> out;
  ForEveryMapping(hosts, switches, [&](const std::vector<int>& of_host) { out.push_back(of_host); });
  return out;
}

std::vector<int> SwitchOfRanks(const std::vector<int>& host_of, const std::vector<int>& switch_of_host) {
  std::vector<int> out;
  for (int h : host_of) out.push_back(switch_of_host[static_cast<size_t>(h)]);
  return out;
}

TEST(SwitchAllreduce, OneRankBitsForEveryMappingOfEightRanksOntoFourHostsOnTwoSwitches) {
  const size_t count = 67;
  const int leaves = 64;
  const auto want = OneRank<float>(leaves, count);
  const auto assignments = SwitchAssignments(4, 2);  // {0,0,0,1} ... : S(4,2) = 7
  ASSERT_EQ(assignments.size(), 7u);
  int mappings = 0;
  ForEveryMapping(8, 4, [&](const std::vector<int>& host_of) {
    // Every host -> switch assignment for a spread of rank mappings, one for the rest.
    const bool all = mappings++ % 97 == 0;
    for (size_t a = 0; a < (all ? assignments.size() : 1); ++a) {
      const auto& switch_of_host = assignments[all ? a : static_cast<size_t>(mappings) % assignments.size()];
      const auto switch_of = SwitchOfRanks(host_of, switch_of_host);
      const Outcome run = AllreduceOn(host_of, leaves, count, ReduceAlgorithm::kHierarchical, switch_of);
      ExpectOneRankBits(run, want, Describe(host_of) + " switches " + Describe(switch_of));
      ASSERT_NE(run.plans[0].find("switches=2"), std::string::npos) << run.plans[0];
    }
  });
  EXPECT_EQ(mappings, 1701);
}

TEST(SwitchAllreduce, OneRankBitsForUnevenShapesLeafCountsAndElementCounts) {
  const std::vector<std::pair<std::vector<int>, std::vector<int>>> shapes = {
      {{0, 0, 0, 1, 1, 2, 2, 3}, {0, 0, 0, 0, 0, 1, 1, 1}},          // 3+2 | 2+1
      {{0, 1, 2, 3, 4, 5, 0, 1, 2}, {0, 0, 1, 1, 2, 2, 0, 0, 1}},    // 3 switches, hosts of 2 and 1 ranks
      {{3, 3, 2, 2, 1, 1, 0, 0}, {1, 1, 1, 1, 0, 0, 0, 0}},          // named the other way round
      {{0, 1, 0, 1, 2, 3, 2, 3}, {0, 0, 0, 0, 1, 1, 1, 1}},          // hosts interleaved inside a switch
      {{0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 0, 1, 0, 1, 0, 1}},          // one rank a host, switches interleaved
  };
  for (int leaves : {64, 7, 3}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{1001}}) {
      const auto want = OneRank<float>(leaves, count);
      for (const auto& [hosts, switches] : shapes) {
        ExpectOneRankBits(AllreduceOn(hosts, leaves, count, ReduceAlgorithm::kHierarchical, switches), want,
                          Describe(hosts) + " switches " + Describe(switches) + " leaves=" + std::to_string(leaves) +
                              " count=" + std::to_string(count));
      }
    }
  }
}

TEST(SwitchAllreduce, ReduceScatterAndTheExactSumKeepTheirBits) {
  const std::vector<int> hosts = {0, 0, 1, 1, 2, 2, 3}, switches = {0, 0, 0, 0, 1, 1, 1};
  const size_t count = 300;
  const auto want = OneRank<double>(16, count);
  RunOnThreads(7, [&](Communicator& c) {
    auto reducer = DeterministicReducer::Create(c, {16, ElementType::kFloat64, ReduceAlgorithm::kAuto, hosts, switches});
    ASSERT_TRUE(reducer.ok()) << reducer.status().message();
    EXPECT_TRUE(reducer->hierarchy().has_switches());
    auto sum = LeafSum<double>::ForRank(count, 16, c.rank(), c.size());
    for (int l = sum.first_leaf(); l < sum.end_leaf(); ++l) ASSERT_TRUE(sum.AddLeaf(Leaf<double>(l, count).data()).ok());
    const auto [lo, hi] = ElementRange(count, c.rank(), c.size());
    std::vector<double> part(hi - lo);
    ASSERT_TRUE(reducer->ReduceScatter(sum, part.data()).ok());
    EXPECT_EQ(std::memcmp(part.data(), want.data() + lo, part.size() * sizeof(double)), 0);

    std::vector<Superaccumulator> exact(count);
    for (size_t i = 0; i < count; ++i) exact[i].Add(std::ldexp(1.0 + double((c.rank() * 13 + i) % 7), int(i % 90) - 45));
    std::vector<double> flat(count), tiered(count);
    ASSERT_TRUE(ExactAllreduce(c, exact, flat.data()).ok());
    ASSERT_TRUE(ExactAllreduce(c, exact, tiered.data(), hosts, switches).ok());
    EXPECT_EQ(std::memcmp(flat.data(), tiered.data(), count * sizeof(double)), 0);
  });
}

TEST(SwitchReducer, RanksThatDisagreeAboutSwitchesRefuse) {
  RunOnThreads(4, [](Communicator& c) {
    // Rank 2 sees the four hosts under two switches, the others under one.
    const std::vector<int> hosts = {0, 1, 2, 3};
    const std::vector<int> switches = c.rank() == 2 ? std::vector<int>{0, 0, 1, 1} : std::vector<int>{0, 0, 0, 0};
    auto reducer = DeterministicReducer::Create(c, {64, ElementType::kFloat32, ReduceAlgorithm::kAuto, hosts, switches});
    ASSERT_FALSE(reducer.ok());
    EXPECT_NE(reducer.status().message().find("refusing to reduce"), std::string::npos);
  });
}

// p ranks on each of h hosts, s switches of h/s hosts, all powers of two:
// what each switch sends to the others is 2(s-1)/s of the payload (a ring
// over the switches: each element once up, once down), and each host still
// sends no more than 2(h-1)/h to other hosts. The hierarchy of hosts alone
// (kHierarchicalHostsOnly) sends h/s times that between switches: each host
// sends its own 2(s-1)/s across.
TEST(SwitchTraffic, EachSwitchSendsWhatARingOverTheSwitchesSends) {
  const size_t count = 1 << 14;
  const size_t payload = count * sizeof(float);
  for (const auto& [hosts, switches, per_host] : std::vector<std::tuple<int, int, int>>{
           {4, 2, 1}, {4, 2, 2}, {4, 2, 4}, {8, 2, 2}, {8, 4, 1}, {8, 4, 2}}) {
    std::vector<int> host_of, switch_of;
    for (int h = 0; h < hosts; ++h) {
      host_of.insert(host_of.end(), static_cast<size_t>(per_host), h);
      switch_of.insert(switch_of.end(), static_cast<size_t>(per_host), h / (hosts / switches));
    }
    const std::string what = std::to_string(switches) + " switches, " + std::to_string(hosts) + " hosts x " +
                             std::to_string(per_host) + " ranks";
    const Outcome run = AllreduceOn(host_of, 64, count, ReduceAlgorithm::kHierarchical, switch_of);
    const auto switch_sent = PayloadsSentBy(run, switch_of, payload, &ReduceTraffic::inter_switch_bytes);
    const auto host_sent = InterHostPayloads(run, host_of, payload);
    const double ring_switches = 2.0 * (switches - 1) / switches, ring_hosts = 2.0 * (hosts - 1) / hosts;
    for (int s = 0; s < switches; ++s) EXPECT_NEAR(switch_sent[s], ring_switches, 1e-3) << what << ", switch " << s;
    for (int h = 0; h < hosts; ++h) EXPECT_LE(host_sent[h], ring_hosts + 1e-3) << what << ", host " << h;
    const Outcome hosts_only = AllreduceOn(host_of, 64, count, ReduceAlgorithm::kHierarchicalHostsOnly, switch_of);
    ExpectOneRankBits(hosts_only, run.results[0], what + ", hosts only");
    const auto hosts_only_sent = PayloadsSentBy(hosts_only, switch_of, payload, &ReduceTraffic::inter_switch_bytes);
    for (int s = 0; s < switches; ++s) {
      EXPECT_NEAR(hosts_only_sent[s], hosts / switches * ring_switches, 1e-3) << what << ", hosts only, switch " << s;
    }
  }
}

// Uneven: 3 switches of 2 hosts x 2 ranks over 64 leaves, so a switch's
// leaves make several tree nodes. A switch sends each of its pure nodes over
// the elements finished under other switches, then its finished elements to
// every other switch once.
TEST(SwitchTraffic, UnevenSwitchesSendTheirPureNodesOnceAndTheirResultOnce) {
  const std::vector<int> host_of = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5};
  const std::vector<int> switch_of = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2};
  const size_t count = 12000;
  const Outcome run = AllreduceOn(host_of, 64, count, ReduceAlgorithm::kHierarchical, switch_of);
  const auto sent = PayloadsSentBy(run, switch_of, count * sizeof(float), &ReduceTraffic::inter_switch_bytes);
  std::vector<int> pure_nodes(3, 0);
  for (const auto& [node, s] : PureNodes(64, switch_of)) ++pure_nodes[static_cast<size_t>(s)];
  EXPECT_GT(pure_nodes[1], 1);  // the case this test is about
  for (int s = 0; s < 3; ++s) {
    const double own = 1.0 / 3;  // of the elements, finished under this switch
    EXPECT_NEAR(sent[s], pure_nodes[s] * (1 - own) + own * 2, 1e-3) << "switch " << s;
  }
}

}  // namespace
}  // namespace gpulaunch::rt
