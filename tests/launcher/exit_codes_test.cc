#include "launcher/base/exit_codes.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

int Exited(int code) { return code << 8; }
int Signaled(int sig) { return sig; }

TEST(ExitCodes, Mapping) {
  EXPECT_EQ(JobExitCode(Exited(0), true), 0);
  EXPECT_EQ(JobExitCode(Exited(3), true), 3);
  EXPECT_EQ(JobExitCode(Exited(137), true), 137);        // engine reports a rank's SIGKILL
  EXPECT_EQ(JobExitCode(Signaled(9), true), 128 + 9);     // the engine itself was killed
  EXPECT_EQ(JobExitCode(Exited(1), false), kExitLaunchFailure);  // no rank ever started
  EXPECT_EQ(JobExitCode(Exited(0), false), 0);
}

}  // namespace
}  // namespace gpulaunch
