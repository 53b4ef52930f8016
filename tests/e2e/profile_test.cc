// End-to-end --profile: real gpulaunch, real mpirun, the real training
// example. A planted straggler (transformer_train --slow-rank R:MS) makes the
// other ranks wait MS per step inside their data-parallel reduction; the run
// report must name the straggler and show a communication share that matches
// the injection, and the metrics files must be complete and well-formed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "common/json.h"
#include "common/step_metrics.h"
#include "tests/e2e/launch_helpers.h"

namespace fs = std::filesystem;

namespace gpulaunch {
namespace {

Json ReadJson(const std::string& path) {
  auto json = ParseJson(ReadText(path), path);
  EXPECT_TRUE(json.ok()) << path << ": " << (json.ok() ? "" : json.status().message());
  return json.ok() ? *json : Json::Object();
}

double Number(const Json& j, const std::string& key) {
  const Json* v = j.Find(key);
  return v && v->is(Json::Type::kNumber) ? v->AsNumber() : -1;
}

CapturedRun Train(const std::string& profile_dir, std::vector<std::string> extra) {
  std::vector<std::string> args = {"-n", "4", "--oversubscribe", "--allow-run-as-root", "--no-summary", "--profile",
                                   "--profile-dir", profile_dir, kBin + "/transformer_train", "--steps", "8"};
  args.insert(args.end(), extra.begin(), extra.end());
  return Launch(args);
}

// Every step of every rank (`ranks` ranks, `steps` steps), one valid record
// per line; rank `slow_rank` computes at least `injected_s` more per step.
void ExpectEveryStepRecorded(const fs::path& dir, int ranks, int steps, int slow_rank, double injected_s) {
  for (int r = 0; r < ranks; ++r) {
    const std::string path = dir / ("rank-" + std::to_string(r) + ".jsonl");
    std::ifstream f(path);
    std::string line;
    int lines = 0;
    while (std::getline(f, line)) {
      auto m = ParseStepMetricsJson(line, path);
      ASSERT_TRUE(m.ok()) << m.status().message();
      EXPECT_EQ(m->rank, r);
      EXPECT_EQ(m->step, lines);
      EXPECT_NEAR(m->compute_s + m->comm_s(), m->step_s, 1e-6);
      if (r == slow_rank) {
        EXPECT_GE(m->compute_s, injected_s * 0.95);
      }
      ++lines;
    }
    EXPECT_EQ(lines, steps) << path;
  }
}

// Prometheus text format: comments, or `name{labels} value`.
void ExpectPrometheusText(const std::string& prom) {
  const std::regex sample(R"re([a-z_]+\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\} [0-9.e+-]+)re");
  std::istringstream in(prom);
  std::string line;
  int samples = 0;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) continue;
    EXPECT_TRUE(std::regex_match(line, sample)) << line;
    ++samples;
  }
  EXPECT_GT(samples, 20);
}

TEST(Profile, StragglerIsNamedAndTheCommunicationShareMatchesTheInjectedWait) {
  TempDir dir("profile");
  const CapturedRun base = Train(dir / "base", {"--layout", "dp=4"});
  ASSERT_EQ(ExitCode(base), 0) << base.err;
  constexpr double kInjectedS = 0.150;
  const CapturedRun slow = Train(dir / "slow", {"--layout", "dp=4", "--slow-rank", "2:150"});
  ASSERT_EQ(ExitCode(slow), 0) << slow.err;

  const Json b = ReadJson(dir / "base/run-report.json");
  const Json s = ReadJson(dir / "slow/run-report.json");
  ASSERT_EQ(Number(s, "ranks"), 4);
  ASSERT_EQ(Number(s, "steps"), 8);
  const double base_step = Number(*b.Find("step_time"), "median_s");
  const double base_share = Number(b, "comm_share");
  // Three of four ranks wait about the injected time per step in the dp
  // reduction; the fourth computes it.
  const double expected = (base_share * base_step + 0.75 * kInjectedS) / (base_step + kInjectedS);
  const double share = Number(s, "comm_share");
  EXPECT_NEAR(share, expected, 0.10) << "baseline step " << base_step << " s, share " << base_share << "\n" << slow.err;
  EXPECT_GT(Number(*s.Find("step_time"), "median_s"), kInjectedS);
  const Json& slowest = *s.Find("slowest");
  EXPECT_EQ(Number(slowest, "rank"), 2);
  EXPECT_GT(Number(slowest, "compute_s"), kInjectedS);
  ASSERT_EQ(s.Find("groups")->items().size(), 1u);  // dp only: tp and pp groups of one rank never communicate
  EXPECT_EQ(s.Find("groups")->items()[0].Find("group")->AsString(), "dp");
  EXPECT_GT(Number(s.Find("groups")->items()[0], "bytes"), 0);

  // The terminal report says the same, with the warning and its cause.
  EXPECT_NE(slow.err.find("gpulaunch: run report (4 ranks, 8 steps)"), std::string::npos) << slow.err;
  EXPECT_NE(slow.err.find("  slowest rank: 2 on "), std::string::npos) << slow.err;
  EXPECT_NE(slow.err.find("warning: communication takes"), std::string::npos) << slow.err;
  EXPECT_NE(slow.err.find("rank 2 on "), std::string::npos) << slow.err;
  // Not asserted here: that the baseline run gives no warning. On a loaded
  // machine one of its ranks really is slower, and the warning is then right
  // (CI saw rank 2 at 1.3x the median). That no warning comes without cause is
  // shown on fixed profiles: RunReport.LowCommunicationShareGivesNoWarning.

  ExpectEveryStepRecorded(dir / "slow", 4, 8, 2, kInjectedS);
  const std::string prom = ReadText(dir / "slow/metrics.prom");
  ExpectPrometheusText(prom);
  EXPECT_NE(prom.find("gpulaunch_communication_seconds_total{job=\"gl-"), std::string::npos);
  EXPECT_NE(prom.find(",rank=\"2\","), std::string::npos);
  EXPECT_NE(prom.find("gpulaunch_communication_share_ratio{"), std::string::npos);
}

TEST(Profile, PipelineBubbleIsMeasuredAgainstTheSchedulesTheory) {
  TempDir dir("bubble");
  const CapturedRun run = Launch({"-n", "2", "--allow-run-as-root", "--no-summary", "--profile", "--profile-dir",
                                  dir / "p", kBin + "/transformer_train", "--steps", "4", "--layout", "pp=2",
                                  "--schedule", "gpipe", "--microbatches", "4"});
  ASSERT_EQ(ExitCode(run), 0) << run.err;
  const Json report = ReadJson(dir / "p/run-report.json");
  EXPECT_DOUBLE_EQ(Number(report, "bubble_theory"), 1.0 / 5.0);  // (p - 1) / (m + p - 1)
  EXPECT_GT(Number(report, "bubble_share"), 0.0);
  EXPECT_LT(Number(report, "bubble_share"), 1.0);
  EXPECT_NE(run.err.find("  pipeline bubble: "), std::string::npos) << run.err;
}

TEST(Profile, WithoutProfileNothingIsMeasuredOrWritten) {
  TempDir dir("noprofile");
  const CapturedRun run = Launch({"-n", "2", "--allow-run-as-root", "--no-summary", kBin + "/transformer_train",
                                  "--steps", "2", "--layout", "dp=2"});
  ASSERT_EQ(ExitCode(run), 0) << run.err;
  EXPECT_EQ(run.err.find("run report"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists("gpulaunch-profile"));
}

TEST(Profile, ProfileDirWithoutProfileIsAUsageError) {
  const CapturedRun run = Launch({"--profile-dir", "x", "-n", "1", "true"});
  EXPECT_EQ(ExitCode(run), 2) << run.err;
  EXPECT_NE(run.err.find("--profile-dir needs --profile"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace gpulaunch
