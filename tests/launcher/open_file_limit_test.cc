// The open-file limit gpulaunch raises for itself and its engine, and the
// shim puts back for the job.
#include "launcher/base/open_file_limit.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace gpulaunch {
namespace {

// Sets this process's soft limit for one test, and puts back what it was.
class FileLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved_), 0);
    if (saved_.rlim_max != RLIM_INFINITY && saved_.rlim_max < 1000) GTEST_SKIP() << "hard open-file limit below 1000";
    unsetenv(kJobFileLimitEnv);
  }
  void TearDown() override {
    setrlimit(RLIMIT_NOFILE, &saved_);
    unsetenv(kJobFileLimitEnv);
  }
  static void SetSoft(rlim_t soft) {
    rlimit lim{};
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
    lim.rlim_cur = soft;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0);
  }
  static rlim_t Soft() {
    rlimit lim{};
    getrlimit(RLIMIT_NOFILE, &lim);
    return lim.rlim_cur;
  }
  rlimit saved_{};
};

TEST_F(FileLimitTest, RaisesTheSoftLimitToWhatIsNeededAndNoFurther) {
  SetSoft(200);
  auto raised = RaiseOpenFileLimit(500, "the test needs");
  ASSERT_TRUE(raised.ok()) << raised.status().ToString();
  EXPECT_EQ(raised->before, 200u);
  EXPECT_EQ(raised->after, 500u);
  EXPECT_EQ(Soft(), 500u);
  EXPECT_EQ(JobFileLimitSetting(*raised), "500 200");
  auto enough = RaiseOpenFileLimit(300, "the test needs");  // already enough: nothing changes
  ASSERT_TRUE(enough.ok());
  EXPECT_EQ(enough->before, 500u);
  EXPECT_EQ(enough->after, 500u);
  EXPECT_EQ(Soft(), 500u);
  EXPECT_EQ(JobFileLimitSetting(*enough), "");
}

TEST_F(FileLimitTest, MoreThanTheHardLimitIsRefusedWithTheLimitAndTheFix) {
  if (saved_.rlim_max == RLIM_INFINITY) GTEST_SKIP() << "no hard open-file limit here";
  SetSoft(200);
  const auto refused = RaiseOpenFileLimit(saved_.rlim_max + 1, "300 ranks start here: they need");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);  // exit 2: the user's to fix
  const std::string& m = refused.status().message();
  EXPECT_NE(m.find("300 ranks start here: they need about " + std::to_string(saved_.rlim_max + 1) + " open files"),
            std::string::npos) << m;
  EXPECT_NE(m.find("hard open-file limit here is " + std::to_string(saved_.rlim_max)), std::string::npos) << m;
  EXPECT_NE(m.find("ulimit -Hn"), std::string::npos) << m;
  EXPECT_EQ(Soft(), 200u) << "a refused raise changes nothing";
}

TEST_F(FileLimitTest, TheShimPutsBackTheUsersLimitOnlyWhereGpulaunchRaisedIt) {
  SetSoft(500);
  setenv(kJobFileLimitEnv, "500 200", 1);
  RestoreJobFileLimit();
  EXPECT_EQ(Soft(), 200u);
  EXPECT_EQ(getenv(kJobFileLimitEnv), nullptr) << "the job does not see the setting";
  // Another host's own limit (not the one gpulaunch set) stays.
  SetSoft(300);
  setenv(kJobFileLimitEnv, "500 200", 1);
  RestoreJobFileLimit();
  EXPECT_EQ(Soft(), 300u);
  EXPECT_EQ(getenv(kJobFileLimitEnv), nullptr);
  for (const char* nonsense : {"", "500", "500 x", "x 200", "500 0", "500 -1"}) {
    SetSoft(500);
    setenv(kJobFileLimitEnv, nonsense, 1);
    RestoreJobFileLimit();
    EXPECT_EQ(Soft(), 500u) << "'" << nonsense << "'";
  }
}

// Open MPI passes its launch agent on to the ranks on other hosts: the shim
// removes the one gpulaunch set, and leaves a user's own.
TEST_F(FileLimitTest, TheShimRemovesOnlyTheLaunchAgentGpulaunchSet) {
  setenv("OMPI_MCA_orte_launch_agent", "/opt/gl/bin/gpulaunch-shim --raise-open-files 2176 orted", 1);
  DropDaemonLaunchAgent();
  EXPECT_EQ(getenv("OMPI_MCA_orte_launch_agent"), nullptr);
  setenv("OMPI_MCA_orte_launch_agent", "/users/own/orted", 1);
  DropDaemonLaunchAgent();
  ASSERT_NE(getenv("OMPI_MCA_orte_launch_agent"), nullptr);
  EXPECT_STREQ(getenv("OMPI_MCA_orte_launch_agent"), "/users/own/orted");
  unsetenv("OMPI_MCA_orte_launch_agent");
}

}  // namespace
}  // namespace gpulaunch
