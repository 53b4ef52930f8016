#include "slurm/node_health.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

TEST(HealthCheck, GresAndProblems) {
  EXPECT_EQ(GpusInGres("gpu:4"), 4);
  EXPECT_EQ(GpusInGres("gpu:a100:8(S:0-1)"), 8);
  EXPECT_EQ(GpusInGres("nic:1,gpu:2"), 2);
  EXPECT_FALSE(GpusInGres("(null)"));
  HostTopology host;
  host.gpus.resize(2);
  EXPECT_TRUE(HealthProblems(host, {2}, {{"mlx5_0:1", "4: ACTIVE"}}).empty());
  EXPECT_EQ(HealthProblems(host, {4}, {}), (std::vector<std::string>{"2 of 4 GPUs found"}));
  EXPECT_EQ(HealthProblems(host, {std::nullopt}, {{"mlx5_1:1", "1: DOWN\n"}}),
            (std::vector<std::string>{"NIC mlx5_1:1 port is 1: DOWN"}));
}

}  // namespace
}  // namespace gpulaunch
