// `gpulaunch check --storage` on this machine, with the real gpulaunch and
// gpulaunch-probe: a writable directory passes and is left clean; one that
// cannot be written fails naming the host and the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "launcher/base/host_identity.h"
#include "tests/e2e/launch_helpers.h"

namespace fs = std::filesystem;

namespace gpulaunch {
namespace {

TEST(CheckStorage, AWritableDirectoryPassesAndIsLeftAsItWas) {
  TempDir dir("storage");
  const CapturedRun run = Launch({"check", "--storage", dir.path.string(), "--size", "2"});
  EXPECT_EQ(ExitCode(run), 0) << run.out << run.err;
  EXPECT_NE(run.out.find("(1 hosts, 2 MiB per host)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(LocalHostname()), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(" ok "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("1/1"), std::string::npos) << run.out;
  EXPECT_TRUE(fs::is_empty(dir.path));  // nothing left behind
}

TEST(CheckStorage, AnUnwritableDirectoryFailsNamingTheHost) {
  const CapturedRun run = Launch({"check", "--storage", "/proc/gl-no-such-dir", "--format", "json"});
  EXPECT_EQ(ExitCode(run), 1) << run.out << run.err;
  EXPECT_NE(run.out.find("\"ok\":false"), std::string::npos) << run.out;
  EXPECT_NE(run.err.find("gpulaunch: check --storage: " + LocalHostname() + ": cannot create /proc/gl-no-such-dir"),
            std::string::npos)
      << run.err;
}

TEST(CheckStorage, UsageErrorsExitTwo) {
  EXPECT_EQ(ExitCode(Launch({"check", "--frobnicate"})), 2);
  EXPECT_EQ(ExitCode(Launch({"check", "--storage", "/tmp", "--size", "x"})), 2);
}

TEST(CheckPreflight, ThisMachinePassesAndAPlantedClockOffsetAndMissingBinaryAreNamed) {
  TempDir dir("preflight");
  CapturedRun run = Launch({"check", "--binary", "/bin/sh", "--save", dir / "base.json"});
  EXPECT_EQ(ExitCode(run), 0) << run.out << run.err;
  EXPECT_NE(run.out.find("reach    clock    dns      versions mtu      nic      gpu-nic  gpus     ports    tmp      binary"),
            std::string::npos)
      << run.out;
  EXPECT_TRUE(fs::exists(dir / "base.json"));
  // The local probe inherits the environment: its clock source runs 5 s ahead.
  run = RunCaptured({kLaunch, "check", "--binary", "/opt/gl-no-such-job", "--compare", dir / "base.json"},
                    EnvironmentWith({{"GPULAUNCH_CHECK_CLOCK_OFFSET_S", "5"}}), 60000);
  EXPECT_EQ(ExitCode(run), 1) << run.out << run.err;
  const std::string host = LocalHostname();
  EXPECT_NE(run.err.find("gpulaunch: check: " + host + ": clock: offset +5."), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("over the 1.00 s allowed"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("gpulaunch: check: " + host + ": binary: /opt/gl-no-such-job does not exist"),
            std::string::npos)
      << run.err;
  // The same machine a moment later: its recorded facts did not change.
  EXPECT_NE(run.out.find("no changes since " + (dir / "base.json")), std::string::npos) << run.out;
}

TEST(CheckPreflight, ABadBaselineIsAUsageError) {
  TempDir dir("baseline");
  std::ofstream(dir / "bad.json") << "{\"format\":\"something else\"}";
  const CapturedRun run = Launch({"check", "--compare", dir / "bad.json"});
  EXPECT_EQ(ExitCode(run), 2) << run.err;
  EXPECT_NE(run.err.find("not a baseline written by 'gpulaunch check --save'"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace gpulaunch
