// `gpulaunch check --storage` on this machine, with the real gpulaunch and
// gpulaunch-probe: a writable directory passes and is left clean; one that
// cannot be written fails naming the host and the reason.
#include <gtest/gtest.h>

#include <filesystem>

#include "launcher/host_identity.h"
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
  EXPECT_EQ(ExitCode(Launch({"check"})), 2);
  EXPECT_EQ(ExitCode(Launch({"check", "--storage", "/tmp", "--size", "x"})), 2);
}

}  // namespace
}  // namespace gpulaunch
