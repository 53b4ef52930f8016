// End-to-end failure handling on this machine: the summary and root cause of
// a failed job, signals forwarded to every rank, the stall timeout with the
// stuck rank's stacks, and a restart. Real gpulaunch, real mpirun, real ranks.
#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/json.h"
#include "tests/e2e/launch_helpers.h"

namespace fs = std::filesystem;

namespace gpulaunch {
namespace {

Json ReadSummary(const std::string& path) {
  auto json = ParseJson(ReadText(path), path);
  EXPECT_TRUE(json.ok()) << path << ": " << (json.ok() ? "" : json.status().message());
  return json.ok() ? *json : Json();
}

const Json& RankEntry(const Json& summary, int rank) { return summary.Find("ranks")->items().at(rank); }

// Rank 2 fails once every rank runs (--start-dir): under load a rank that
// failed at once could take the job down before another rank had started,
// and that one would rightly be "never-started".
TEST(Failure, SummaryAndRootCauseNameTheRankThatFailed) {
  TempDir dir("summary");
  const CapturedRun run = Launch({"-n", "4", "--oversubscribe", "--allow-run-as-root", "--summary",
                                  dir / "summary.json", kBin + "/env_dump", "--fail-rank", "2", "--sleep", "30",
                                  "--start-dir", dir.path.string()});
  EXPECT_EQ(ExitCode(run), 3) << run.err;
  const auto block = run.err.find("gpulaunch: ---- root cause ----\n");
  ASSERT_NE(block, std::string::npos) << run.err;
  const std::string cause = run.err.substr(block);
  EXPECT_NE(cause.find("gpulaunch: rank 2 on "), std::string::npos) << cause;
  EXPECT_NE(cause.find("exited with code 3"), std::string::npos) << cause;
  EXPECT_NE(cause.find("gpulaunch: |  env_dump: rank 2 fails on purpose\n"), std::string::npos) << cause;

  const Json summary = ReadSummary(dir / "summary.json");
  ASSERT_TRUE(summary.Find("ranks"));
  EXPECT_EQ(summary.Find("exit_code")->AsNumber(), 3);
  EXPECT_EQ(summary.Find("root_cause")->Find("rank")->AsNumber(), 2);
  ASSERT_EQ(summary.Find("ranks")->items().size(), 4u);
  const Json& failed = RankEntry(summary, 2);
  EXPECT_EQ(failed.Find("state")->AsString(), "exited");
  EXPECT_EQ(failed.Find("exit_code")->AsNumber(), 3);
  EXPECT_GT(failed.Find("pid")->AsNumber(), 0);
  ASSERT_EQ(failed.Find("stderr_tail")->items().size(), 1u);
  EXPECT_EQ(failed.Find("stderr_tail")->items()[0].AsString(), "env_dump: rank 2 fails on purpose");
  // The others were sleeping: they were stopped (reported by their shim, or
  // stopped together with it).
  for (int r : {0, 1, 3}) {
    const std::string state = RankEntry(summary, r).Find("state")->AsString();
    EXPECT_TRUE(state == "killed" || state == "stopped-unreported") << r << ": " << state;
    EXPECT_TRUE(RankEntry(summary, r).Find("ended_at")) << r;
    // A reported one had its stop signal passed on by its shim, which says so.
    if (state == "killed") {
      ASSERT_TRUE(RankEntry(summary, r).Find("told_to_stop")) << r;
      EXPECT_TRUE(RankEntry(summary, r).Find("told_to_stop")->AsBool()) << r;
    }
  }
}

TEST(Failure, SigusrOneAndTwoReachEveryRankAsTheSameSignal) {
  TempDir dir("usr");
  const pid_t pid = StartInBackground({kLaunch, "-n", "4", "--oversubscribe", "--allow-run-as-root", "--no-summary",
                                       kBin + "/env_dump", "--wait-dir", dir.path.string()});
  ASSERT_EQ(WaitForFiles(dir.path, "ready", 4, kStartMs), 4) << "ranks did not start";
  kill(pid, SIGUSR2);  // recorded; the ranks keep waiting
  EXPECT_EQ(WaitForFiles(dir.path, "SIGUSR2", 4, kStartMs), 4) << "not every rank saw SIGUSR2";
  kill(pid, SIGUSR1);  // recorded; the ranks exit 0
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(FilesPresent(dir.path, "SIGUSR1", 4), 4) << "not every rank saw SIGUSR1";
  EXPECT_EQ(FilesPresent(dir.path, "SIGTERM", 4), 0) << "a rank got SIGTERM instead";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(WaitUntilGone(dir.path.string(), kGoneAfterExitMs).empty());
}

TEST(Failure, AStalledRankIsStoppedWithItsStacksInTheSummary) {
  TempDir dir("stall");
  const std::string marker = "gl-e2e-stall-" + std::to_string(getpid());
  const CapturedRun run =
      Launch({"-n", "3", "--oversubscribe", "--allow-run-as-root", "--stall-timeout", "3", "--summary",
              dir / "summary.json", kBin + "/env_dump", "--stall-rank", "1", "--wait-dir", dir.path.string(),
              "--marker", marker});
  EXPECT_EQ(ExitCode(run), 124) << run.err;
  EXPECT_NE(run.err.find("made no progress for 3 s (--stall-timeout)"), std::string::npos) << run.err;
  const Json summary = ReadSummary(dir / "summary.json");
  ASSERT_TRUE(summary.Find("ranks"));
  EXPECT_EQ(summary.Find("root_cause")->Find("rank")->AsNumber(), 1);
  const Json* stacks = RankEntry(summary, 1).Find("stacks");
  ASSERT_TRUE(stacks) << "no stacks collected for the stalled rank";
  EXPECT_NE(stacks->AsString().find("StallHere"), std::string::npos) << stacks->AsString();
  EXPECT_TRUE(RankEntry(summary, 1).Find("last_heartbeat_at")) << "its heartbeats never arrived";
  // The ranks that kept reporting progress finished normally.
  for (int r : {0, 2}) {
    EXPECT_EQ(RankEntry(summary, r).Find("state")->AsString(), "exited") << r;
    EXPECT_FALSE(RankEntry(summary, r).Find("stacks")) << r;
  }
  EXPECT_TRUE(WaitUntilGone(marker, kGoneAfterExitMs).empty()) << "ranks left behind";
}

TEST(Failure, RestartRelaunchesWithTheRestartCount) {
  TempDir dir("restart");
  const CapturedRun run = Launch({"-n", "2", "--oversubscribe", "--allow-run-as-root", "--on-failure=restart:1",
                                  "--summary", dir / "summary.json", kBin + "/env_dump", "--fail-rank", "1"});
  EXPECT_EQ(ExitCode(run), 0) << run.err;
  EXPECT_NE(run.err.find("gpulaunch: restart 1 of 1: launching the job again"), std::string::npos) << run.err;
  // The first launch printed restart=0 lines, the second restart=1 for both ranks.
  int second = 0;
  for (size_t at = 0; (at = run.out.find("restart=1\n", at)) != std::string::npos; ++at) ++second;
  EXPECT_EQ(second, 2) << run.out;
  const Json summary = ReadSummary(dir / "summary.json");
  ASSERT_TRUE(summary.Find("restart"));
  EXPECT_EQ(summary.Find("restart")->AsNumber(), 1);
  EXPECT_EQ(summary.Find("exit_code")->AsNumber(), 0);

  // Without restarts left, the failure is the job's.
  const CapturedRun once = Launch({"-n", "2", "--oversubscribe", "--allow-run-as-root", "--no-summary",
                                   kBin + "/env_dump", "--fail-rank", "1"});
  EXPECT_EQ(ExitCode(once), 3) << once.err;
  EXPECT_EQ(once.err.find("restart 1"), std::string::npos);
}

TEST(Failure, BadFailureOptionsAreUsageErrors) {
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--on-failure=retry", "-n", "1", "true"},
        {"--on-failure=restart:x", "-n", "1", "true"},
        {"--stall-timeout", "0", "-n", "1", "true"},
        {"--summary", "a.json", "--no-summary", "-n", "1", "true"}}) {
    const CapturedRun run = Launch(bad);
    EXPECT_EQ(ExitCode(run), 2) << bad[0];
    EXPECT_NE(run.err.find("gpulaunch: --"), std::string::npos) << run.err;
  }
}

}  // namespace
}  // namespace gpulaunch
