// The rank's own cgroup (launcher/base/rank_cgroup.h): where the shim finds
// its cgroup v2 folder, and, where this process may make cgroups (root, with
// cgroup v2 and cgroup.kill), that a helper which left the shim's process
// tree dies with a SIGKILLed shim and the cgroup goes with it.
#include "launcher/base/rank_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "common/strings.h"

namespace gpulaunch {
namespace {

constexpr const char kMountinfo[] =
    "22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n"
    "30 22 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";

TEST(RankCgroup, FolderIsTheMountPlusTheOwnPath) {
  EXPECT_EQ(OwnCgroup2Folder("0::/user.slice/session-3.scope\n", kMountinfo),
            "/sys/fs/cgroup/user.slice/session-3.scope");
  EXPECT_EQ(OwnCgroup2Folder("0::/\n", kMountinfo), "/sys/fs/cgroup");
  // A hybrid host: v1 controllers first, the v2 hierarchy under unified/.
  EXPECT_EQ(OwnCgroup2Folder("4:memory:/x\n1:cpu:/\n0::/\n",
                             "40 30 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
                             "41 30 0:31 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"),
            "/sys/fs/cgroup/unified");
}

TEST(RankCgroup, AMountOfPartOfTheHierarchyAndEscapedNames) {
  // The mount shows /job_7 of the hierarchy (a container's view): the path
  // below it is what is left of the process's own.
  EXPECT_EQ(OwnCgroup2Folder("0::/job_7/step_0/task_1\n",
                             "50 1 0:40 /job_7 /mnt/my\\040cg rw - cgroup2 none rw\n"),
            "/mnt/my cg/step_0/task_1");
  EXPECT_EQ(OwnCgroup2Folder("0::/job_7\n", "50 1 0:40 /job_7 /cg rw - cgroup2 none rw\n"), "/cg");
  EXPECT_EQ(OwnCgroup2Folder("0::/job_70\n", "50 1 0:40 /job_7 /cg rw - cgroup2 none rw\n"), "");
}

TEST(RankCgroup, NoneWithoutAV2Hierarchy) {
  EXPECT_EQ(OwnCgroup2Folder("4:memory:/x\n", kMountinfo), "");                      // v1 only
  EXPECT_EQ(OwnCgroup2Folder("0::/\n", "22 1 0:21 / /sys rw - sysfs sysfs rw\n"), "");  // not mounted
  EXPECT_EQ(OwnCgroup2Folder("", ""), "");
}

TEST(RankCgroup, OffWhenTheUserSaysSo) {
  setenv("GPULAUNCH_RANK_CGROUP", "off", 1);
  const CgroupContainment c = ContainInOwnCgroup();
  const std::string probe = WhyNoRankCgroup();
  unsetenv("GPULAUNCH_RANK_CGROUP");
  EXPECT_EQ(probe, "GPULAUNCH_RANK_CGROUP=off");
  EXPECT_FALSE(c.contained);
  EXPECT_EQ(c.why_not, "GPULAUNCH_RANK_CGROUP=off");
}

bool Alive(pid_t pid) {
  const std::string stat = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z' && stat[paren + 2] != 'X';
}

// A "shim" (a child of this test) contains itself, starts a helper that
// leaves its session and its parent (a double fork: it is init's child
// then), and is SIGKILLed. The helper must die, and the cgroup go.
TEST(RankCgroup, AHelperDiesWithASigkilledShim) {
  int report[2];
  ASSERT_EQ(pipe2(report, O_CLOEXEC), 0);  // the helper (exec) must not hold it
  const pid_t shim = fork();
  ASSERT_GE(shim, 0);
  if (shim == 0) {
    close(report[0]);
    const CgroupContainment c = ContainInOwnCgroup();
    pid_t helper = -1;
    if (c.contained) {
      int inner[2];
      if (pipe2(inner, O_CLOEXEC) != 0) _exit(1);
      if (fork() == 0) {
        setsid();
        const pid_t h = fork();
        if (h == 0) {
          execl("/bin/sleep", "sleep", "300", static_cast<char*>(nullptr));
          _exit(127);
        }
        if (write(inner[1], &h, sizeof h) != sizeof h) _exit(1);
        _exit(0);
      }
      if (read(inner[0], &helper, sizeof helper) != sizeof helper) _exit(1);
    }
    const std::string line = (c.contained ? "yes " : "no ") + std::to_string(helper) + " " +
                             ReadFileOrEmpty("/proc/self/cgroup") + "\n" + c.why_not + "\n";
    if (write(report[1], line.data(), line.size()) < 0) _exit(1);
    close(report[1]);
    pause();
    _exit(0);
  }
  close(report[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(report[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(report[0]);
  if (text.rfind("no ", 0) == 0) {
    kill(shim, SIGKILL);
    waitpid(shim, nullptr, 0);
    GTEST_SKIP() << "no cgroup this process may make here: " << text;
  }
  ASSERT_EQ(text.rfind("yes ", 0), 0u) << text;
  const pid_t helper = std::atoi(text.c_str() + 4);
  ASSERT_GT(helper, 0);
  const size_t at = text.find("0::");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string own = text.substr(at + 3, text.find('\n', at) - at - 3);
  EXPECT_NE(own.find("/gpulaunch-shim." + std::to_string(shim)), std::string::npos) << own;
  const std::string folder = OwnCgroup2Folder("0::" + own + "\n", ReadFileOrEmpty("/proc/self/mountinfo"));
  ASSERT_FALSE(folder.empty());
  struct stat st{};
  EXPECT_EQ(stat(folder.c_str(), &st), 0) << folder;
  EXPECT_TRUE(Alive(helper));
  EXPECT_EQ(WhyNoRankCgroup(), "");  // what `check` says: a shim can contain its rank here

  kill(shim, SIGKILL);
  waitpid(shim, nullptr, 0);
  bool helper_gone = false, folder_gone = false;
  for (int i = 0; i < 500 && !(helper_gone && folder_gone); ++i) {
    helper_gone = !Alive(helper);
    folder_gone = stat(folder.c_str(), &st) != 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(helper_gone) << "the helper " << helper << " outlived its SIGKILLed shim";
  EXPECT_TRUE(folder_gone) << folder << " is still there";
  if (!helper_gone) kill(helper, SIGKILL);
}

}  // namespace
}  // namespace gpulaunch
