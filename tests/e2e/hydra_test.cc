// End-to-end: MPI programs started by the engine that matches the MPI they
// link. The same C program (tests/e2e/mpi/mpi_hello.c) is built against
// MPICH (mpi_hello_mpich, started by MPICH's real mpiexec.hydra) and against
// Open MPI (mpi_hello_ompi, by mpirun). Without MPICH installed the Hydra
// tests skip, saying so.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "common/strings.h"
#include "tests/e2e/launch_helpers.h"

namespace fs = std::filesystem;

namespace gpulaunch {
namespace {

const std::string kMpich = kBin + "/mpi_hello_mpich";
const std::string kOmpi = kBin + "/mpi_hello_ompi";

bool HaveHydra() {
  for (const std::string& dir : Split(getenv("PATH") ? getenv("PATH") : "", ':')) {
    if (access((dir + "/mpiexec.hydra").c_str(), X_OK) == 0) return fs::exists(kMpich);
  }
  return false;
}

#define REQUIRE_HYDRA()                                                                                  \
  if (!HaveHydra()) GTEST_SKIP() << "MPICH is not installed (mpiexec.hydra, mpicc.mpich: apt-get install " \
                                    "mpich libmpich-dev)"

// mpi_hello's lines, as key=value pairs by MPI rank.
std::map<int, std::map<std::string, std::string>> HelloLines(const std::string& out) {
  std::map<int, std::map<std::string, std::string>> ranks;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("mpi_rank=");
    if (at == std::string::npos) continue;
    std::map<std::string, std::string> kv;
    for (const std::string& field : Split(line.substr(at), ' ')) {
      const size_t eq = field.find('=');
      if (eq != std::string::npos) kv[field.substr(0, eq)] = field.substr(eq + 1);
    }
    ranks[std::stoi(kv["mpi_rank"])] = kv;
  }
  return ranks;
}

// The engine line of a --dry-run.
std::string EngineLine(const std::string& dry_run) {
  std::smatch m;
  static const std::regex re("(^|\n)engine: ([^\n]*)");
  return std::regex_search(dry_run, m, re) ? m[2].str() : "";
}

TEST(Hydra, AutoStartsAnMpichProgramWithHydraAsOneWorld) {
  REQUIRE_HYDRA();
  const CapturedRun dry = Launch({"--dry-run", "-n", "4", "--oversubscribe", kMpich});
  ASSERT_EQ(ExitCode(dry), 0) << dry.err;
  EXPECT_EQ(EngineLine(dry.out).rfind("hydra: ", 0), 0u) << dry.out;
  EXPECT_NE(dry.out.find("libmpich.so.12"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("mpiexec.hydra -f {job_dir}/hostfile -n 4"), std::string::npos) << dry.out;

  for (const std::string engine : {"auto", "hydra"}) {
    const CapturedRun run = Launch({"-n", "4", "--oversubscribe", "--launcher", engine, kMpich});
    ASSERT_EQ(ExitCode(run), 0) << engine << ": " << run.out << run.err;
    const auto ranks = HelloLines(run.out);
    ASSERT_EQ(ranks.size(), 4u) << "not one world of 4 (N singletons print rank 0 four times): " << run.out;
    for (const auto& [r, kv] : ranks) {
      EXPECT_EQ(kv.at("mpi_world"), "4") << run.out;
      EXPECT_EQ(kv.at("sum"), "6") << run.out;
      EXPECT_EQ(kv.at("rank"), std::to_string(r)) << "RANK differs from MPI's rank";
      EXPECT_EQ(kv.at("world"), "4");
      EXPECT_EQ(kv.at("local"), std::to_string(r));
    }
  }
}

// Two ranks on two cores are bound, one core each, as the plan says, and
// the shim's variables and Hydra's own are the only engine traces the job sees.
TEST(Hydra, RanksRunOnTheirPlannedCoresWithTheEnvironmentContract) {
  REQUIRE_HYDRA();
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs 2 CPUs";
  const CapturedRun run = Launch({"-n", "2", "--launcher", "hydra", kMpich});
  ASSERT_EQ(ExitCode(run), 0) << run.out << run.err;
  const auto ranks = HelloLines(run.out);
  ASSERT_EQ(ranks.size(), 2u) << run.out;
  for (const auto& [r, kv] : ranks) {
    EXPECT_EQ(kv.at("affinity"), kv.at("cpuset")) << "rank " << r << " is not bound to its planned cpus";
    EXPECT_EQ(kv.at("affinity").find(','), std::string::npos);
    EXPECT_EQ(kv.at("affinity").find('-'), std::string::npos) << "one core each";
  }
  EXPECT_NE(ranks.at(0).at("affinity"), ranks.at(1).at("affinity"));
  const CapturedRun env = Launch({"-n", "2", "--launcher", "hydra", "env"});
  ASSERT_EQ(ExitCode(env), 0) << env.err;
  EXPECT_EQ(env.out.find("GPULAUNCH_ENGINE_IDENTITY"), std::string::npos) << "the shim's setting leaked into the job";
  EXPECT_EQ(env.out.find("GPULAUNCH_SLOT_TABLE"), std::string::npos);
  EXPECT_NE(env.out.find("PMI_RANK=1"), std::string::npos) << env.out;
  EXPECT_NE(env.out.find("LOCAL_WORLD_SIZE=2"), std::string::npos) << env.out;
}

TEST(Hydra, TheFailingRanksExitCodeIsTheJobsAndTagsAreHydras) {
  REQUIRE_HYDRA();
  const CapturedRun run = Launch({"-n", "3", "--oversubscribe", "--launcher", "hydra", "--tag", kMpich, "--exit-rank",
                                  "2", "--exit-code", "5"});
  EXPECT_EQ(ExitCode(run), 5) << run.out << run.err;
  EXPECT_NE(run.out.find("[2] mpi_rank=2 mpi_world=3"), std::string::npos) << run.out;
}

// A rank killed by SIGKILL: Hydra kills the others' shims at once; their
// jobs go with them, and the job's code is 137.
TEST(Hydra, AKilledRankGives137AndLeavesNothingBehind) {
  REQUIRE_HYDRA();
  const std::string marker = "gl-e2e-hydra-kill-" + std::to_string(getpid());
  const CapturedRun run = Launch({"-n", "4", "--oversubscribe", "--launcher", "hydra", "--no-summary",
                                  kBin + "/env_dump", "--kill-self", "1", "--sleep", "60", "--marker", marker});
  EXPECT_EQ(ExitCode(run), 137) << run.err;
  EXPECT_NE(run.err.find("rank 1 on"), std::string::npos) << run.err;
  EXPECT_TRUE(WaitUntilGone(marker, kGoneAfterExitMs).empty()) << "ranks left behind";
}

// SIGTERM and then Ctrl-C reach every rank through the shims (Hydra itself
// would kill them outright), and nothing of the job is left.
TEST(Hydra, SignalsReachEveryRankAndNothingIsLeft) {
  REQUIRE_HYDRA();
  for (const int sig : {SIGTERM, SIGINT}) {
    TempDir dir("hydra-sig");
    const std::string marker = "gl-e2e-hydra-sig-" + std::to_string(getpid()) + "-" + std::to_string(sig);
    const pid_t pid = StartInBackground({kLaunch, "-n", "4", "--oversubscribe", "--kill-grace", "60", "--no-summary",
                                         kMpich, "--wait-dir", dir.path.string(), "--marker", marker});
    ASSERT_EQ(WaitForFiles(dir.path, "ready", 4, kStartMs), 4) << "ranks did not start";
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    const std::string name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
    EXPECT_EQ(FilesPresent(dir.path, name, 4), 4) << "not every rank saw " << name;
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
    EXPECT_TRUE(WaitUntilGone(marker, kGoneAfterExitMs).empty()) << "ranks left behind after " << name;
  }
}

// A program is refused before anything runs when the engine cannot start
// the MPI it links: each rank would be a singleton.
TEST(Hydra, AProgramOfTheOtherMpiIsRefusedWithTheFix) {
  REQUIRE_HYDRA();
  TempDir dir("hydra-refuse");
  const CapturedRun ompi = Launch({"-n", "2", "--launcher", "hydra", kOmpi});
  EXPECT_EQ(ExitCode(ompi), 2) << ompi.out << ompi.err;
  EXPECT_NE(ompi.err.find("links libmpi.so.40: Open MPI, which hydra cannot start"), std::string::npos) << ompi.err;
  EXPECT_NE(ompi.err.find("--launcher mpirun"), std::string::npos) << ompi.err;
  EXPECT_TRUE(ompi.out.empty()) << "something ran: " << ompi.out;
  const CapturedRun mpich = Launch({"-n", "2", "--allow-run-as-root", "--launcher", "mpirun", kMpich});
  EXPECT_EQ(ExitCode(mpich), 2) << mpich.out << mpich.err;
  EXPECT_NE(mpich.err.find("libmpich.so.12"), std::string::npos) << mpich.err;
  EXPECT_NE(mpich.err.find("singleton"), std::string::npos) << mpich.err;
  EXPECT_TRUE(mpich.out.empty()) << "something ran: " << mpich.out;

  // Where no engine starts the program's MPI, auto refuses too, naming what
  // to install: here a PATH that holds mpirun but not mpiexec.hydra.
  const fs::path bin = dir.path / "bin";
  fs::create_directories(bin);
  for (const std::string& dir_name : Split(getenv("PATH"), ':')) {
    if (fs::exists(fs::path(dir_name) / "mpirun")) {
      fs::create_symlink(fs::path(dir_name) / "mpirun", bin / "mpirun");
      break;
    }
  }
  const CapturedRun none = RunCaptured({kLaunch, "-n", "2", "--allow-run-as-root", kMpich},
                                       EnvironmentWith({{"PATH", bin.string()}}), 60000);
  EXPECT_EQ(ExitCode(none), 2) << none.out << none.err;
  EXPECT_NE(none.err.find("no engine here starts it"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("apt-get install mpich"), std::string::npos) << none.err;
  EXPECT_TRUE(none.out.empty()) << "something ran: " << none.out;
}

// A program started through a script hides its MPI from the ELF check: an
// Open MPI program (linking the runtime) started by Hydra becomes N
// singletons, the runtime tells gpulaunch, and the launch fails naming it.
TEST(Hydra, SingletonsReportedByTheRuntimeFailTheLaunch) {
  REQUIRE_HYDRA();
  TempDir dir("hydra-singletons");
  const std::string script = dir / "wrap.sh";
  std::ofstream(script) << "#!/bin/sh\nexec \"$@\"\n";
  fs::permissions(script, fs::perms::owner_all);
  const CapturedRun run = Launch({"-n", "2", "--oversubscribe", "--no-summary", "--launcher", "hydra", script,
                                  kBin + "/transformer_train", "--steps", "1"});
  EXPECT_NE(ExitCode(run), 0) << run.out << run.err;
  EXPECT_NE(run.err.find("the 2 ranks ran as 2 MPI singletons"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("hydra does not start"), std::string::npos) << run.err;
}

// auto: the engine of the program's MPI; a script or a program linking no
// MPI gets the default engine (mpirun outside Slurm).
TEST(Hydra, AutoFollowsTheProgramsMpi) {
  TempDir dir("hydra-auto");
  const std::string script = dir / "job.sh";
  std::ofstream(script) << "#!/bin/sh\nexec \"$@\"\n";
  fs::permissions(script, fs::perms::owner_all);
  struct Case {
    std::string program, engine, why;
  };
  std::vector<Case> cases = {{kOmpi, "mpirun: ", "libmpi.so.40: Open MPI"},
                             {script, "mpirun: ", "a script"},
                             {kBin + "/env_dump", "mpirun: ", "links no MPI library"}};
  if (HaveHydra()) cases.push_back({kMpich, "hydra: ", "libmpich.so.12"});
  for (const Case& c : cases) {
    const CapturedRun dry = Launch({"--dry-run", "-n", "2", c.program});
    ASSERT_EQ(ExitCode(dry), 0) << c.program << ": " << dry.err;
    const std::string line = EngineLine(dry.out);
    EXPECT_EQ(line.rfind(c.engine, 0), 0u) << c.program << ": " << line;
    EXPECT_NE(line.find(c.why), std::string::npos) << c.program << ": " << line;
    // plan --explain says the same of the program it is given.
    const CapturedRun plan = Launch({"plan", "-n", "2", "--explain", "--program", c.program});
    ASSERT_EQ(ExitCode(plan), 0) << c.program << ": " << plan.err;
    EXPECT_EQ(EngineLine(plan.out), line) << plan.out;
  }
}

}  // namespace
}  // namespace gpulaunch
