#include "policies/slot_placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "tests/testing/synthetic_host.h"

namespace gpulaunch {
namespace {

using testing::SyntheticHost;

ClusterHost Host(const std::string& name, HostTopology t, std::optional<int> slots = std::nullopt,
                   std::optional<int> max_slots = std::nullopt) {
  return ClusterHost{.name = name, .topology = std::move(t), .slots = slots, .max_slots = max_slots};
}

bool Subset(const std::vector<int>& a, const std::vector<int>& b) {
  return std::includes(b.begin(), b.end(), a.begin(), a.end());
}

TEST(SlotPlacement, CpuHostOneRankPerCoreBlock) {
  auto p = PlaceBySlot(SlotJob(4, false), {Host("a", SyntheticHost(2, 4, 2, 0, 0))});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->ranks.size(), 4u);
  std::set<int> seen;
  for (const RankSlot& r : p->ranks) {
    EXPECT_TRUE(r.bound);
    EXPECT_EQ(r.cpus.size(), 4u);  // 2 cores x 2 PUs
    EXPECT_EQ(r.cores.size(), 2u);
    EXPECT_TRUE(r.gpus.empty());
    EXPECT_GE(r.mem_node, 0);
    for (int c : r.cpus) EXPECT_TRUE(seen.insert(c).second) << "cpu " << c << " given twice";
  }
  EXPECT_EQ(p->ranks[0].mem_node, 0);
  EXPECT_EQ(p->ranks[3].mem_node, 1);
}

TEST(SlotPlacement, GpuHostOneGpuEachWithLocalCoresAndNic) {
  const HostTopology t = SyntheticHost(2, 8, 2, 4, 2);
  auto p = PlaceBySlot(SlotJob(8, false), {Host("g", t)});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::set<int> gpus;
  std::map<std::string, int> nic_use;
  for (const RankSlot& r : p->ranks) {
    ASSERT_EQ(r.gpus.size(), 1u);
    EXPECT_TRUE(gpus.insert(r.gpus[0]).second) << "GPU given twice";
    const Gpu& g = t.gpus[r.gpus[0]];
    EXPECT_EQ(r.mem_node, g.numa_node);
    EXPECT_TRUE(Subset(r.cpus, g.local_pus)) << "rank " << r.rank << " cores not local to its GPU";
    EXPECT_EQ(r.cpus.size(), 4u);  // 8 cores x 2 PUs per node, shared by its 4 GPU ranks
    ++nic_use[r.nic];
    // The chosen NIC is on the GPU's own switch.
    const auto nic = std::find_if(t.nics.begin(), t.nics.end(), [&](const Nic& n) { return n.name == r.nic; });
    ASSERT_NE(nic, t.nics.end());
    EXPECT_EQ(nic->pci_path, g.pci_path);
  }
  for (const auto& [nic, uses] : nic_use) EXPECT_EQ(uses, 2) << nic << " shared unevenly";
}

TEST(SlotPlacement, EquidistantNicsAreNotSharedWhileOneIsFree) {
  HostTopology t = SyntheticHost(1, 4, 1, 2, 2);
  for (Nic& n : t.nics) n.pci_path = {"elsewhere"};  // both NICs equally far from both GPUs
  auto p = PlaceBySlot(SlotJob(2, false), {Host("g", t)});
  ASSERT_TRUE(p.ok());
  EXPECT_NE(p->ranks[0].nic, p->ranks[1].nic);
}

TEST(SlotPlacement, FillsHostsBySlotInOrder) {
  auto p = PlaceBySlot(SlotJob(5, false), {Host("a", SyntheticHost(1, 4, 1, 0, 0), 2), Host("b", SyntheticHost(1, 4, 1, 0, 0), 4)});
  ASSERT_TRUE(p.ok());
  std::vector<std::string> hosts;
  for (const RankSlot& r : p->ranks) hosts.push_back(r.host + ":" + std::to_string(r.local_rank) + "/" +
                                                     std::to_string(r.local_size) + "@" + std::to_string(r.node_rank));
  EXPECT_EQ(hosts, (std::vector<std::string>{"a:0/2@0", "a:1/2@0", "b:0/3@1", "b:1/3@1", "b:2/3@1"}));
  EXPECT_EQ(p->hosts, (std::vector<std::string>{"a", "b"}));
}

TEST(SlotPlacement, DefaultRanksIsOnePerSlot) {
  auto p = PlaceBySlot(SlotJob(0, false), {Host("g", SyntheticHost(2, 4, 1, 2, 0)), Host("c", SyntheticHost(1, 3, 1, 0, 0))});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ranks.size(), 4u + 3u);  // GPUs on g, cores on c
}

TEST(SlotPlacement, TooManyRanksIsInfeasibleAndNamesOversubscribe) {
  auto p = PlaceBySlot(SlotJob(16, false), {Host("vm", SyntheticHost(1, 2, 1, 0, 0))});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInfeasible);
  EXPECT_NE(p.status().message().find("--oversubscribe"), std::string::npos);
  EXPECT_NE(p.status().message().find("short by 14"), std::string::npos);
}

TEST(SlotPlacement, OversubscribeSpreadsEvenlyUnbound) {
  auto p = PlaceBySlot(SlotJob(10, true), {Host("a", SyntheticHost(1, 2, 1, 0, 0)), Host("b", SyntheticHost(1, 2, 1, 0, 0)),
                                    Host("c", SyntheticHost(1, 2, 1, 0, 0))});
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->oversubscribed);
  std::map<std::string, int> per_host;
  for (const RankSlot& r : p->ranks) {
    ++per_host[r.host];
    EXPECT_FALSE(r.bound);
    EXPECT_EQ(r.cpus, (std::vector<int>{0, 1}));
  }
  for (const auto& [h, n] : per_host) EXPECT_TRUE(n == 3 || n == 4) << h << " got " << n;
}

TEST(SlotPlacement, OversubscribeHonoursMaxSlots) {
  auto p = PlaceBySlot(SlotJob(10, true), {Host("a", SyntheticHost(1, 2, 1, 0, 0), 2, 2), Host("b", SyntheticHost(1, 2, 1, 0, 0))});
  ASSERT_TRUE(p.ok());
  int on_a = 0;
  for (const RankSlot& r : p->ranks) on_a += r.host == "a";
  EXPECT_EQ(on_a, 2);
  auto capped = PlaceBySlot(SlotJob(10, true), {Host("a", SyntheticHost(1, 2, 1, 0, 0), 2, 3)});
  ASSERT_FALSE(capped.ok());
  EXPECT_NE(capped.status().message().find("max_slots"), std::string::npos);
}

TEST(SlotPlacement, MoreRanksThanCoresOnGrantedSlotsAreUnbound) {
  auto p = PlaceBySlot(SlotJob(8, false), {Host("a", SyntheticHost(1, 2, 1, 0, 0), 8)});
  ASSERT_TRUE(p.ok());
  for (const RankSlot& r : p->ranks) EXPECT_FALSE(r.bound);
  EXPECT_FALSE(p->notes.empty());
}

TEST(SlotPlacement, Deterministic) {
  const std::vector<ClusterHost> hosts = {Host("a", SyntheticHost(2, 8, 2, 4, 2)), Host("b", SyntheticHost(2, 8, 2, 4, 2))};
  auto p1 = PlaceBySlot(SlotJob(12, false), hosts);
  auto p2 = PlaceBySlot(SlotJob(12, false), hosts);
  ASSERT_TRUE(p1.ok() && p2.ok());
  for (size_t i = 0; i < p1->ranks.size(); ++i) {
    EXPECT_EQ(p1->ranks[i].cpus, p2->ranks[i].cpus);
    EXPECT_EQ(p1->ranks[i].nic, p2->ranks[i].nic);
    EXPECT_EQ(p1->ranks[i].gpus, p2->ranks[i].gpus);
  }
}

}  // namespace
}  // namespace gpulaunch
