#include "launcher/base/process.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

namespace gpulaunch {
namespace {

TEST(RunCaptured, CapturesOutputAndStatus) {
  auto r = RunCaptured({"sh", "-c", "echo out; echo err >&2; exit 4"}, EnvironmentWith({}), 10000);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  ASSERT_TRUE(WIFEXITED(r.wait_status));
  EXPECT_EQ(WEXITSTATUS(r.wait_status), 4);
}

TEST(RunCaptured, TimesOut) {
  auto r = RunCaptured({"sleep", "30"}, EnvironmentWith({}), 200);
  EXPECT_TRUE(r.timed_out);
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
