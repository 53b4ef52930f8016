#include "common/link_table.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

LinkTable TwoLeaves() {
  LinkTable t;
  t.measured_at = "2026-12-05T08:00:00Z";
  t.AddPair("node2", "node1", {0.0095, 100});
  t.AddPair("node1", "node3", {0.0024, 150});
  t.shared_memory["node1"] = {5.5, 0.5};
  t.leaves = {{"leaf1", {"node1", "node2"}, 0.0024}, {"leaf2", {"node3", "node4"}, 0.0024}};
  return t;
}

TEST(LinkTable, WritesWhatItReadsBack) {
  const LinkTable t = TwoLeaves();
  const std::string text = WriteLinkTable(t);
  auto back = ParseLinkTable(text, "links.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(WriteLinkTable(*back), text);
  ASSERT_NE(back->Pair("node1", "node2"), nullptr);
  EXPECT_EQ(back->Pair("node2", "node1")->gbyte_per_s, 0.0095);  // unordered
  EXPECT_EQ(back->shared_memory.at("node1").gbyte_per_s, 5.5);
  ASSERT_NE(back->LeafOf("node4"), nullptr);
  EXPECT_EQ(back->LeafOf("node4")->name, "leaf2");
  EXPECT_EQ(back->LeafOf("node9"), nullptr);
}

TEST(LinkTable, APairMeasuredBothWaysKeepsTheSlowerDirection) {
  LinkTable t;
  t.AddPair("a", "b", {2.0, 10});
  t.AddPair("b", "a", {1.5, 12});
  EXPECT_EQ(t.Pair("a", "b")->gbyte_per_s, 1.5);
  EXPECT_EQ(t.Pair("a", "b")->latency_us, 12);
}

TEST(LinkTable, NamesThePairsItHasNotMeasured) {
  const LinkTable t = TwoLeaves();
  const auto missing = t.Missing({"node1", "node2", "node3"}, 4);
  EXPECT_EQ(missing.count, 1u);
  ASSERT_EQ(missing.first.size(), 1u);
  EXPECT_EQ(missing.first[0], std::make_pair(std::string("node2"), std::string("node3")));
  // Pairs of hosts the table does not know at all count; the list stops at its limit.
  const auto more = t.Missing({"node1", "node2", "node3", "node9", "node8"}, 2);
  EXPECT_EQ(more.count, 10u - t.pairs.size());
  ASSERT_EQ(more.first.size(), 2u);
  EXPECT_EQ(more.first[0], std::make_pair(std::string("node1"), std::string("node9")));
  EXPECT_EQ(more.first[1], std::make_pair(std::string("node1"), std::string("node8")));
  EXPECT_EQ(LinkTable().Missing({"a", "b", "c"}, 1).count, 3u);
  EXPECT_EQ(t.Missing({"node1"}, 4).count, 0u);
}

// A plan over many hosts asks about millions of pairs: the answer is counted
// from the table, with only the listed pairs built.
TEST(LinkTable, CountsTheMissingPairsOfManyHostsWithoutListingThem) {
  std::vector<std::string> hosts;
  for (int h = 0; h < 20000; ++h) hosts.push_back("n" + std::to_string(h));
  LinkTable t;
  t.AddPair("n0", "n1", {1, 1});
  t.AddPair("n5", "n7", {1, 1});
  t.AddPair("n5", "elsewhere", {1, 1});
  const auto missing = t.Missing(hosts, 3);
  EXPECT_EQ(missing.count, 20000u * 19999u / 2 - 2);
  ASSERT_EQ(missing.first.size(), 3u);
  EXPECT_EQ(missing.first[0].second, "n2");  // n0-n1 is measured
}

TEST(LinkTable, NewerMeasurementsReplaceOlderOnes) {
  LinkTable old = TwoLeaves();
  LinkTable newer;
  newer.AddPair("node1", "node2", {0.02, 90});
  old.MergeFrom(newer);
  EXPECT_EQ(old.Pair("node1", "node2")->gbyte_per_s, 0.02);  // replaced, not the slower of the two
  EXPECT_EQ(old.leaves.size(), 2u);                           // newer inferred none: kept
  newer.leaves = {{"all", {"node1", "node2", "node3", "node4"}, 0}};
  old.MergeFrom(newer);
  EXPECT_EQ(old.leaves.size(), 1u);
}

TEST(LinkTable, LeavesBecomeATreeUnderOneSpine) {
  auto tree = LeavesAsNetworkTree(TwoLeaves());
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  EXPECT_EQ(tree->SwitchesBetween("node1", "node2"), 1);
  EXPECT_EQ(tree->SwitchesBetween("node1", "node3"), 3);
  EXPECT_TRUE(LeavesAsNetworkTree(LinkTable())->empty());
}

TEST(LinkTable, BadFilesSayWhereAndWhat) {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {R"({"format": "other/v1"})", "links.json:1: format \"other/v1\" is not gpulaunch-links/v1"},
      {"{\"format\": \"gpulaunch-links/v1\", \"measured_at\": \"\",\n \"pairs\": [{\"hosts\": [\"a\"], "
       "\"gbyte_per_s\": 1, \"latency_us\": 1}], \"shared_memory\": [], \"leaves\": []}",
       "links.json:2: \"hosts\" must name two different hosts"},
      {"{\"format\": \"gpulaunch-links/v1\", \"measured_at\": \"\",\n \"pairs\": [{\"hosts\": [\"a\", \"b\"], "
       "\"gbyte_per_s\": -1, \"latency_us\": 1}], \"shared_memory\": [], \"leaves\": []}",
       "\"gbyte_per_s\" is -1; give GB/s from 0 to"},
      {"{\"format\": \"gpulaunch-links/v1\", \"measured_at\": \"\", \"pairs\": [], \"shared_memory\": [],\n"
       " \"leaves\": [{\"name\": \"l1\", \"hosts\": [\"a\"], \"uplink_gbyte_per_s\": 1},\n"
       " {\"name\": \"l2\", \"hosts\": [\"a\"], \"uplink_gbyte_per_s\": 1}]}",
       "links.json:3: host a is under two leaves"},
  };
  for (const Case& c : cases) {
    auto t = ParseLinkTable(c.text, "links.json");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(t.status().message().find(c.says), std::string::npos) << t.status().message();
  }
}

TEST(LinkTable, AMissingFileIsNoTableAndAnEmptyOneIsAnError) {
  auto none = ReadLinkTableIfPresent("/nonexistent/links.json");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_FALSE(ReadLinkTableIfPresent("/dev/null").ok());
}

}  // namespace
}  // namespace gpulaunch
