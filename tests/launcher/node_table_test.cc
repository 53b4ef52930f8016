#include "launcher/node_table.h"

#include <gtest/gtest.h>

#include "common/json.h"
#include "launcher/options.h"

namespace gpulaunch {
namespace {

HostTopology EightGpus() {
  HostTopology t;
  t.cores.resize(16);
  for (int i = 0; i < 8; ++i) {
    Gpu g;
    g.index = i;
    g.model = i < 6 ? "NVIDIA A100-SXM4-80GB" : "NVIDIA T4";
    g.memory_bytes = i < 6 ? 80ull << 30 : 16ull << 30;
    t.gpus.push_back(g);
  }
  return t;
}

TEST(NodeTable, OneRowPerHostAndGpuModel) {
  const auto when = std::chrono::system_clock::time_point{} + std::chrono::seconds(1'700'000'000);
  std::vector<NodeRow> rows = {RowFromTopology("node1", EightGpus(), when),
                               DownRow("node2", "no answer within --budget 3 s")};
  ASSERT_EQ(rows[0].gpus.size(), 2u);
  EXPECT_EQ(rows[0].gpus[0].count, 6);
  EXPECT_EQ(rows[0].gpus[1].count, 2);
  const std::string table = RenderNodeTable(rows);
  EXPECT_NE(table.find("node1            online       6  NVIDIA A100-SXM4-80GB    80.0 GiB      16  2023-11-14T22:13:20Z"),
            std::string::npos) << table;
  EXPECT_NE(table.find("node1            online       2  NVIDIA T4                16.0 GiB"), std::string::npos) << table;
  EXPECT_NE(table.find("node2            down         0  -                        -              0  never"
                       "                no answer within --budget 3 s"),
            std::string::npos) << table;
  auto json = ParseJson(RenderNodeJson(rows), "nodes");
  ASSERT_TRUE(json.ok());
  const auto& hosts = json->Find("hosts")->items();
  EXPECT_EQ(hosts[0].Find("gpus")->items()[0].Find("memory_bytes")->AsNumber(), 80.0 * (1ull << 30));
  EXPECT_EQ(hosts[1].Find("state")->AsString(), "down");
  EXPECT_TRUE(hosts[1].Find("answered_at")->is(Json::Type::kNull));
}

TEST(NodeTable, SlurmDrainAndDownStatesWithTheirReasons) {
  const auto when = std::chrono::system_clock::now();
  std::vector<NodeRow> rows = {RowFromTopology("node1", EightGpus(), when), RowFromTopology("node2", EightGpus(), when),
                               RowFromTopology("node3", EightGpus(), when)};
  ApplySlurmStates(rows,
                   "NodeName=node1 Arch=x86_64 CoresPerSocket=2 State=IDLE ThreadsPerCore=1\n"
                   "NodeName=node2 Arch=x86_64 State=IDLE+DRAIN Reason=gpulaunch: 0 of 4 GPUs found [root@2026-11-30T10:00:00] "
                   "Comment=(null)\n"
                   "NodeName=node3 State=DOWN+NOT_RESPONDING Reason=Not responding [slurm@2026-11-30T10:01:00]\n");
  EXPECT_EQ(rows[0].state, "online");
  EXPECT_EQ(rows[1].state, "drained");
  EXPECT_EQ(rows[1].reason, "slurm: gpulaunch: 0 of 4 GPUs found [root@2026-11-30T10:00:00]");
  EXPECT_EQ(rows[2].state, "down");
  EXPECT_EQ(rows[2].reason, "slurm: Not responding [slurm@2026-11-30T10:01:00]");
}

TEST(NodeTable, BadCommandLinesAreUsageErrors) {
  EXPECT_FALSE(ParseNodesCommandLine({"--format", "xml"}).ok());
  EXPECT_FALSE(ParseNodesCommandLine({"--budget", "0"}).ok());
  EXPECT_FALSE(ParseNodesCommandLine({"-H", "a", "--hostfile", "f"}).ok());
  EXPECT_FALSE(ParseNodesCommandLine({"--frobnicate"}).ok());
  auto ok = ParseNodesCommandLine({"-H", "node[1-4]", "--budget", "3", "--format", "json"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->budget_s, 3);
}

}  // namespace
}  // namespace gpulaunch
