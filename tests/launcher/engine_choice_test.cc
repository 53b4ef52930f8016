// Which engine runs a program: the MPI it links (read from the real
// programs the tests build against each MPI), the refusals, and Hydra's
// hostfile, command and rank variables.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "launcher/base/slot_table.h"
#include "launcher/engine/engine.h"
#include "launcher/engine/hydra_engine.h"
#include "launcher/engine/program_mpi.h"

namespace gpulaunch {
namespace {

const std::string kBin = GL_BIN_DIR;

TEST(ProgramMpi, LibraryNamesMapToTheirFamily) {
  for (const char* ompi : {"libmpi.so.40", "libmpi.so.20", "libmpi_cxx.so.40", "libmpi_mpifh.so.40",
                           "libmpi_usempif08.so.40", "libopen-pal.so.40"}) {
    EXPECT_EQ(MpiFamilyOfLibrary(ompi), MpiFamily::kOpenMpi) << ompi;
  }
  for (const char* mpich : {"libmpi.so.12", "libmpich.so.12", "libmpichcxx.so.12", "libmpifort.so.12",
                            "libmpi_cray.so.12", "libmpicxx.so.12"}) {
    EXPECT_EQ(MpiFamilyOfLibrary(mpich), MpiFamily::kMpich) << mpich;
  }
  for (const char* other : {"libc.so.6", "libmpi.so", "libmpix.so.1", "libhwloc.so.15", "libucp.so.0"}) {
    EXPECT_FALSE(MpiFamilyOfLibrary(other).has_value()) << other;
  }
}

TEST(ProgramMpi, ReadsRealProgramsDirectlyAndThroughTheirLibraries) {
  const ProgramMpi ompi = ReadProgramMpi(kBin + "/mpi_hello_ompi");
  ASSERT_EQ(ompi.family, MpiFamily::kOpenMpi) << ompi.why_none;
  EXPECT_EQ(ompi.library, "libmpi.so.40");
  EXPECT_TRUE(ompi.needed_by.empty());

  const ProgramMpi via = ReadProgramMpi(kBin + "/mpi_hello_via_lib");
  ASSERT_EQ(via.family, MpiFamily::kOpenMpi) << via.why_none;
  EXPECT_NE(via.needed_by.find("libgl_test_mpi_wrap.so"), std::string::npos) << via.needed_by;
  EXPECT_NE(via.Describe("./x").find("(through "), std::string::npos);

  if (std::filesystem::exists(kBin + "/mpi_hello_mpich")) {
    const ProgramMpi mpich = ReadProgramMpi(kBin + "/mpi_hello_mpich");
    EXPECT_EQ(mpich.family, MpiFamily::kMpich) << mpich.why_none;
    EXPECT_EQ(mpich.library, "libmpich.so.12");
  }
}

TEST(ProgramMpi, ScriptsMissingAndMpiFreeProgramsHaveNoPreference) {
  const std::string script = ::testing::TempDir() + "/gl_engine_choice_job.sh";
  std::ofstream(script) << "#!/bin/sh\nexec ./mpi_hello_ompi\n";
  const ProgramMpi s = ReadProgramMpi(script);
  EXPECT_FALSE(s.family.has_value());
  EXPECT_NE(s.why_none.find("script"), std::string::npos);
  const ProgramMpi missing = ReadProgramMpi("./no-such-program-here");
  EXPECT_FALSE(missing.family.has_value());
  EXPECT_NE(missing.why_none.find("not found"), std::string::npos);
  const ProgramMpi in_path = ReadProgramMpi("true");  // found through PATH, as exec finds it
  EXPECT_FALSE(in_path.family.has_value());
  EXPECT_NE(in_path.why_none.find("links no MPI"), std::string::npos) << in_path.why_none;
  std::filesystem::remove(script);
}

TEST(ChooseEngine, MatchesTheProgramOrRefusesIt) {
  if (getenv("SLURM_JOB_ID")) GTEST_SKIP() << "inside a Slurm allocation auto means srun";
  auto ompi = ChooseEngine("auto", kBin + "/mpi_hello_ompi");
  ASSERT_TRUE(ompi.ok()) << ompi.status().message();
  EXPECT_EQ(ompi->engine->Name(), "mpirun");
  EXPECT_NE(ompi->reason.find("libmpi.so.40"), std::string::npos) << ompi->reason;
  auto none = ChooseEngine("auto", "true");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->engine->Name(), "mpirun");

  auto refused = ChooseEngine("hydra", kBin + "/mpi_hello_ompi");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("singleton"), std::string::npos);
  auto plain = ChooseEngine("hydra", "true");  // a program with no MPI runs under any engine
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->engine->Name(), "hydra");
  auto unknown = ChooseEngine("pbsdsh", "true");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("hydra"), std::string::npos);
}

Placement RanksOn(const std::vector<std::string>& hosts) {
  Placement p;
  for (size_t r = 0; r < hosts.size(); ++r) {
    RankSlot slot;
    slot.rank = static_cast<int>(r);
    slot.host = hosts[r];
    p.ranks.push_back(slot);
    if (std::find(p.hosts.begin(), p.hosts.end(), hosts[r]) == p.hosts.end()) p.hosts.push_back(hosts[r]);
  }
  return p;
}

TEST(HydraEngine, HostfilePlacesEveryRankWhereThePlanDoes) {
  std::ostringstream blocks;
  WriteHydraHostfile(blocks, RanksOn({"a", "a", "b", "b", "b"}));
  EXPECT_EQ(blocks.str(), "a:2\nb:3\n");
  EXPECT_TRUE(HostsHoldOneRunEach(RanksOn({"a", "a", "b", "b", "b"})));
  // Interleaved: one line per run, and Hydra's local ids (per line) are not the plan's.
  std::ostringstream interleaved;
  WriteHydraHostfile(interleaved, RanksOn({"a", "b", "a", "a"}));
  EXPECT_EQ(interleaved.str(), "a:1\nb:1\na:2\n");
  EXPECT_FALSE(HostsHoldOneRunEach(RanksOn({"a", "b", "a", "a"})));
}

TEST(HydraEngine, TheJobNamesHydrasRankVariablesAndItsCommandReadsTheHostfile) {
  if (getenv("HYDRA_LAUNCHER") || getenv("SLURM_JOB_ID")) GTEST_SKIP() << "the launcher is the user's or Slurm's here";
  LaunchPlan plan;
  plan.placement = RanksOn({"a", "b", "a"});
  plan.program = {"./job", "--x"};
  EngineSettings s;
  s.shim = "/opt/gl/gpulaunch-shim";
  s.tag = true;
  // No environment through Hydra's port (-genvnone): between hosts it
  // travels through the shim's ssh agent, and the port is on one interface.
  const auto argv = BuildHydraArgv(plan, s, "/tmp/j/hostfile", {"10.0.0.1", "eth7"});
  EXPECT_EQ(argv, (std::vector<std::string>{"mpiexec.hydra", "-f", "/tmp/j/hostfile", "-n", "3", "-launcher", "ssh",
                                            "-launcher-exec", "/opt/gl/gpulaunch-hydra-ssh", "-genvnone", "-iface",
                                            "eth7", "-disable-auto-cleanup", "-prepend-rank",
                                            "/opt/gl/gpulaunch-shim", "--", "./job", "--x"}));
  s.loopback_only = true;
  s.tag = false;
  const HydraListen lo = HydraListenFor({"a"}, true);
  EXPECT_EQ(lo.address, "127.0.0.1");
  EXPECT_EQ(lo.iface, "lo");
  const auto local = BuildHydraArgv(plan, s, "h", lo);
  EXPECT_EQ(std::vector<std::string>(local.begin() + 5, local.begin() + 10),
            (std::vector<std::string>{"-launcher", "fork", "-genvnone", "-iface", "lo"}));

  // An installation of its own (BIN/ and BIN/../lib/gpulaunch/), removed
  // whatever the test's outcome: the suite leaves nothing in /tmp.
  struct Scratch {
    std::filesystem::path root = std::filesystem::path(::testing::TempDir()) /
                                 ("gl_hydra_job." + std::to_string(getpid()));
    ~Scratch() {
      std::error_code ec;
      std::filesystem::remove_all(root, ec);
    }
  } scratch;
  const std::filesystem::path dir = scratch.root / "job";
  const std::filesystem::path bin = scratch.root / "bin";
  std::filesystem::create_directories(dir);
  std::filesystem::create_directories(bin);
  s.shim = (bin / "gpulaunch-shim").string();
  HydraEngine hydra;
  // Without the listener library beside the shim, Hydra does not start.
  auto refused = hydra.PrepareJob(plan, s, dir);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("libgpulaunch-hydra-listener.so"), std::string::npos);
  std::filesystem::create_directories(HydraListenerLibrary(bin).parent_path());
  std::ofstream(HydraListenerLibrary(bin)) << "";  // PrepareJob checks that it is there
  auto job = hydra.PrepareJob(plan, s, dir);
  ASSERT_TRUE(job.ok()) << job.status().message();
  // mpiexec.hydra alone gets the library and the address; it drops both.
  EXPECT_EQ(job->env.at("LD_PRELOAD").rfind(HydraListenerLibrary(bin).string(), 0), 0u);
  EXPECT_EQ(job->env.at("GPULAUNCH_HYDRA_LISTEN_ADDR"), "127.0.0.1");
  EXPECT_EQ(job->env.at(kEngineIdentityEnv), "PMI_RANK PMI_SIZE") << "interleaved: no local rank to check";
  std::ifstream hostfile(dir / "hostfile");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(hostfile)), std::istreambuf_iterator<char>()), "a:1\nb:1\na:1\n");
  plan.placement = RanksOn({"a", "a", "b"});
  EXPECT_EQ(hydra.PrepareJob(plan, s, dir)->env.at(kEngineIdentityEnv), "PMI_RANK PMI_SIZE MPI_LOCALRANKID");
  std::filesystem::remove_all(dir);

  EXPECT_EQ(hydra.SplitByTask("[0] x\n[1] y\n[1] z\nnoise\n"),
            (std::map<int, std::string>{{0, "x\n"}, {1, "y\nz\n"}}));
  const auto each = hydra.OnEachHostArgv({"a", "b"}, "/p", false);
  const auto hydra_at = std::find(each.begin(), each.end(), "mpiexec.hydra");
  ASSERT_NE(hydra_at, each.end());
  const std::vector<std::string> flags(hydra_at, each.end());
  ASSERT_GE(flags.size(), 10u);
  EXPECT_EQ(std::vector<std::string>(flags.begin(), flags.begin() + 8),
            (std::vector<std::string>{"mpiexec.hydra", "-hosts", "a,b", "-n", "2", "-launcher", "ssh", "-launcher-exec"}));
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-genvnone"), flags.end());
  EXPECT_EQ(std::vector<std::string>(flags.end() - 2, flags.end()), (std::vector<std::string>{"-prepend-rank", "/p"}));
}

}  // namespace
}  // namespace gpulaunch
