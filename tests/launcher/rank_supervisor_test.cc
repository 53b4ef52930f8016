// The shim's supervision loop, run in-process on a real child: it must sleep
// while nothing happens, whatever the job does with the pipes it was given.
#include "launcher/shim/rank_supervisor.h"

#include <sys/wait.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace gpulaunch {
namespace {

struct Supervised {
  int wait_status = 0;
  long wakeups = 0;
};

// Runs `sh -c SCRIPT` under SuperviseRank without a control connection.
Supervised Supervise(const std::string& script, SuperviseOptions options = {}) {
  std::vector<std::string> words = {"/bin/sh", "-c", script};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  Supervised out;
  options.wakeups = &out.wakeups;
  out.wait_status = SuperviseRank(argv.data(), options);
  return out;
}

// The loop turns once per event (a pipe's end, the child's exit signal); a
// loop that polls a hung-up pipe again turns thousands of times in 0.3 s.
constexpr long kFewTurns = 50;

TEST(RankSupervisor, ReturnsTheChildsExitStatus) {
  const Supervised r = Supervise("exit 3");
  ASSERT_TRUE(WIFEXITED(r.wait_status));
  EXPECT_EQ(WEXITSTATUS(r.wait_status), 3);
}

TEST(RankSupervisor, SleepsWhenTheJobClosesItsHeartbeatPipe) {
  const Supervised r = Supervise("eval \"exec $GPULAUNCH_HEARTBEAT_FD>&-\"; sleep 0.3; exit 0");
  ASSERT_TRUE(WIFEXITED(r.wait_status));
  EXPECT_EQ(WEXITSTATUS(r.wait_status), 0);
  EXPECT_LT(r.wakeups, kFewTurns) << "the shim spun on the closed heartbeat pipe";
}

TEST(RankSupervisor, SleepsWhenTheJobClosesItsStderr) {
  const Supervised r = Supervise("exec 2>&-; sleep 0.3; exit 0");
  ASSERT_TRUE(WIFEXITED(r.wait_status));
  EXPECT_LT(r.wakeups, kFewTurns) << "the shim spun on the closed stderr pipe";
}

TEST(RankSupervisor, HeartbeatsKeepTheLoopAwakeOnlyWhileTheyCome) {
  const Supervised r = Supervise("for i in 1 2 3; do printf x >&$GPULAUNCH_HEARTBEAT_FD; done; sleep 0.3; exit 0");
  ASSERT_TRUE(WIFEXITED(r.wait_status));
  EXPECT_GE(r.wakeups, 2);  // at least a beat and the end
  EXPECT_LT(r.wakeups, kFewTurns);
}

// Options whose once_settled, due `after` the child started, counts its runs.
SuperviseOptions CountingOnceSettled(std::chrono::milliseconds after, int& runs) {
  SuperviseOptions options;
  options.settle_after = after;
  options.once_settled = [&runs] { ++runs; };
  return options;
}

TEST(RankSupervisor, RunsOnceSettledOnceWhileTheJobRuns) {
  int runs = 0;
  const SuperviseOptions options = CountingOnceSettled(std::chrono::milliseconds(50), runs);
  const Supervised r = Supervise("sleep 0.4; exit 0", options);
  ASSERT_TRUE(WIFEXITED(r.wait_status));
  EXPECT_EQ(runs, 1);
  EXPECT_LT(r.wakeups, kFewTurns);
}

TEST(RankSupervisor, ShortJobsNeverPayForOnceSettledNorWaitForIt) {
  int runs = 0;
  const SuperviseOptions options = CountingOnceSettled(std::chrono::seconds(30), runs);
  const auto started = std::chrono::steady_clock::now();
  const Supervised r = Supervise("exit 0", options);
  ASSERT_TRUE(WIFEXITED(r.wait_status));
  EXPECT_EQ(runs, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20)) << "waited for the settle time";
}

TEST(RankSupervisor, AStoppedJobDropsOnceSettled) {
  int runs = 0;
  const SuperviseOptions options = CountingOnceSettled(std::chrono::milliseconds(300), runs);
  // The job asks its shim (this process) to stop it; the shim passes SIGTERM
  // on, and the settle time passes while the job takes its time to end.
  const Supervised r = Supervise("trap 'kill $!; sleep 0.6; exit 5' TERM; kill -TERM $PPID; sleep 5 & wait", options);
  ASSERT_TRUE(WIFEXITED(r.wait_status));
  EXPECT_EQ(WEXITSTATUS(r.wait_status), 5);
  EXPECT_EQ(runs, 0);
}

}  // namespace
}  // namespace gpulaunch
