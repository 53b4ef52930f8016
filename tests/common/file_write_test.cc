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
  const mode_t old_umask = umask(077);
  const Status s = WriteFileAtomically(target, "#!/bin/sh\n", 0755);
  umask(old_umask);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Read(victim), "precious");
  struct stat about {};
  ASSERT_EQ(stat(victim.c_str(), &about), 0);
  EXPECT_EQ(about.st_mode & 0777, 0600u) << "the link's target changed mode";
  ASSERT_EQ(lstat(target.c_str(), &about), 0);
  EXPECT_TRUE(S_ISREG(about.st_mode));
  EXPECT_EQ(about.st_mode & 0777, 0755u) << "the mode is set on the descriptor, whatever the umask";
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
