#include "slurm/slurm_allocation.h"

#include <gtest/gtest.h>

#include "tests/testing/synthetic_host.h"

namespace gpulaunch {
namespace {

// As `scontrol show job -d` (Slurm 22.05) prints a job on a shared node
// (node1: another job holds core 0 and GPUs 0-1) and on node[2-3].
constexpr char kJobDetail[] = R"(JobId=7 JobName=interactive
   NumNodes=3 NumCPUs=5 NumTasks=3 CPUs/Task=1 ReqB:S:C:T=0:0:*:*
   JOB_GRES=gpu:6
     Nodes=node1 CPU_IDs=1 Mem=0 GRES=gpu:2(IDX:2-3)
     Nodes=node[2-3] CPU_IDs=0-1 Mem=0 GRES=gpu:a100:2(IDX:0,3),nic:1(IDX:0)
   MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0
)";

TEST(ScontrolJobDetail, SharesPerNodeWithHostlistsAndTypedGres) {
  auto shares = ParseScontrolJobDetail(kJobDetail, "scontrol");
  ASSERT_TRUE(shares.ok()) << shares.status().message();
  ASSERT_EQ(shares->size(), 3u);
  EXPECT_EQ(shares->at("node1").cpu_ids, (std::vector<int>{1}));
  EXPECT_EQ(shares->at("node1").gpu_indices, (std::vector<int>{2, 3}));
  EXPECT_EQ(shares->at("node3").cpu_ids, (std::vector<int>{0, 1}));
  EXPECT_EQ(shares->at("node3").gpu_indices, (std::vector<int>{0, 3}));
}

TEST(ScontrolJobDetail, NoGpuGresMeansNoGpus) {
  auto shares = ParseScontrolJobDetail("     Nodes=n1 CPU_IDs=0-3 Mem=0 GRES=\n", "x");
  ASSERT_TRUE(shares.ok());
  EXPECT_FALSE(shares->at("n1").gpu_indices.has_value());
  auto old_style = ParseScontrolJobDetail("Nodes=n1 CPU_IDs=0 Mem=0 GRES_IDX=gpu(IDX:1)\n", "x");
  ASSERT_TRUE(old_style.ok());
  EXPECT_EQ(old_style->at("n1").gpu_indices, (std::vector<int>{1}));
}

TEST(ScontrolJobDetail, MalformedInputNamesTheLine) {
  auto bad_cpus = ParseScontrolJobDetail("JobId=1\n  Nodes=n1 CPU_IDs=3-1 Mem=0\n", "scontrol show job -d 1");
  ASSERT_FALSE(bad_cpus.ok());
  EXPECT_NE(bad_cpus.status().message().find("scontrol show job -d 1:2: 'CPU_IDs=3-1'"), std::string::npos)
      << bad_cpus.status().message();
  auto bad_idx = ParseScontrolJobDetail("Nodes=n1 CPU_IDs=0 GRES=gpu:2(IDX:x)\n", "d");
  ASSERT_FALSE(bad_idx.ok());
  EXPECT_NE(bad_idx.status().message().find("d:1: GRES 'gpu:2(IDX:x)'"), std::string::npos);
  auto bad_hosts = ParseScontrolJobDetail("Nodes=n[1-x] CPU_IDs=0\n", "d");
  EXPECT_FALSE(bad_hosts.ok());
  auto no_cpus = ParseScontrolJobDetail("Nodes=n1 Mem=0\n", "d");
  ASSERT_FALSE(no_cpus.ok());
  EXPECT_NE(no_cpus.status().message().find("no CPU_IDs="), std::string::npos);
  auto empty = ParseScontrolJobDetail("JobId=1 JobName=x\n", "d");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("scontrol show job -d"), std::string::npos);
}

TEST(ScontrolNodes, GpuGresNodes) {
  const auto nodes = ParseNodesWithGpuGres(
      "NodeName=node1 Arch=x86_64 CoresPerSocket=2 Gres=gpu:4 NodeAddr=10.0.0.1\n"
      "NodeName=node2 Arch=x86_64 Gres=nic:1,gpu:a100:8(S:0-1) NodeAddr=10.0.0.2\n"
      "NodeName=node3 Arch=x86_64 Gres=(null) NodeAddr=10.0.0.3\n"
      "NodeName=node4 Arch=x86_64 Gres=gpumem:8 NodeAddr=10.0.0.4\n");
  EXPECT_EQ(nodes, (std::set<std::string>{"node1", "node2"}));
}

TEST(NarrowToSlurmShare, KeepsOnlyTheJobsCoresAndGpus) {
  // 2 NUMA nodes x 4 cores x 2 threads, 2 GPUs each: abstract CPU id = core * 2 + thread.
  const HostTopology host = testing::SyntheticHost(2, 4, 2, 2, 0);
  SlurmNodeShare share{{6, 7, 8, 9, 11}, std::vector<int>{1, 2}};
  auto n = NarrowToSlurmShare(host, share, true, "node1");
  ASSERT_TRUE(n.ok()) << n.status().message();
  ASSERT_EQ(n->topology.cores.size(), 3u);  // cores 3, 4 and half of 5
  EXPECT_EQ(n->topology.cores[0].logical_index, 3);
  EXPECT_EQ(n->topology.cores[0].pus, host.cores[3].pus);
  EXPECT_EQ(n->topology.cores[2].pus, (std::vector<int>{host.cores[5].pus[1]}));
  EXPECT_EQ(n->gpu_busy, (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(n->topology.numa_nodes[0].pus.size(), 2u);

  // No GPU in the share: all busy when Slurm hands out GPUs, all usable when not.
  SlurmNodeShare cpus_only{{0, 1}, std::nullopt};
  EXPECT_EQ(NarrowToSlurmShare(host, cpus_only, true, "n")->gpu_busy, std::vector<bool>(4, true));
  EXPECT_TRUE(NarrowToSlurmShare(host, cpus_only, false, "n")->gpu_busy.empty());

  auto outside = NarrowToSlurmShare(host, SlurmNodeShare{{64}, std::nullopt}, true, "node9");
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("slurmd -C"), std::string::npos);
}

// --gres=gpu:2 with one task per node gave the rank one GPU and left the
// other idle: the allocation's GPUs go to its tasks.
TEST(GpusPerRankInAllocation, FromTheTaskRequestOrTheNodesShare) {
  auto host = [](const std::string& name, int gpus, int tasks) {
    ClusterHost h;
    h.name = name;
    h.topology.Mutable().gpus.resize(gpus);
    for (int g = 0; g < gpus; ++g) h.topology.Mutable().gpus[g].index = g;
    h.slots = tasks;
    return h;
  };
  auto one = GpusPerRankInAllocation(std::nullopt, {host("node1", 2, 1), host("node2", 4, 1)});
  ASSERT_TRUE(one);
  EXPECT_EQ(one->per_rank, 2);
  EXPECT_EQ(one->source, "the allocation's GPUs shared over its tasks (node1: 2 GPUs for 1 task)");
  EXPECT_EQ(GpusPerRankInAllocation(std::nullopt, {host("node1", 8, 2)})->per_rank, 4);
  EXPECT_FALSE(GpusPerRankInAllocation(std::nullopt, {host("node1", 4, 4)}));   // one each: the default
  EXPECT_FALSE(GpusPerRankInAllocation(std::nullopt, {host("node1", 4, 1), host("node2", 1, 1)}));
  EXPECT_FALSE(GpusPerRankInAllocation(std::nullopt, {host("node1", 0, 1)}));
  auto asked = GpusPerRankInAllocation(std::string("a100:3"), {host("node1", 8, 2)});
  ASSERT_TRUE(asked);
  EXPECT_EQ(asked->per_rank, 3);
  EXPECT_EQ(asked->source, "SLURM_GPUS_PER_TASK=a100:3");
  EXPECT_EQ(GpusPerRankInAllocation(std::string("2"), {})->per_rank, 2);
}

// Without `scontrol show topology`, the tree comes from where each host's
// steps are told they are (values as Slurm 22.05's topology/tree sets them
// on the rig: spine over leaf0 and leaf1).
TEST(TreeFromTopologyAddrs, BuildsTheTreeFromEachHostsAddress) {
  auto host = [](const std::string& name, const std::string& addr, const std::string& pattern) {
    ClusterHost h;
    h.name = name;
    h.topology.Mutable().slurm_topology_addr = addr;
    h.topology.Mutable().slurm_topology_pattern = pattern;
    return h;
  };
  const std::string p = "switch.switch.node";
  auto tree = TreeFromTopologyAddrs({host("node1", "spine.leaf0.node1", p), host("node2", "spine.leaf0.node2", p),
                                     host("node3", "spine.leaf1.node3", p), host("node4", "spine.leaf1.node4", p)});
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  ASSERT_TRUE(*tree);
  const NetworkTree& t = **tree;
  EXPECT_EQ(t.switches().size(), 3u);
  ASSERT_TRUE(t.LeafOf("node3"));
  EXPECT_EQ(t.LeafOf("node3")->name, "leaf1");
  EXPECT_EQ(t.LeafOf("node1")->parent, "spine");
  EXPECT_EQ(t.PathOf("node4").size(), 2u);
  EXPECT_FALSE(*TreeFromTopologyAddrs({host("a", "", "")}));  // no addresses: no tree
  // Without topology/tree Slurm sets the node alone: no tree, no error.
  auto alone = TreeFromTopologyAddrs({host("vm", "vm", "node")});
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  EXPECT_FALSE(*alone);
  EXPECT_NE(TreeFromTopologyAddrs({host("a", "leaf0.a.x", "switch.node.node")}).status().message().find("word 2 is not a switch name"),
            std::string::npos);
  EXPECT_NE(TreeFromTopologyAddrs({host("a", "leaf0.a", p)}).status().message().find("as many as the pattern"),
            std::string::npos);
  const auto split = TreeFromTopologyAddrs({host("a", "s1.leaf0.a", p), host("b", "s2.leaf0.b", p)});
  EXPECT_NE(split.status().message().find("switch leaf0 is below both s1 and s2"), std::string::npos)
      << split.status().message();
}

}  // namespace
}  // namespace gpulaunch
