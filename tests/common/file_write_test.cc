// WriteFileAtomically against what another user could plant (docs/security.md).
#include "common/file_write.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpulaunch {
namespace {

namespace fs = std::filesystem;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(FileWrite, ReplacesALinkInsteadOfWritingThroughIt) {
  char dir[] = "/tmp/gl-file-write-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string victim = std::string(dir) + "/victim", target = std::string(dir) + "/out.sh";
  { std::ofstream(victim) << "precious"; }
  chmod(victim.c_str(), 0600);
  fs::create_symlink(victim, target);
  const mode_t old_umask = umask(022);
  const Status s = WriteFileAtomically(target, "#!/bin/sh\n", kScriptMode);
  umask(old_umask);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Read(victim), "precious");
  struct stat about {};
  ASSERT_EQ(stat(victim.c_str(), &about), 0);
  EXPECT_EQ(about.st_mode & 0777, 0600u) << "the link's target changed mode";
  ASSERT_EQ(lstat(target.c_str(), &about), 0);
  EXPECT_TRUE(S_ISREG(about.st_mode));
  EXPECT_EQ(about.st_mode & 0777, 0755u) << "the mode is set on the descriptor, less the umask";
  EXPECT_EQ(Read(target), "#!/bin/sh\n");
  // Nothing is left beside it.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 2);
  fs::remove_all(dir);
}

TEST(FileWrite, AFolderThatCannotTakeItSaysSoAndLeavesNothing) {
  const Status s = WriteFileAtomically("/proc/no-such-dir/out", "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/proc/no-such-dir/out"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace gpulaunch

namespace gpulaunch {
namespace {

// Modes follow the umask as open(2) and cp(1) do; private files stay 0600.
TEST(FileWrite, ModesFollowTheUmaskAndPrivateFilesStayPrivate) {
  char dir[] = "/tmp/gl-file-mode-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string d = dir;
  struct Case {
    mode_t umask_value, mode, want;
  };
  const Case cases[] = {{077, kPlainFileMode, 0600}, {022, kPlainFileMode, 0644}, {002, kPlainFileMode, 0664},
                        {077, kScriptMode, 0700},    {022, kScriptMode, 0755},    {000, kPrivateFileMode, 0600},
                        {022, kPrivateFileMode, 0600}};
  int i = 0;
  for (const Case& c : cases) {
    const mode_t old_umask = umask(c.umask_value);
    EXPECT_EQ(CurrentUmask(), c.umask_value);
    const std::string path = d + "/f" + std::to_string(i++);
    const Status s = WriteFileAtomically(path, "x", c.mode);
    umask(old_umask);
    ASSERT_TRUE(s.ok()) << s.message();
    struct stat about {};
    ASSERT_EQ(stat(path.c_str(), &about), 0);
    EXPECT_EQ(about.st_mode & 0777, c.want) << "umask " << std::oct << c.umask_value << " mode " << c.mode;
  }
  fs::remove_all(d);
}

}  // namespace
}  // namespace gpulaunch
