// Many systems start processes with a soft open-file limit of 1,024 under a
// far higher hard one. Open MPI's mpirun holds about 4 descriptors for each
// rank it starts, and out of them it hangs: `mpirun -n 100` under a soft
// limit of 256 never ends. gpulaunch raises the limit its engine inherits as
// far as the job needs and the hard limit allows, the job still sees the
// user's own, and a hard limit too low is refused before anything starts.
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "common/strings.h"
#include "tests/e2e/launch_helpers.h"

namespace gpulaunch {
namespace {

namespace fs = std::filesystem;

constexpr int kRanks = 100;  // about 430 descriptors in mpirun, more than 256

bool HardLimitAtLeast(rlim_t n) {
  rlimit lim{};
  return getrlimit(RLIMIT_NOFILE, &lim) == 0 && (lim.rlim_max == RLIM_INFINITY || lim.rlim_max >= n);
}

TEST(FileLimit, ALowSoftLimitIsRaisedForTheEngineAndTheJobKeepsTheUsersOwn) {
  if (!HardLimitAtLeast(1024)) GTEST_SKIP() << "hard open-file limit below 1024 here";
  const CapturedRun run = RunCaptured({"prlimit", "--nofile=256:", kLaunch, "--allow-run-as-root", "--no-summary",
                                       "--oversubscribe", "-n", std::to_string(kRanks), "sh", "-c", "ulimit -Sn"},
                                      EnvironmentWith({}), kStartMs);
  ASSERT_FALSE(run.timed_out) << "the launch hung: " << run.err.substr(0, 2000);
  EXPECT_EQ(ExitCode(run), 0) << run.err.substr(0, 2000);
  int users_own = 0, lines = 0;
  for (const std::string& line : Split(run.out, '\n')) {
    if (line.empty()) continue;
    ++lines;
    users_own += line == "256";
  }
  EXPECT_EQ(lines, kRanks) << run.out.substr(0, 500);
  EXPECT_EQ(users_own, kRanks) << "the job saw another limit than the user's: " << run.out.substr(0, 500);
}

TEST(FileLimit, AHardLimitTooLowForTheEngineIsRefusedBeforeAnythingStarts) {
  const TempDir dir("gl-e2e-file-limit");
  const std::string started = dir / "started";
  const CapturedRun run = RunCaptured({"prlimit", "--nofile=256:256", kLaunch, "--allow-run-as-root", "--no-summary",
                                       "--oversubscribe", "-n", std::to_string(kRanks), "touch", started},
                                      EnvironmentWith({}), kStartMs);
  EXPECT_EQ(ExitCode(run), 2) << run.err;
  EXPECT_NE(run.err.find(std::to_string(kRanks) + " ranks start on this host and mpirun holds 4 open files for each"),
            std::string::npos) << run.err;
  EXPECT_NE(run.err.find("hard open-file limit here is 256; raise it (ulimit -Hn"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(started)) << "a rank ran";
}

// How the engine's daemons start on other hosts (open_file_limit.h): their
// limit raised, the ranks told what it was, the daemon in the same process;
// a hard limit too low is an error with the limit and the fix.
TEST(FileLimit, TheShimStartsAnEngineDaemonWithItsLimitRaised) {
  if (!HardLimitAtLeast(1024)) GTEST_SKIP() << "hard open-file limit below 1024 here";
  const std::string shim = kBin + "/gpulaunch-shim";
  const CapturedRun daemon = RunCaptured({"prlimit", "--nofile=256:", shim, "--raise-open-files", "600", "sh", "-c",
                                          "echo \"$(ulimit -Sn) $GPULAUNCH_NOFILE\""},
                                         EnvironmentWith({}), kStartMs);
  EXPECT_EQ(ExitCode(daemon), 0) << daemon.err;
  EXPECT_EQ(daemon.out, "600 600 256\n");
  const CapturedRun too_low = RunCaptured({"prlimit", "--nofile=256:256", shim, "--raise-open-files", "600", "true"},
                                          EnvironmentWith({}), kStartMs);
  EXPECT_EQ(ExitCode(too_low), 125) << too_low.err;
  EXPECT_NE(too_low.err.find("true starts this job's ranks and needs about 600 open files, but the hard open-file "
                             "limit here is 256"),
            std::string::npos) << too_low.err;
  const CapturedRun usage = RunCaptured({shim, "--raise-open-files", "many", "true"}, EnvironmentWith({}), kStartMs);
  EXPECT_EQ(ExitCode(usage), 2) << usage.err;
  const CapturedRun missing =
      RunCaptured({shim, "--raise-open-files", "64", "/nonexistent/orted"}, EnvironmentWith({}), kStartMs);
  EXPECT_EQ(ExitCode(missing), 127) << missing.err;
  EXPECT_NE(missing.err.find("cannot run /nonexistent/orted on "), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace gpulaunch
