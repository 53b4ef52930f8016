// OutputDir (common/output_dir.h): folders are made, written relative to the
// held descriptor, and a planted link is refused where others could plant it.
#include "common/output_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpulaunch {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class OutputDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/gl-output-dir-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    root_ = dir;
    fs::create_directory(root_ / "shared");
    fs::permissions(root_ / "shared", fs::perms::all | fs::perms::sticky_bit);  // like /tmp
    fs::create_directory(root_ / "private");
    { std::ofstream(root_ / "private" / "keep") << "precious"; }
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(OutputDirTest, MakesMissingFoldersAndWritesIntoThem) {
  auto out = OutputDir::Open((root_ / "a" / "b" / "c").string());
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_TRUE(out->WriteFile("x.txt", "hello").ok());
  EXPECT_EQ(Read(root_ / "a" / "b" / "c" / "x.txt"), "hello");
  EXPECT_FALSE(out->WriteFile("../escape", "no").ok()) << "a name is one file in the folder";
}

TEST_F(OutputDirTest, APlantedLinkInPlaceOfTheFolderIsRefused) {
  fs::create_directory_symlink(root_ / "private", root_ / "shared" / "out");
  auto out = OutputDir::Open((root_ / "shared" / "out").string());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("is a symbolic link"), std::string::npos) << out.status().message();
}

TEST_F(OutputDirTest, ALinkOnTheWayIsFollowedOnlyWhereNobodyElseCouldHavePlantedIt) {
  fs::create_directory_symlink(root_ / "private", root_ / "shared" / "via");
  auto planted = OutputDir::Open((root_ / "shared" / "via" / "sub").string());
  ASSERT_FALSE(planted.ok());
  EXPECT_NE(planted.status().message().find("in a folder others may write"), std::string::npos);
  EXPECT_FALSE(fs::exists(root_ / "private" / "sub"));
  // The same link in a folder only its owner writes (a system's /tmp -> ...).
  fs::create_directory(root_ / "mine");
  fs::permissions(root_ / "mine", fs::perms::owner_all);
  fs::create_directory_symlink(root_ / "private", root_ / "mine" / "via");
  auto followed = OutputDir::Open((root_ / "mine" / "via" / "sub").string());
  ASSERT_TRUE(followed.ok()) << followed.status().message();
  ASSERT_TRUE(followed->WriteFile("f", "x").ok());
  EXPECT_EQ(Read(root_ / "private" / "sub" / "f"), "x");
}

TEST_F(OutputDirTest, AFolderSwappedForALinkAfterOpeningChangesNothing) {
  auto out = OutputDir::Open((root_ / "shared" / "run").string());
  ASSERT_TRUE(out.ok());
  fs::rename(root_ / "shared" / "run", root_ / "shared" / "run.moved");
  fs::create_directory_symlink(root_ / "private", root_ / "shared" / "run");
  ASSERT_TRUE(out->WriteFile("keep", "overwritten?").ok());
  EXPECT_EQ(Read(root_ / "private" / "keep"), "precious");
  EXPECT_EQ(Read(root_ / "shared" / "run.moved" / "keep"), "overwritten?");
}

TEST_F(OutputDirTest, AFileInPlaceOfTheFolderIsNamed) {
  { std::ofstream(root_ / "shared" / "file") << "x"; }
  auto out = OutputDir::Open((root_ / "shared" / "file").string());
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("is not a folder"), std::string::npos) << out.status().message();
}

}  // namespace
}  // namespace gpulaunch
