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

TEST(Sim, QueueTimeoutsTakeJobsOutOfTheFigures) {
  const CapturedRun run = Launch({"sim", "--trace", kTiresias, "--cluster", "leaf:1 node:1 gpu:8", "--max-wait", "1",
                                  "--policy", "fifo-first-fit", "--format", "json"});
  ASSERT_EQ(ExitCode(run), 0) << run.err;
  auto json = ParseJson(run.out, "sim output");
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ(json->Find("max_wait_s")->AsNumber(), 3600);
  const Json& p = json->Find("policies")->items()[0];
  const int timed_out = static_cast<int>(p.Find("timed_out")->AsNumber());
  EXPECT_GT(timed_out, 0);  // one 8-GPU host, FIFO: some jobs wait more than an hour
  EXPECT_EQ(static_cast<int>(p.Find("jct_s")->items().size()), 60 - timed_out);
  EXPECT_LE(p.Find("max_wait_s")->AsNumber(), 3600);
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

// A synthetic trace with users, two priority classes, teams with quotas and
// templates, on two kinds of hosts, with a reservation: every policy keeps
// every hard rule (the simulator's audit after each pass finds nothing), and
// the template and reservation are really in play.
TEST(Sim, SyntheticTraceWithUsersTemplatesAndAReservationBreaksNoRule) {
  const std::vector<std::string> args = {"sim", "--synthetic", "jobs:600 days:5 seed:3 teams:3 users:12 high:0.2 templated:0.3", "--templates",
                                          "big:gpus=16,mem=80,link=200,affinity=leaf;safe:gpus=16,affinity=spread:2;infer:gpus=1,mem=80",
                                          "--cluster", "leaf:2 node:4 gpu:8 mem:80 link:200 + leaf:1 node:4 gpu:8 mem:40", "--quota",
                                          "a:8/32/32,b:8/32/32,c:8/32/32", "--checkpoint", "1800", "--reserve", "maint:b:2@24-48", "--fail",
                                          "s2n1@30-40", "--format", "json"};
  const CapturedRun run = Launch(args);
  ASSERT_EQ(ExitCode(run), 0) << run.err;
  auto json = ParseJson(run.out, "sim output");
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ(json->Find("gpus")->AsNumber(), 96);
  EXPECT_EQ(json->Find("reservations")->AsString(), "maint:b:2@24-48");
  EXPECT_EQ(json->Find("failures")->AsString(), "s2n1@30-40");
  for (const Json& p : json->Find("policies")->items()) {
    const std::string name = p.Find("policy")->AsString();
    EXPECT_EQ(p.Find("jobs")->AsNumber(), 600) << name;
    for (const char* rule : {"gpus_held_twice", "user_class_conflicts", "constraint_breaks", "reservation_intrusions",
                             "quota_breaks", "unhealthy_placements"})
      EXPECT_EQ(p.Find("rules")->Find(rule)->AsNumber(), 0) << name << " " << rule;
  }
  EXPECT_EQ(json->Find("policies")->items()[0].Find("guarantee_violations")->AsNumber(), 0);
  // The same trace twice is the same trace: deterministic.
  const CapturedRun again = Launch(args);
  auto json2 = ParseJson(again.out, "sim output");
  ASSERT_TRUE(json2.ok());
  EXPECT_EQ(json2->Find("policies")->items()[0].Find("jct_s")->Write(),
            json->Find("policies")->items()[0].Find("jct_s")->Write());
}

TEST(Sim, BadInputIsAUsageErrorThatSaysWhere) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const Case cases[] = {
      {{"sim", "--cluster", "node:2"}, "sim needs --trace FILE or --synthetic SPEC (one of them)"},
      {{"sim", "--trace", kTiresias, "--synthetic", "jobs:10", "--cluster", "node:2"}, "(one of them)"},
      {{"sim", "--trace", kTiresias, "--cluster", "rack:2"}, "'rack:2' has no known key"},
      {{"sim", "--trace", kTiresias, "--cluster", "node:2 gpu:8 + node:2 gpu:4"}, "every group needs the same gpu:N"},
      {{"sim", "--trace", kTiresias, "--cluster", "node:2", "--policy", "lottery"}, "unknown policy 'lottery'"},
      {{"sim", "--trace", kTiresias, "--cluster", "node:2", "--teams", "3", "--quota", "a:1/2/3"},
       "--quota names 1 teams, --teams says 3"},
      {{"sim", "--synthetic", "jobs:10 teams:3", "--cluster", "node:2", "--quota", "a:1/2/3"},
       "but --quota names teams 0 to 0; or deal the jobs with --teams N"},
      {{"sim", "--synthetic", "jobs:ten", "--cluster", "node:2"}, "'jobs:ten' is not jobs:N"},
      {{"sim", "--synthetic", "jobs:10 templated:0.5", "--cluster", "node:2"}, "needs --templates"},
      {{"sim", "--trace", kTiresias, "--cluster", "node:2", "--reserve", "maint:0:1"}, "give NAME:TEAM:HOSTS@START-END"},
      {{"sim", "--trace", kTiresias, "--cluster", "node:2", "--reserve", "maint:x:1@0-5"}, "team 'x' is neither"},
      {{"sim", "--trace", kTiresias, "--cluster", "node:2", "--reserve", "maint:0:3@0-5"}, "reservation maint: needs 1 to 2 hosts"},
      {{"sim", "--trace", "/nonexistent.csv", "--cluster", "node:2"}, "/nonexistent.csv"},
      {{"sim", "--trace", kTiresias, "--cluster", "node:2", "--fail", "s0n7@1"}, "no host 's0n7' (names are s<leaf>n<node>"},
      {{"sim", "--trace", kTiresias, "--cluster", "node:2", "--fail", "1@5-2"}, "END after START"},
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
