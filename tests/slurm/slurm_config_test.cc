#include "slurm/slurm_config.h"

#include <gtest/gtest.h>

#include "common/network_tree.h"
#include "common/synthetic_cluster.h"

namespace gpulaunch {
namespace {

TEST(SlurmConfig, TopologyFromTheTreeOrOneSwitch) {
  auto c = *MakeSyntheticCluster("switch:2 node:2 gpu:4");
  EXPECT_EQ(SlurmTopologyConf(c),
            "SwitchName=leaf01 Nodes=node[0001-0002]\nSwitchName=leaf02 Nodes=node[0003-0004]\n"
            "SwitchName=spine Switches=leaf[01-02]\n");
  c.network = NetworkTree();
  EXPECT_EQ(SlurmTopologyConf(c), "SwitchName=switch0 Nodes=node[0001-0004]\n");
  // What it writes, Slurm's own syntax, reads back.
  EXPECT_TRUE(ParseTopologyConf(SlurmTopologyConf(*MakeSyntheticCluster("pod:2 switch:2 node:2")), "gen").ok());
}

TEST(SlurmConfig, GresGroupsGpusWithTheCoresOfTheirNumaNode) {
  const auto c = *MakeSyntheticCluster("node:1 gpu:4 numa:2 core:8");
  EXPECT_EQ(SlurmGresConf(c),
            "NodeName=node0001 Name=gpu File=/dev/nvidia[0-1] Cores=0-7\n"
            "NodeName=node0001 Name=gpu File=/dev/nvidia[2-3] Cores=8-15\n");
  EXPECT_EQ(SlurmGresConf(*MakeSyntheticCluster("node:2")), "");  // CPU-only hosts: no gres
}

}  // namespace
}  // namespace gpulaunch
