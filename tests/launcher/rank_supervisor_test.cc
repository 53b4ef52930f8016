// The shim's supervision loop, run in-process on a real child: it must sleep
// while nothing happens, whatever the job does with the pipes it was given.
#include "launcher/shim/rank_supervisor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/control_peer.h"

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
  // However many descriptors the shim holds (close-on-exec, as all of its
  // own are), the job's heartbeat end is low enough for a shell to name: dash
  // redirects only 0 to 9.
  std::vector<int> held;
  for (int i = 0; i < 12; ++i) held.push_back(open("/dev/null", O_RDONLY | O_CLOEXEC));
  const Supervised r = Supervise("eval \"exec $GPULAUNCH_HEARTBEAT_FD>&-\"; sleep 0.3; exit 0");
  for (int fd : held) close(fd);
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

// The job process sends the check-in itself, with its own pid, before it
// execs: the job finds the whole line already waiting on the other end (a
// non-blocking read gets nothing when the line is sent any later).
TEST(RankSupervisor, TheJobHasCheckedInWithItsPidBeforeItRuns) {
  int ends[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends), 0);
  ASSERT_EQ(fcntl(ends[1], F_SETFD, 0), 0);  // the job reads this end
  char dir_template[] = "/tmp/gl-checkin-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string seen = std::string(dir_template) + "/seen";
  SuperviseOptions options;
  ControlSession session(testing_control::TestKey(), ControlSide::kClient, "job", 7, "sn", "cn");
  options.check_in = {ends[0], &session, "checkin 7 ", " 16 node3 abc -"};
  const Supervised r = Supervise("dd iflag=nonblock bs=4096 count=1 <&" + std::to_string(ends[1]) + " >" + seen +
                                     " 2>/dev/null; echo \"pid $$\" >>" + seen,
                                 options);
  close(ends[0]);
  close(ends[1]);
  ASSERT_TRUE(WIFEXITED(r.wait_status));
  std::ifstream in(seen);
  std::string line, pid_line;
  std::getline(in, line);
  std::getline(in, pid_line);
  std::filesystem::remove_all(dir_template);
  ASSERT_EQ(pid_line.rfind("pid ", 0), 0u) << "the job did not run: " << pid_line;
  // The line carries the connection's tag, which gpulaunch's side opens.
  ControlSession server(testing_control::TestKey(), ControlSide::kServer, "job", 7, "sn", "cn");
  const auto opened = server.Open(line);
  ASSERT_TRUE(opened) << line;
  EXPECT_EQ(*opened, "checkin 7 " + pid_line.substr(4) + " 16 node3 abc -");
}

// A check-in that cannot be sent (here: nobody reads the other end) does not
// keep the rank from running; the shim says so and closes its connection, as
// for a rank that never reached gpulaunch.
TEST(RankSupervisor, ACheckInThatCannotBeSentClosesTheConnectionAndTheJobRuns) {
  ControlServer server;
  ASSERT_TRUE(server.Start(testing_control::Options(1)).ok());
  const std::string address = server.address();
  ControlClient control;
  ASSERT_TRUE(testing_control::Join(control, server, 0));
  int ends[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends), 0);
  close(ends[1]);  // the check-in line goes nowhere: EPIPE
  SuperviseOptions options;
  options.control = &control;
  options.check_in = {ends[0], &control.session(), "checkin 7 ", " 16 node3 abc -"};
  testing::internal::CaptureStderr();
  const Supervised r = Supervise("echo ran >&2; exit 4", options);
  const std::string said = testing::internal::GetCapturedStderr();
  close(ends[0]);
  ASSERT_TRUE(WIFEXITED(r.wait_status));
  EXPECT_EQ(WEXITSTATUS(r.wait_status), 4);
  EXPECT_NE(said.find("ran\n"), std::string::npos) << said;
  EXPECT_NE(said.find("rank 0 could not check in with gpulaunch at " + address), std::string::npos) << said;
  EXPECT_FALSE(control.connected());
  EXPECT_EQ(control.fd(), -1);
}

TEST(RankSupervisor, AProgramThatCannotRunExits127WhenMissingAnd126Otherwise) {
  std::vector<std::string> missing = {"/no/such/program"};
  std::vector<std::string> not_executable = {"/tmp"};  // a directory: EACCES
  for (auto* words : {&missing, &not_executable}) {
    std::vector<char*> argv = {(*words)[0].data(), nullptr};
    testing::internal::CaptureStderr();  // the job's stderr, relayed by the shim
    const int status = SuperviseRank(argv.data(), SuperviseOptions{});
    const std::string said = testing::internal::GetCapturedStderr();
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), words == &missing ? 127 : 126) << (*words)[0];
    EXPECT_NE(said.find("rank 0 cannot execute '" + (*words)[0] + "'"), std::string::npos) << said;
  }
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
  const Supervised r = Supervise("sleep 5 & trap 'kill $!; sleep 0.6; exit 5' TERM; kill -TERM $PPID; wait", options);
  ASSERT_TRUE(WIFEXITED(r.wait_status));
  EXPECT_EQ(WEXITSTATUS(r.wait_status), 5);
  EXPECT_EQ(runs, 0);
}

// A rank of a two-rank job, supervised in a thread with a real control
// connection: its job process checks in as rank 0 and runs `script`.
class HeldRank {
 public:
  // Without a bound of the test's own, the wait's is 10 minutes: a rank that
  // ends within EndsWithin's 30 s ended for the reason the test gave it.
  HeldRank(const std::string& script, SuperviseOptions options) {
    if (options.start_wait_limit == SuperviseOptions().start_wait_limit) options.start_wait_limit = std::chrono::minutes(10);
    EXPECT_TRUE(server_.Start(testing_control::Options(2)).ok());
    EXPECT_TRUE(testing_control::Join(control_, server_, 0));
    options.control = &control_;
    options.check_in = {control_.fd(), &control_.session(), "checkin 0 ", " 2 localhost H -"};
    options.wait_for_every_start = true;
    thread_ = std::thread([this, script, options] {
      wait_status_ = Supervise(script, options).wait_status;
      done_ = true;
    });
  }
  ~HeldRank() {
    if (thread_.joinable()) thread_.join();
  }
  // Waits (at most 60 s: a broken shim must not hang the test) for rank 0's exit report.
  bool Reported() {
    for (int i = 0; i < 6000; ++i) {
      const auto records = server_.Records();
      if (records.count(0) && records.at(0).ended) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  // The other rank checks in: every rank has started.
  void SecondRankStarts() {
    ASSERT_TRUE(testing_control::Join(other_, server_, 1));
    ControlMessage m;
    m.kind = ControlMessage::Kind::kCheckin;
    m.rank = 1;
    m.pid = 999992;
    m.world = 2;
    m.host = "localhost";
    m.plan_hash = "H";
    ASSERT_TRUE(other_.Send(m));
  }
  // gpulaunch's own stop sequence (`signal 15` to every rank's shim).
  bool GpulaunchStops() { return server_.SignalAllRanks(SIGTERM); }
  int Finish() {
    thread_.join();
    return wait_status_;
  }
  bool done() const { return done_; }
  bool EndsWithin(std::chrono::seconds limit) {
    for (auto until = std::chrono::steady_clock::now() + limit; !done_ && std::chrono::steady_clock::now() < until;)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done_;
  }

 private:
  ControlServer server_;
  ControlClient control_, other_;
  std::thread thread_;
  std::atomic<bool> done_{false};
  int wait_status_ = -1;
};

// Under Open MPI a rank that ended with code 0 reports at once but keeps its
// shim until every rank has started: mpirun counts a rank that ends before
// its daemon started the host's every rank twice, and ends the job early.
TEST(RankSupervisor, ACleanRankExitsOnlyOnceEveryRankHasStarted) {
  HeldRank rank("exit 0", {});
  ASSERT_TRUE(rank.Reported());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(rank.done()) << "the shim exited before the other rank started";
  rank.SecondRankStarts();
  ASSERT_TRUE(rank.EndsWithin(std::chrono::seconds(30))) << "`started` did not end the wait";
  const int status = rank.Finish();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// The wait has a bound, and a failed rank does not wait at all: the engine
// ends the job on a failure anyway, and must hear of it at once.
TEST(RankSupervisor, TheWaitForEveryStartIsBoundedAndOnlyForCleanEnds) {
  SuperviseOptions bounded;
  bounded.start_wait_limit = std::chrono::milliseconds(400);
  const auto started = std::chrono::steady_clock::now();
  HeldRank clean("exit 0", bounded);
  const int status = clean.Finish();
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(400));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);

  HeldRank failed("exit 3", {});
  ASSERT_TRUE(failed.EndsWithin(std::chrono::seconds(30))) << "a failed rank waited";
  const int failed_status = failed.Finish();
  ASSERT_TRUE(WIFEXITED(failed_status));
  EXPECT_EQ(WEXITSTATUS(failed_status), 3);
}

// A stop ends the wait at once: the engine's teardown (a signal to the
// shim) or gpulaunch's stop sequence (a `signal` request). Neither changes
// how the rank ended: on its own, with code 0.
TEST(RankSupervisor, AStopEndsTheWaitForEveryStart) {
  HeldRank signalled("exit 0", {});
  ASSERT_TRUE(signalled.Reported());
  kill(getpid(), SIGTERM);  // the supervision's handler, still installed, takes it
  ASSERT_TRUE(signalled.EndsWithin(std::chrono::seconds(30))) << "SIGTERM did not end the wait";
  int status = signalled.Finish();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);

  HeldRank asked("exit 0", {});
  ASSERT_TRUE(asked.Reported());
  ASSERT_TRUE(asked.GpulaunchStops());
  ASSERT_TRUE(asked.EndsWithin(std::chrono::seconds(30))) << "gpulaunch's stop did not end the wait";
  status = asked.Finish();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace gpulaunch
