#include "launcher/check/health_check.h"
#include "launcher/submit_command.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

TEST(Submit, ParsesItsOwnOptionsAndPassesTheRestOn) {
  auto o = ParseSubmitCommandLine({"-N", "4", "--gpus-per-node", "4", "-n", "16", "--time", "10:00", "--layout",
                                   "tp=4", "--tag", "--", "./train", "--lr", "0.1"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->nodes, 4);
  EXPECT_EQ(o->ranks, 16);
  EXPECT_EQ(o->launch, (std::vector<std::string>{"--layout", "tp=4", "--tag", "--", "./train", "--lr", "0.1"}));
  const std::string script = RenderBatchScript(*o, "/opt/gl/bin/gpulaunch");
  EXPECT_EQ(script,
            "#!/bin/bash\n# Written by gpulaunch submit.\n#SBATCH --job-name=gpulaunch\n#SBATCH --nodes=4\n"
            "#SBATCH --ntasks=16\n#SBATCH --gpus-per-node=4\n#SBATCH --time=10:00\n"
            "exec /opt/gl/bin/gpulaunch --layout tp=4 --tag -- ./train --lr 0.1\n");
}

TEST(Submit, QuotesWordsForTheShell) {
  auto o = ParseSubmitCommandLine({"-N", "1", "./job", "a b", "it's", "$HOME"});
  ASSERT_TRUE(o.ok());
  EXPECT_NE(RenderBatchScript(*o, "/g").find("exec /g ./job 'a b' 'it'\\''s' '$HOME'\n"), std::string::npos);
}

TEST(Submit, BadInput) {
  EXPECT_FALSE(ParseSubmitCommandLine({"./job"}).ok());               // no -N
  EXPECT_FALSE(ParseSubmitCommandLine({"-N", "0", "./job"}).ok());
  EXPECT_FALSE(ParseSubmitCommandLine({"-N", "2"}).ok());             // no program
  EXPECT_FALSE(ParseSubmitCommandLine({"-N", "2", "--time"}).ok());   // missing value
  EXPECT_FALSE(ParseSubmitCommandLine({"-N", "2", "-J", "a\nb", "./job"}).ok());
}

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
