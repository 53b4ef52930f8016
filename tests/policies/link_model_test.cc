// The link model with measured links (common/link_table.h): measured figures
// replace nominal ones, flows share a measured uplink, and the issue-44 case
// (tp=4,dp=2 on two leaves joined by a slow uplink) is ranked as measured.
#include "policies/link_model.h"

#include <gtest/gtest.h>

#include <set>

#include "common/synthetic_cluster.h"
#include "policies/placement_engine.h"

namespace gpulaunch {
namespace {

// Four CPU hosts of 2 slots each, in the order given, on two measured leaves
// (hosts 0,1 | 2,3 by name) whose uplink carries a quarter of a host port.
ClusterTopology TwoLeaves(const std::vector<int>& order = {0, 1, 2, 3}) {
  const ClusterTopology base = *MakeSyntheticCluster("leaf:1 node:4 gpu:0 core:2");
  ClusterTopology c;
  for (int i : order) {
    c.hosts.push_back(base.hosts[i]);
    c.hosts.back().slots = 2;
  }
  const auto name = [&](int i) { return base.hosts[i].name; };
  LinkTable& t = c.links;
  for (int a = 0; a < 4; ++a)
    for (int b = a + 1; b < 4; ++b) t.AddPair(name(a), name(b), {a / 2 == b / 2 ? 0.01 : 0.0025, 100});
  for (int a = 0; a < 4; ++a) t.shared_memory[name(a)] = {5.0, 0.5};
  t.leaves = {{"leafA", {name(0), name(1)}, 0.0025}, {"leafB", {name(2), name(3)}, 0.0025}};
  c.network = *LeavesAsNetworkTree(t);
  return c;
}

TEST(LinkModel, MeasuredFiguresReplaceNominalOnes) {
  ClusterTopology c = TwoLeaves();
  const LinkCost pair = CostBetween(c, {0}, {1});
  EXPECT_EQ(pair.gbps, 0.01);
  EXPECT_EQ(pair.latency_us, 100);
  EXPECT_STREQ(pair.cls, "measured");
  EXPECT_EQ(CostBetween(c, {0}, {0}).gbps, 5.0);  // two CPU ranks on one host: measured shared memory
  c.links = LinkTable();
  EXPECT_EQ(CostBetween(c, {0}, {1}).gbps, c.nic_gbps);  // nothing measured: nominal
  EXPECT_EQ(CostBetween(c, {0}, {0}).gbps, 10.0);
}

TEST(LinkModel, FlowsAtOnceShareAMeasuredUplink) {
  const ClusterTopology c = TwoLeaves();
  LinkLookup links(c);
  UplinkLoad one, two, inside;
  AddFlow(links, {0}, {2}, one);
  EXPECT_EQ(LoadedCost(links, {0}, {2}, &one).gbps, 0.0025);  // alone: the pair's own figure
  AddFlow(links, {0}, {2}, two);
  AddFlow(links, {1}, {3}, two);
  const MeasuredLeaf* leaf_a = &c.links.leaves[0];
  const MeasuredLeaf* leaf_b = &c.links.leaves[1];
  EXPECT_EQ(two.up.at(leaf_a), 2);
  EXPECT_EQ(two.down.at(leaf_b), 2);
  EXPECT_DOUBLE_EQ(LoadedCost(links, {0}, {2}, &two).gbps, 0.00125);  // half the uplink each
  EXPECT_STREQ(LoadedCost(links, {0}, {2}, &two).cls, "shared uplink");
  AddFlow(links, {0}, {1}, inside);  // under one leaf: no uplink
  EXPECT_TRUE(inside.up.empty());
  // The reverse direction has its own capacity.
  EXPECT_EQ(LoadedCost(links, {2}, {0}, &two).gbps, 0.0025);
}

// The lookup remembers what it found by host index: asked again, in either
// order, it gives the figures a fresh lookup of the same cluster gives.
TEST(LinkModel, TheLookupAnswersAsTheTableAndTreeDo) {
  const ClusterTopology c = TwoLeaves();
  LinkLookup links(c);
  for (int round = 0; round < 2; ++round) {
    for (int a = 0; a < 4; ++a) {
      EXPECT_EQ(links.LeafOf(a), c.links.LeafOf(c.hosts[a].name)) << a;
      for (int b = 0; b < 4; ++b) {
        if (a == b) continue;
        EXPECT_EQ(links.MeasuredPair(a, b), c.links.Pair(c.hosts[a].name, c.hosts[b].name)) << a << "," << b;
        EXPECT_EQ(links.SwitchesBetween(a, b), c.network.SwitchesBetween(c.hosts[a].name, c.hosts[b].name));
        EXPECT_EQ(CostBetween(links, {a}, {b}).gbps, CostBetween(c, {a}, {b}).gbps);
      }
    }
  }
  EXPECT_EQ(links.SwitchesBetween(0, 2), 3);  // across the spine
  EXPECT_EQ(links.LeafOf(0), &c.links.leaves[0]);
}

// The measured case of issue 44: TP groups across the uplink cost 2.6x
// there; the model must rank that plan slower, and compact must keep every TP
// group under one leaf even when the hostfile interleaves the leaves.
TEST(LinkModel, TensorGroupsAcrossTheUplinkAreModelledSlower) {
  const ClusterTopology interleaved = TwoLeaves({0, 2, 1, 3});
  JobRequest r;
  r.ranks = 8;
  r.layout = *ParseLayout("tp=4,dp=2", 8);
  auto by_slot = PlaceLikeOpenMpiBySlot(r, interleaved);
  auto chosen = Place(r, interleaved);
  ASSERT_TRUE(by_slot.ok() && chosen.ok());
  const double bad = ModelStep(*by_slot, interleaved, r).total_seconds();
  const double good = ModelStep(*chosen, interleaved, r).total_seconds();
  EXPECT_GT(bad, 1.5 * good);
  for (int group = 0; group < 2; ++group) {
    std::set<std::string> leaves;
    for (int rank = group * 4; rank < group * 4 + 4; ++rank) {
      leaves.insert(interleaved.links.LeafOf(chosen->ranks[rank].host)->name);
    }
    EXPECT_EQ(leaves.size(), 1u) << "TP group " << group << " spans the uplink";
  }
  // Without measurements the model cannot tell the two apart (what issue 44 found).
  ClusterTopology nominal = interleaved;
  nominal.links = LinkTable();
  EXPECT_LE(ModelStep(*by_slot, nominal, r).total_seconds(), ModelStep(*chosen, nominal, r).total_seconds());
}

}  // namespace
}  // namespace gpulaunch
