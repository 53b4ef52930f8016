#include "launcher/base/process.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <fstream>
#include <thread>

#include "tests/testing/process_scan.h"

namespace gpulaunch {
namespace {

bool Has(const std::vector<std::string>& env, const std::string& kv) {
  return std::find(env.begin(), env.end(), kv) != env.end();
}

// A variable set for this process only reaches no child: EnvironmentWith
// leaves it out, unless the caller passes it on by name.
TEST(EnvironmentWith, LeavesOutWhatThisProcessSetForItself) {
  SetEnvForThisProcessOnly("GL_TEST_OWN_VARIABLE", "mine");
  ASSERT_STREQ(getenv("GL_TEST_OWN_VARIABLE"), "mine");
  EXPECT_FALSE(Has(EnvironmentWith({}), "GL_TEST_OWN_VARIABLE=mine"));
  EXPECT_TRUE(Has(EnvironmentWith({{"GL_TEST_OWN_VARIABLE", "given"}}), "GL_TEST_OWN_VARIABLE=given"));
  const CapturedRun run = RunCaptured({"sh", "-c", "echo ${GL_TEST_OWN_VARIABLE:-unset}"}, EnvironmentWith({}), 10000);
  EXPECT_EQ(run.out, "unset\n");
  unsetenv("GL_TEST_OWN_VARIABLE");
}

// A setting for gpulaunch and its engine: the engine's environment gets it
// with the list of what to remove, unless the engine's environment already
// sets that variable (a value given for the job wins and stays).
TEST(EngineOnlyEnvironment, AddsTheSettingAndNamesIt) {
  SetEnvForThisProcessAndEngine("GL_TEST_ENGINE_VARIABLE", "fast");
  EXPECT_FALSE(Has(EnvironmentWith({}), "GL_TEST_ENGINE_VARIABLE=fast")) << "the job would inherit it";
  auto added = EngineOnlyEnvironment({{"GPULAUNCH_SLOT_TABLE", "v3|x"}});
  EXPECT_EQ(added["GL_TEST_ENGINE_VARIABLE"], "fast");
  EXPECT_NE(("," + added[kEngineOnlyEnv] + ",").find(",GL_TEST_ENGINE_VARIABLE,"), std::string::npos)
      << added[kEngineOnlyEnv];
  added = EngineOnlyEnvironment({{"GL_TEST_ENGINE_VARIABLE", "the job's"}});
  EXPECT_EQ(added.count("GL_TEST_ENGINE_VARIABLE"), 0u);
  EXPECT_EQ(("," + added[kEngineOnlyEnv] + ",").find(",GL_TEST_ENGINE_VARIABLE,"), std::string::npos);
}

// The engine's own settings for one job join the list the same way.
TEST(EngineOnlyEnvironment, NamesTheEnginesOwnSettingsForTheJob) {
  auto added = EngineOnlyEnvironment({{"GPULAUNCH_SLOT_TABLE", "v3|x"}}, {{"GL_TEST_ENGINE_FILE", "/job/f.xml"}});
  EXPECT_EQ(added["GL_TEST_ENGINE_FILE"], "/job/f.xml");
  EXPECT_NE(("," + added[kEngineOnlyEnv] + ",").find(",GL_TEST_ENGINE_FILE,"), std::string::npos)
      << added[kEngineOnlyEnv];
  added = EngineOnlyEnvironment({{"GL_TEST_ENGINE_FILE", "the job's"}}, {{"GL_TEST_ENGINE_FILE", "/job/f.xml"}});
  EXPECT_EQ(added.count("GL_TEST_ENGINE_FILE"), 0u);
  EXPECT_EQ(("," + added[kEngineOnlyEnv] + ",").find(",GL_TEST_ENGINE_FILE,"), std::string::npos);
}

// In a rank: what the list names goes, and the list; nothing else.
TEST(EngineOnlyEnvironment, TheRankDropsWhatTheListNames) {
  setenv("GL_A", "1", 1);
  setenv("GL_B", "2", 1);
  setenv("GL_C", "3", 1);
  setenv(kEngineOnlyEnv, "GL_A,GL_B", 1);
  DropEngineOnlyEnvironment();
  EXPECT_EQ(getenv("GL_A"), nullptr);
  EXPECT_EQ(getenv("GL_B"), nullptr);
  EXPECT_EQ(getenv(kEngineOnlyEnv), nullptr);
  ASSERT_NE(getenv("GL_C"), nullptr);
  EXPECT_STREQ(getenv("GL_C"), "3");
  unsetenv("GL_C");
}

TEST(RunCaptured, CapturesOutputAndStatus) {
  auto r = RunCaptured({"sh", "-c", "echo out; echo err >&2; exit 4"}, EnvironmentWith({}), 10000);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  ASSERT_TRUE(WIFEXITED(r.wait_status));
  EXPECT_EQ(WEXITSTATUS(r.wait_status), 4);
  EXPECT_FALSE(r.Succeeded());
  EXPECT_TRUE(RunCaptured({"true"}, EnvironmentWith({}), 10000).Succeeded());
}

// What a shell says of a program it cannot run, and its exit codes: 127 not
// found, 126 found but not executable. The child reports nothing itself (it
// shares the launcher's memory until exec); the launcher says it on the
// child's stderr.
TEST(RunCaptured, AProgramThatCannotRunSaysWhyOnItsStderrAsAShellWould) {
  auto missing = RunCaptured({"/no/such/program"}, EnvironmentWith({}), 10000);
  ASSERT_TRUE(WIFEXITED(missing.wait_status));
  EXPECT_EQ(WEXITSTATUS(missing.wait_status), 127);
  EXPECT_NE(missing.err.find("cannot execute '/no/such/program': No such file or directory"), std::string::npos)
      << missing.err;
  const std::string not_executable = ::testing::TempDir() + "/gpulaunch-not-executable." + std::to_string(getpid());
  std::ofstream(not_executable) << "#!/bin/sh\n";
  auto denied = RunCaptured({not_executable}, EnvironmentWith({}), 10000);
  std::remove(not_executable.c_str());
  ASSERT_TRUE(WIFEXITED(denied.wait_status));
  EXPECT_EQ(WEXITSTATUS(denied.wait_status), 126);
  EXPECT_NE(denied.err.find("cannot execute '" + not_executable + "': Permission denied"), std::string::npos)
      << denied.err;
}

// The launcher blocks every signal while it starts a program and may have
// handled or ignored some; the program starts as from a shell: nothing
// blocked, and none of those ignored.
TEST(RunCaptured, AProgramStartsWithNoSignalBlockedOrIgnored) {
  sigset_t usr1, before;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, &before);
  struct sigaction ignore {}, old_pipe {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old_pipe);
  auto r = RunCaptured({"cat", "/proc/self/status"}, EnvironmentWith({}), 10000);
  sigaction(SIGPIPE, &old_pipe, nullptr);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  ASSERT_TRUE(r.Succeeded()) << r.err;
  EXPECT_NE(r.out.find("SigBlk:\t0000000000000000\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SigIgn:\t0000000000000000\n"), std::string::npos) << r.out;
}

TEST(RunCaptured, TimesOut) {
  auto r = RunCaptured({"sleep", "30"}, EnvironmentWith({}), 200);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.Succeeded());
}

// Delivering a stop to thousands of ranks takes time; the ranks' SIGKILL
// must still come one kill grace after the stop was asked for, not one grace
// after the delivery ended.
TEST(RunJob, TheKillGraceCountsFromTheStopRequest) {
  using Clock = std::chrono::steady_clock;
  const std::string pid_file = ::testing::TempDir() + "engine_pid_" + std::to_string(getpid());
  JobRunOptions o;
  o.argv = {"/bin/sh", "-c", "echo $$ > \"$0\"; exec sleep 30", pid_file};
  o.env = EnvironmentWith({});
  o.timeout_ms = 300;      // the stop request
  o.kill_grace_ms = 3000;
  Clock::time_point stop_at{}, kill_at{};
  o.signal_all_ranks = [&](int sig) {
    if (sig != SIGKILL) {
      stop_at = Clock::now();
      std::this_thread::sleep_for(std::chrono::seconds(3));  // a slow delivery
      return true;
    }
    kill_at = Clock::now();
    int engine = 0;
    std::ifstream(pid_file) >> engine;
    if (engine > 0) kill(engine, SIGKILL);  // the ranks are gone: so is the engine
    return true;
  };
  RunJob(o);
  std::remove(pid_file.c_str());
  ASSERT_NE(stop_at, Clock::time_point{});
  ASSERT_NE(kill_at, Clock::time_point{}) << "no SIGKILL step";
  // From the request: 3 s. From the end of the delivery it would be 6 s.
  EXPECT_LT(kill_at - stop_at, std::chrono::seconds(5));
}

// An engine that outlives its job is stopped once it has done nothing for
// the time job_over allows, not while it still writes (the ranks' last
// output): here it writes for 20 rounds of 100 ms, far past the 300 ms
// allowed, then hangs the way Open MPI 4.1.4's mpirun can. It gets SIGTERM,
// which such an mpirun handles (it then removes its session directory).
TEST(RunJob, AnEngineIsStoppedAfterItsJobOnlyOnceItIsQuiet) {
  const std::string count_file = ::testing::TempDir() + "engine_rounds_" + std::to_string(getpid());
  JobRunOptions o;
  o.argv = {"/bin/sh", "-c",
            "i=0; while [ $i -lt 20 ]; do i=$((i+1)); echo $i > \"$0\"; sleep 0.1; done; exec sleep 600",
            count_file};
  o.env = EnvironmentWith({});
  o.job_over = [] { return std::optional(EngineLinger{std::chrono::milliseconds(300), /*term_first=*/true}); };
  const JobRunResult result = RunJob(o);
  int rounds = 0;
  std::ifstream(count_file) >> rounds;
  std::remove(count_file.c_str());
  EXPECT_TRUE(result.engine_killed_after_job);
  ASSERT_TRUE(WIFSIGNALED(result.wait_status));
  EXPECT_EQ(WTERMSIG(result.wait_status), SIGTERM);
  EXPECT_EQ(rounds, 20) << "stopped while it was still writing";
}

// An engine that notes SIGTERM in a file and sleeps on, stopped after its
// job as `linger` says: how it ended, and whether it saw SIGTERM. Perl
// (Debian's perl-base is essential) because the engine must stay idle in one
// process: a shell loop starts a process every round, which counts as activity.
struct OutlivingEngineEnd {
  JobRunResult result;
  bool saw_sigterm = false;
};
OutlivingEngineEnd RunEngineThatOutlivesSigterm(const std::string& name, EngineLinger linger) {
  const std::string seen_file = ::testing::TempDir() + name + "_" + std::to_string(getpid());
  std::remove(seen_file.c_str());
  JobRunOptions o;
  o.argv = {"perl", "-e",
            "$SIG{TERM} = sub { open(my $f, '>', $ARGV[0]) or die; print $f 'TERM'; close($f) }; sleep 1 while 1",
            seen_file};
  o.env = EnvironmentWith({});
  o.job_over = [linger] { return std::optional(linger); };
  // A guard only: without the SIGKILL step the test fails here instead of hanging.
  o.timeout_ms = 60000;
  o.kill_grace_ms = 1000;
  OutlivingEngineEnd end{RunJob(o)};
  std::string seen;
  std::ifstream(seen_file) >> seen;
  std::remove(seen_file.c_str());
  end.saw_sigterm = seen == "TERM";
  return end;
}

// An engine stopped with SIGTERM after its job that does not end on it gets
// SIGKILL after it.
TEST(RunJob, AnEngineThatOutlivesSigtermAfterItsJobIsKilled) {
  const auto [result, saw_sigterm] =
      RunEngineThatOutlivesSigterm("engine_sigterm", {std::chrono::milliseconds(300), /*term_first=*/true});
  EXPECT_FALSE(result.timed_out) << "no SIGKILL after the SIGTERM";
  EXPECT_TRUE(result.engine_killed_after_job);
  EXPECT_TRUE(saw_sigterm) << "no SIGTERM before the SIGKILL";
  ASSERT_TRUE(WIFSIGNALED(result.wait_status));
  EXPECT_EQ(WTERMSIG(result.wait_status), SIGKILL);
}

// After a failure's teardown (term_first false) the engine gets SIGKILL at
// once: Open MPI would hear SIGTERM only after the sleeps of its own kill
// sequence.
TEST(RunJob, AnEngineLeftAfterATeardownIsKilledWithoutSigterm) {
  const auto [result, saw_sigterm] =
      RunEngineThatOutlivesSigterm("engine_no_sigterm", {std::chrono::milliseconds(300), /*term_first=*/false});
  EXPECT_FALSE(result.timed_out);
  EXPECT_TRUE(result.engine_killed_after_job);
  EXPECT_FALSE(saw_sigterm) << "SIGTERM was sent";
  ASSERT_TRUE(WIFSIGNALED(result.wait_status));
  EXPECT_EQ(WTERMSIG(result.wait_status), SIGKILL);
}

// A launcher killed outright (SIGKILL) takes its engine with it: the engine
// would otherwise run on (here: sleep for 1,000 s) with nobody to report to.
TEST(RunJob, TheEngineEndsWhenTheLauncherIsKilled) {
  const std::string marker = "1000." + std::to_string(getpid());  // sleep's own argument: unique here
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    JobRunOptions o;
    o.argv = {"sleep", marker};
    o.env = EnvironmentWith({});
    RunJob(o);
    _exit(0);
  }
  ASSERT_TRUE(testing::WaitUntilRunning(marker, 60000)) << "the engine never started";
  kill(launcher, SIGKILL);
  int status = 0;
  waitpid(launcher, &status, 0);
  EXPECT_TRUE(testing::WaitUntilGone(marker, 30000).empty()) << "the engine outlived its launcher";
}

TEST(EnvironmentWith, OverridesWin) {
  setenv("GL_TEST_VAR", "old", 1);
  auto env = EnvironmentWith({{"GL_TEST_VAR", "new"}});
  int found = 0;
  for (const auto& kv : env) {
    if (kv.rfind("GL_TEST_VAR=", 0) == 0) {
      ++found;
      EXPECT_EQ(kv, "GL_TEST_VAR=new");
    }
  }
  EXPECT_EQ(found, 1);
}

}  // namespace
}  // namespace gpulaunch
