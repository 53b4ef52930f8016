// The shim's supervision loop, run in-process on a real child: it must sleep
// while nothing happens, whatever the job does with the pipes it was given.
#include "launcher/shim/rank_supervisor.h"

#include <sys/wait.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpulaunch {
namespace {

struct Supervised {
  int wait_status = 0;
  long wakeups = 0;
};

// Runs `sh -c SCRIPT` under SuperviseRank without a control connection.
Supervised Supervise(const std::string& script) {
  std::vector<std::string> words = {"/bin/sh", "-c", script};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  Supervised out;
  SuperviseOptions options;
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

}  // namespace
}  // namespace gpulaunch
