#include "launcher/check/node_table.h"

#include <gtest/gtest.h>

#include "common/json.h"
#include "launcher/core/options.h"

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
  EXPECT_NE(table.find("node1            online       6  NVIDIA A100-SXM4-80GB    80.0 GiB   -          -             16  "
                       "2023-11-14T22:13:20Z"),
            std::string::npos) << table;
  EXPECT_NE(table.find("node1            online       2  NVIDIA T4                16.0 GiB"), std::string::npos) << table;
  EXPECT_NE(table.find("node2            down         0  -                        -          -          -              0  never"
                       "                no answer within --budget 3 s"),
            std::string::npos) << table;
  auto json = ParseJson(RenderNodeJson(rows), "nodes");
  ASSERT_TRUE(json.ok());
  const auto& hosts = json->Find("hosts")->items();
  EXPECT_EQ(hosts[0].Find("gpus")->items()[0].Find("memory_bytes")->AsNumber(), 80.0 * (1ull << 30));
  EXPECT_EQ(hosts[1].Find("state")->AsString(), "down");
  EXPECT_TRUE(hosts[1].Find("answered_at")->is(Json::Type::kNull));
}

TEST(NodeTable, GpuMemoryInUseAndFreeFromNvml) {
  HostTopology t = EightGpus();
  for (int i = 0; i < 8; ++i) t.gpus[i].pci_bus_id = "0000:0" + std::to_string(i) + ":00.0";
  t.gpus[7].memory_bytes = 0;  // hwloc did not know it: NVML's total fills in
  GpuMemoryByBus memory;
  for (int i = 0; i < 8; ++i) memory[t.gpus[i].pci_bus_id] = {i < 6 ? 80ull << 30 : 16ull << 30, static_cast<uint64_t>(i) << 30};
  const std::string comment = FormatGpuMemoryComment(memory);
  EXPECT_EQ(ParseGpuMemoryComment("<topology/>\n" + comment + "\n").size(), 8u);
  EXPECT_TRUE(ParseGpuMemoryComment("<!-- gpulaunch-gpu-memory: a=1/2 b=x/1 c -->").empty());  // used > total, junk
  const NodeRow row = RowFromTopology("node1", t, std::chrono::system_clock::now(), ParseGpuMemoryComment(comment));
  ASSERT_EQ(row.gpus.size(), 2u);  // the T4 with an unknown hwloc total joins the other one
  ASSERT_TRUE(row.gpus[0].used_bytes);
  EXPECT_EQ(*row.gpus[0].used_bytes, (0ull + 1 + 2 + 3 + 4 + 5) << 30);
  EXPECT_EQ(*row.gpus[1].used_bytes, 13ull << 30);
  const std::string table = RenderNodeTable({row});
  EXPECT_NE(table.find("NVIDIA A100-SXM4-80GB    80.0 GiB   15.0 GiB   465.0 GiB"), std::string::npos) << table;
  EXPECT_NE(table.find("NVIDIA T4                16.0 GiB   13.0 GiB   19.0 GiB"), std::string::npos) << table;
  auto json = ParseJson(RenderNodeJson({row}), "nodes");
  ASSERT_TRUE(json.ok());
  const Json& a100 = json->Find("hosts")->items()[0].Find("gpus")->items()[0];
  EXPECT_EQ(a100.Find("memory_used_bytes")->AsNumber(), 15.0 * (1ull << 30));
  EXPECT_EQ(a100.Find("memory_free_bytes")->AsNumber(), 465.0 * (1ull << 30));
  // One GPU without NVML figures: the group's use is unknown, not understated.
  memory.erase(t.gpus[0].pci_bus_id);
  EXPECT_FALSE(RowFromTopology("node1", t, std::chrono::system_clock::now(), memory).gpus[0].used_bytes);
}

TEST(NodeTable, WatchMarksAHostThatMissesRoundsSuspectThenDown) {
  const auto t0 = std::chrono::system_clock::now();
  std::map<std::string, NodeHistory> history;
  std::vector<NodeRow> rows = {RowFromTopology("node1", EightGpus(), t0), DownRow("node2", "no answer")};
  ApplyHistory(rows, history);
  EXPECT_EQ(rows[1].state, "down");  // never answered
  for (int round = 1; round <= 3; ++round) {
    rows = {DownRow("node1", "no answer within --budget 3 s"), DownRow("node2", "no answer")};
    ApplyHistory(rows, history);
    EXPECT_EQ(rows[0].state, round < kRoundsBeforeDown ? "suspect" : "down") << round;
    EXPECT_EQ(rows[0].answered, t0);  // when it last answered
    EXPECT_EQ(rows[1].state, "down");
  }
  EXPECT_EQ(rows[0].reason, "missed 3 rounds in a row (no answer within --budget 3 s)");
  rows = {DownRow("node1", "no answer")};
  history["node1"].missed = 0;
  ApplyHistory(rows, history);
  EXPECT_EQ(rows[0].reason, "missed 1 round (no answer)");
  rows = {RowFromTopology("node1", EightGpus(), t0)};  // back: online, count reset
  ApplyHistory(rows, history);
  EXPECT_EQ(rows[0].state, "online");
  EXPECT_EQ(history["node1"].missed, 0);
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
  auto count = ParseNodesCommandLine({"--count", "2"});
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.status().message().find("--count needs --watch"), std::string::npos);
  ASSERT_TRUE(ParseNodesCommandLine({"--watch", "1", "--count", "2"}).ok());
  auto ok = ParseNodesCommandLine({"-H", "node[1-4]", "--budget", "3", "--format", "json"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->budget_s, 3);
}

}  // namespace
}  // namespace gpulaunch
