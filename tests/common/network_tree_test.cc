#include "common/network_tree.h"

#include <gtest/gtest.h>

#include "common/hostlist.h"

namespace gpulaunch {
namespace {

TEST(NetworkTree, ParsesTheSlurmManPageTree) {
  auto t = ReadTopologyConf(std::string(GL_TEST_DATA) + "/network/slurm-manpage-tree.topology.conf");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->switches().size(), 4u);
  EXPECT_EQ(t->LeafOf("dev7")->name, "s1");
  EXPECT_EQ(t->SwitchesBetween("dev0", "dev5"), 1);
  EXPECT_EQ(t->SwitchesBetween("dev0", "dev17"), 3);
  EXPECT_EQ(t->SwitchesBetween("dev3", "dev3"), 0);
  EXPECT_EQ(t->SwitchesBetween("dev3", "nowhere"), -1);
  EXPECT_EQ(t->CommonAncestor({"dev6", "dev11"})->name, "s1");
  EXPECT_EQ(t->CommonAncestor({"dev6", "dev12"})->name, "s3");
  EXPECT_EQ(t->switches()[3].level, 1);
}

TEST(NetworkTree, WritesWhatItReads) {
  auto t = ReadTopologyConf(std::string(GL_TEST_DATA) + "/network/two-leaf.topology.conf");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const std::string text = WriteTopologyConf(*t);
  EXPECT_EQ(text,
            "SwitchName=leaf0 Nodes=node[1-2] LinkSpeed=100\nSwitchName=leaf1 Nodes=node[3-4]\n"
            "SwitchName=spine Switches=leaf[0-1]\n");
  auto again = ParseTopologyConf(text, "written");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(WriteTopologyConf(*again), text);
}

TEST(NetworkTree, MalformedInputNamesFileAndLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"SwitchName=a Nodes=n1\nSwitchName=b Nodes=n[1-\n", "t.conf:2: malformed hostlist"},
      {"SwitchName=a Nodes=n1 Speed=3\n", "t.conf:1: unknown key 'Speed'"},
      {"Nodes=n1\n", "t.conf:1: a line must start with SwitchName"},
      {"SwitchName=a\n", "t.conf:1: switch 'a' has neither"},
      {"SwitchName=a Nodes=n1 LinkSpeed=fast\n", "t.conf:1: LinkSpeed must be"},
      {"BlockName=b1 Nodes=n[1-4]\n", "t.conf:1: BlockName (topology/block or topology/ring) is not supported"},
      {"SwitchName=a Nodes=n1\nSwitchName=a Nodes=n2\n", "switch 'a' is declared twice"},
      {"SwitchName=s Switches=x\n", "unknown switch 'x'"},
      {"SwitchName=a Nodes=n1\nSwitchName=b Nodes=n1\n", "host 'n1' is below both 'a' and 'b'"},
      {"SwitchName=a Switches=b\nSwitchName=b Switches=a\n", "cycle"},
      {"SwitchName=a Nodes=n1 garbage\n", "t.conf:1: 'garbage' is not KEY=VALUE"},
      // Switch names reach every rank inside the slot table's rows.
      {"SwitchName=a Nodes=n1\nSwitchName=le/af Nodes=n2\n", "t.conf:2: switch name 'le/af' has '/'"},
      {"SwitchName=a|b Nodes=n1\n", "t.conf:1: switch name 'a|b' has '|'"},
  };
  for (const auto& [text, want] : cases) {
    auto t = ParseTopologyConf(text, "t.conf");
    ASSERT_FALSE(t.ok()) << text;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(want), std::string::npos) << t.status().message();
  }
}

TEST(NetworkTree, ParsesScontrolShowTopology) {
  const char* out =
      "SwitchName=leaf0 Level=0 LinkSpeed=100 Nodes=node[1-2]\n"
      "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=node[3-4]\n"
      "SwitchName=spine Level=1 LinkSpeed=1 Nodes=node[1-4] Switches=leaf[0-1]\n";
  auto t = ParseScontrolTopology(out, "scontrol");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->SwitchesBetween("node1", "node2"), 1);
  EXPECT_EQ(t->SwitchesBetween("node1", "node4"), 3);
  EXPECT_EQ(t->LeafOf("node3")->name, "leaf1");
}

TEST(Hostlist, CompressRoundTrips) {
  const std::vector<std::vector<std::string>> cases = {
      {"node01", "node02", "node03", "node07"},
      {"n9", "n10", "n11"},
      {"a", "b1", "b2", "c"},
      {"x3", "x1", "x2"},
      {"r1n08", "r1n09", "r1n10"},
  };
  EXPECT_EQ(CompressHostlist(cases[0]), "node[01-03,07]");
  for (const auto& hosts : cases) {
    auto back = ExpandHostlist(CompressHostlist(hosts));
    ASSERT_TRUE(back.ok()) << CompressHostlist(hosts);
    EXPECT_EQ(*back, hosts) << CompressHostlist(hosts);
  }
}

}  // namespace
}  // namespace gpulaunch
