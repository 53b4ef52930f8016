// `gpulaunch sim` end to end: the real binary on the bundled traces.
#include <gtest/gtest.h>

#include "common/json.h"
#include "tests/e2e/launch_helpers.h"

namespace gpulaunch {
namespace {

const std::string kTiresias = std::string(GL_TEST_DATA) + "/traces/tiresias/60_job.csv";

TEST(Sim, ComparesThePolicyWithBothBaselinesInOneRun) {
  const CapturedRun run = Launch({"sim", "--trace", kTiresias, "--cluster", "leaf:2 node:2 gpu:4", "--format", "json"});
  ASSERT_EQ(ExitCode(run), 0) << run.err;
  auto json = ParseJson(run.out, "sim output");
  ASSERT_TRUE(json.ok()) << json.status().message();
  const auto& policies = json->Find("policies")->items();
  ASSERT_EQ(policies.size(), 3u);
  EXPECT_EQ(policies[0].Find("policy")->AsString(), "topology");
  EXPECT_EQ(policies[1].Find("policy")->AsString(), "fifo-first-fit");
  EXPECT_EQ(policies[2].Find("policy")->AsString(), "best-fit");
  for (const Json& p : policies) {
    EXPECT_EQ(p.Find("jobs")->AsNumber(), 60);
    EXPECT_EQ(p.Find("jct_s")->items().size(), 60u);
    EXPECT_GT(p.Find("avg_jct_s")->AsNumber(), 0);
    EXPECT_FALSE(p.Find("busy")->items().empty());
  }
  EXPECT_EQ(json->Find("gpus")->AsNumber(), 16);
}

TEST(Sim, TableWithTeamsAndQuotas) {
  const CapturedRun run = Launch({"sim", "--trace", kTiresias, "--cluster", "leaf:1 node:2 gpu:4", "--teams", "2",
                                  "--quota", "a:2/4/4,b:2/4/4", "--policy", "topology", "--checkpoint", "600"});
  ASSERT_EQ(ExitCode(run), 0) << run.err;
  EXPECT_NE(run.out.find("teams: 2 round-robin, quotas a:2/4/4,b:2/4/4; preempted jobs resume from a checkpoint every "
                         "600 s"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("MIGRATE"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\ntopology "), std::string::npos) << run.out;
}

TEST(Sim, BadInputIsAUsageErrorThatSaysWhere) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const Case cases[] = {
      {{"sim", "--cluster", "node:2"}, "sim needs --trace FILE and --cluster SPEC"},
      {{"sim", "--trace", kTiresias, "--cluster", "rack:2"}, "is not leaf:N, node:N, gpu:N"},
      {{"sim", "--trace", kTiresias, "--cluster", "node:2", "--policy", "lottery"}, "unknown policy 'lottery'"},
      {{"sim", "--trace", kTiresias, "--cluster", "node:2", "--quota", "a:1/2/3"}, "--quota needs --teams N"},
      {{"sim", "--trace", "/nonexistent.csv", "--cluster", "node:2"}, "/nonexistent.csv"},
      {{"sim", "--trace", kTiresias, "--cluster", "node:2", "--checkpoint", "often"}, "--checkpoint often: give a whole number"},
  };
  for (const Case& c : cases) {
    const CapturedRun run = Launch(c.args);
    EXPECT_EQ(ExitCode(run), 2) << c.says << "\n" << run.err;
    EXPECT_NE(run.err.find(c.says), std::string::npos) << run.err;
  }
}

}  // namespace
}  // namespace gpulaunch
