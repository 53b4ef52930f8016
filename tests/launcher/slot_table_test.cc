#include "launcher/base/slot_table.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

SlotTable Example() {
  SlotTable t;
  t.job_id = "gl-1234";
  t.plan_hash = "abc";
  t.master_addr = "10.0.0.1";
  t.master_port = 29500;
  t.control = "10.0.0.1:4000";
  t.layout = "tp=2,pp=1,dp=1,order=tp-pp-dp";
  RankSlot a;
  a.rank = 0; a.host = "node1"; a.local_rank = 0; a.local_size = 2; a.node_rank = 0; a.bound = true;
  a.cpus = {0, 1, 2, 3, 8}; a.mem_node = 0; a.gpus = {0}; a.host_has_gpus = true; a.nic = "mlx5_0:1";
  a.leaf_switch = "leaf-a";
  RankSlot b;
  b.rank = 1; b.host = "node1"; b.local_rank = 1; b.local_size = 2; b.node_rank = 0; b.bound = false;
  b.cpus = {0, 1, 2, 3, 4, 5, 6, 7, 8}; b.mem_node = -1; b.host_has_gpus = false;
  t.ranks = {a, b};
  return t;
}

TEST(SlotTable, RoundTrips) {
  const SlotTable t = Example();
  const std::string text = EncodeSlotTable(t);
  auto back = DecodeSlotTable(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->job_id, t.job_id);
  EXPECT_EQ(back->master_port, 29500);
  EXPECT_EQ(back->control, t.control);
  EXPECT_EQ(back->layout, t.layout);
  ASSERT_EQ(back->ranks.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back->ranks[i].host, t.ranks[i].host);
    EXPECT_EQ(back->ranks[i].cpus, t.ranks[i].cpus);
    EXPECT_EQ(back->ranks[i].gpus, t.ranks[i].gpus);
    EXPECT_EQ(back->ranks[i].nic, t.ranks[i].nic);
    EXPECT_EQ(back->ranks[i].leaf_switch, t.ranks[i].leaf_switch);
    EXPECT_EQ(back->ranks[i].bound, t.ranks[i].bound);
    EXPECT_EQ(back->ranks[i].mem_node, t.ranks[i].mem_node);
    EXPECT_EQ(back->ranks[i].host_has_gpus, t.ranks[i].host_has_gpus);
  }
  EXPECT_EQ(EncodeSlotTable(*back), text);
}

TEST(SlotTable, RejectsMalformed) {
  const std::string good = EncodeSlotTable(Example());
  for (const std::string& bad : {std::string(""), std::string("v1") + good.substr(2), good.substr(0, good.size() - 20),
                                good + " extra/row", std::string("v3|j|h|a|notaport|-|1|-|h/0/1/0/1/0/0/-/0/-"),
                                std::string("v2|j|h|a|1|-|1|-|h/0/1/0/1/0/0/-/0/-"),
                                std::string("v3|j|h|a|1|-|1|-|-")}) {  // no rows and nowhere to ask
    auto t = DecodeSlotTable(bad);
    EXPECT_FALSE(t.ok()) << bad;
  }
}

// The environment every rank gets is the header only: the same size for 2
// ranks and for 65,536 (the rows come from the control server).
TEST(SlotTable, TheHeaderIsTheSameSizeForAnyWorld) {
  SlotTable small = Example();
  SlotTable big = Example();
  big.ranks.assign(65536, Example().ranks[1]);
  const std::string a = EncodeSlotTable(small, /*with_rows=*/false);
  const std::string b = EncodeSlotTable(big, /*with_rows=*/false);
  EXPECT_LE(b.size(), a.size() + 5);  // the world size's digits
  EXPECT_LT(b.size(), 300u);
  auto back = DecodeSlotTable(b);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->ranks.empty());
  EXPECT_EQ(back->world, 65536);
  EXPECT_EQ(back->control, "10.0.0.1:4000");
}

TEST(SlotTable, RowsRoundTripAlone) {
  const SlotTable t = Example();
  const RankSlot& a = t.ranks[0];
  auto back = DecodeSlotRow(EncodeSlotRow(a), 7);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->rank, 7);
  EXPECT_EQ(EncodeSlotRow(*back), EncodeSlotRow(a));
  EXPECT_FALSE(DecodeSlotRow("node1/0/2", 0).ok());
  EXPECT_FALSE(DecodeSlotRow("/0/2/0/1/0/0/-/0/-/-", 0).ok());  // no host
  // An older gpulaunch's row has no switch field: none.
  auto old = DecodeSlotRow("node1/0/2/0/1/0/0/-/0/-", 0);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->leaf_switch, "");
  EXPECT_FALSE(DecodeSlotRow("node1/0/2/0/1/0/0/-/0/-/leaf/x", 0).ok());
}

}  // namespace
}  // namespace gpulaunch
