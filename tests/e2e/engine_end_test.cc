// End-to-end: how a job ends when its engine does not. Open MPI 4.1.4's
// mpirun sometimes never exits after its ranks; gpulaunch kills an engine
// that stays idle once every rank has ended, but never one that is still
// passing on (or waiting to pass on) the ranks' output. Real gpulaunch,
// real mpirun (behind a wrapper that hangs after it, for the first test).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/e2e/launch_helpers.h"

namespace fs = std::filesystem;

namespace gpulaunch {
namespace {

// The real mpirun's path, from PATH.
std::string RealMpirun() {
  std::istringstream path(getenv("PATH") ? getenv("PATH") : "");
  std::string dir;
  while (std::getline(path, dir, ':'))
    if (!dir.empty() && access((dir + "/mpirun").c_str(), X_OK) == 0) return dir + "/mpirun";
  return "";
}

// Open MPI 4.1.4's mpirun sometimes never exits after its job (every rank
// and daemon gone, mpirun asleep in its event loop). Here an mpirun first in
// PATH runs the real one, then stays as that hang would: gpulaunch kills it
// once every rank has ended with code 0, and the job's code is the ranks'.
TEST(Launch, AnEngineThatHangsAfterASuccessfulJobIsKilledAndTheJobSucceeds) {
  TempDir dir("hang");
  const std::string mpirun = RealMpirun();
  ASSERT_FALSE(mpirun.empty()) << "no mpirun in PATH";
  {
    std::ofstream wrapper(dir / "mpirun");
    wrapper << "#!/bin/sh\necho $$ > \"" << dir / "pid" << "\"\n\"" << mpirun << "\" \"$@\" || exit\nexec sleep 600\n";
  }
  fs::permissions(dir / "mpirun", fs::perms::owner_all);
  const CapturedRun run = RunCaptured({kLaunch, "-n", "4", "--oversubscribe", "--allow-run-as-root", "--no-summary",
                                       kBin + "/env_dump"},
                                      EnvironmentWith({{"PATH", dir.path.string() + ":" + getenv("PATH")}}), 120000);
  ASSERT_FALSE(run.timed_out) << "gpulaunch waited for the hung engine:\n" << run.err;
  EXPECT_EQ(ExitCode(run), 0) << run.err;
  EXPECT_NE(run.err.find("every rank ended with code 0, but mpirun did not exit; gpulaunch stopped it"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(RankLines(run.out).size(), 4u) << "the ranks' output was lost:\n" << run.out;
  int engine = 0;
  std::ifstream(dir / "pid") >> engine;
  ASSERT_GT(engine, 0);
  EXPECT_NE(kill(engine, 0), 0) << "the hung engine " << engine << " outlived gpulaunch";
}

// The other side of the test above: an engine that waits on a slow reader
// of the ranks' output is not hung. The ranks write more than a pipe holds
// (but not more than Open MPI queues: it stops reading a rank's output that
// the reader downstream does not take, and that rank never ends) into a pipe
// the test does not read until every rank has ended and the 10 s gpulaunch
// allows an idle engine have passed; then all of it arrives and gpulaunch
// killed nothing.
TEST(Launch, AnEngineWaitingOnASlowReaderIsNotKilled) {
  TempDir dir("slow-reader");
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  ASSERT_GT(fcntl(out[1], F_SETPIPE_SZ, 4096), 0);  // one page: the ranks' output is more
  const std::string err_path = dir / "stderr";
  const std::string rank_script = "seq 1 2000; touch \"$0.$OMPI_COMM_WORLD_RANK\"";  // 8.9 KB, then done.R
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(err, STDERR_FILENO);
    close(out[0]);
    execl(kLaunch.c_str(), kLaunch.c_str(), "-n", "2", "--oversubscribe", "--allow-run-as-root", "--no-summary",
          "/bin/sh", "-c", rank_script.c_str(), (dir / "done").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  const int done = WaitForFiles(dir.path, "done", 2, kStartMs);
  std::this_thread::sleep_for(std::chrono::seconds(13));  // past the 10 s an idle engine gets
  std::string got;
  char buf[65536];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string err = ReadText(err_path);
  ASSERT_EQ(done, 2) << "the ranks did not finish writing while their output waited:\n" << err;
  ASSERT_TRUE(WIFEXITED(status)) << err;
  EXPECT_EQ(WEXITSTATUS(status), 0) << err;
  EXPECT_EQ(err.find("did not exit; gpulaunch stopped it"), std::string::npos) << err;
  EXPECT_EQ(std::count(got.begin(), got.end(), '\n'), 4000) << "output lost; stderr:\n" << err;
}

// An engine's 0 is not the job's: here an mpirun first in PATH runs the real
// one and exits 0 whatever it said. Rank 1 exits 3 after rank 0 ended
// cleanly; gpulaunch, which heard how every rank ended, exits 3 and blames
// rank 1. (The real case: Open MPI 4.1's mpirun ending a job early, stopping
// ranks that still ran, and exiting 0; tests/e2e/scale_multihost_test.sh.)
TEST(Launch, AnEngineThatExitsZeroCannotHideAFailedRank) {
  TempDir dir("zero");
  const std::string mpirun = RealMpirun();
  ASSERT_FALSE(mpirun.empty()) << "no mpirun in PATH";
  {
    std::ofstream wrapper(dir / "mpirun");
    wrapper << "#!/bin/sh\n\"" << mpirun << "\" \"$@\"\nexit 0\n";
  }
  fs::permissions(dir / "mpirun", fs::perms::owner_all);
  const CapturedRun run = RunCaptured({kLaunch, "-n", "2", "--oversubscribe", "--allow-run-as-root", "--no-summary",
                                       "/bin/sh", "-c", "[ \"$RANK\" = 1 ] && sleep 1 && exit 3; exit 0"},
                                      EnvironmentWith({{"PATH", dir.path.string() + ":" + getenv("PATH")}}), 120000);
  ASSERT_FALSE(run.timed_out) << run.err;
  EXPECT_EQ(ExitCode(run), 3) << run.err;
  EXPECT_NE(run.err.find("rank 1 on "), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("exited with code 3"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace gpulaunch
