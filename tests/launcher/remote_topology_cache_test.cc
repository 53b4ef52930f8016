// Other hosts' probe reports kept on the launching host.
#include "launcher/discovery/remote_topology_cache.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace gpulaunch {
namespace {

namespace fs = std::filesystem;

// A private cache folder ($XDG_RUNTIME_DIR/gpulaunch) for one test.
class RemoteCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gl-remote-cache-XXXXXX";
    folder_ = mkdtemp(tmpl);
    if (const char* old = getenv("XDG_RUNTIME_DIR")) old_runtime_ = old;
    setenv("XDG_RUNTIME_DIR", folder_.c_str(), 1);
    unsetenv("GPULAUNCH_TOPOLOGY_CACHE");
  }
  void TearDown() override {
    if (old_runtime_) setenv("XDG_RUNTIME_DIR", old_runtime_->c_str(), 1);
    else unsetenv("XDG_RUNTIME_DIR");
    unsetenv("GPULAUNCH_TOPOLOGY_CACHE");
    fs::remove_all(folder_);
  }
  static std::string Report(const std::string& fingerprint) {
    return "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n</topology>\n<!-- gpulaunch-ucx-devices: mlx5_0:1 -->\n" +
           FingerprintComment(fingerprint) + "\n";
  }
  std::vector<fs::path> Entries() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(folder_ + "/gpulaunch")) out.push_back(e.path());
    return out;
  }
  std::string folder_;
  std::optional<std::string> old_runtime_;
};

TEST_F(RemoteCacheTest, FingerprintCommentRoundTrips) {
  EXPECT_EQ(FingerprintIn(Report("0123abcd")), "0123abcd");
  EXPECT_FALSE(FingerprintIn("<topology></topology>\n").has_value());
}

TEST_F(RemoteCacheTest, KeepsEachHostsReportWithItsFingerprint) {
  EXPECT_FALSE(ReadCachedProbe("node2", "/opt/gl/bin/gpulaunch-probe").has_value());
  StoreCachedProbe("node2", "/opt/gl/bin/gpulaunch-probe", Report("f2"));
  StoreCachedProbe("node3", "/opt/gl/bin/gpulaunch-probe", Report("f3"));
  const auto node2 = ReadCachedProbe("node2", "/opt/gl/bin/gpulaunch-probe");
  ASSERT_TRUE(node2.has_value());
  EXPECT_EQ(node2->output, Report("f2"));
  EXPECT_EQ(node2->fingerprint, "f2");
  EXPECT_EQ(ReadCachedProbe("node3", "/opt/gl/bin/gpulaunch-probe")->fingerprint, "f3");
  // Another installation's probe may report otherwise: its own entry.
  EXPECT_FALSE(ReadCachedProbe("node2", "/usr/bin/gpulaunch-probe").has_value());
  DropCachedProbe("node2", "/opt/gl/bin/gpulaunch-probe");
  EXPECT_FALSE(ReadCachedProbe("node2", "/opt/gl/bin/gpulaunch-probe").has_value());
  EXPECT_TRUE(ReadCachedProbe("node3", "/opt/gl/bin/gpulaunch-probe").has_value());
}

// A rebuilt probe at the same path may report otherwise: it starts afresh.
TEST_F(RemoteCacheTest, ARebuiltProbeStartsAfresh) {
  const std::string probe = folder_ + "/gpulaunch-probe";
  std::ofstream(probe) << "version 1";
  StoreCachedProbe("node2", probe, Report("f2"));
  ASSERT_TRUE(ReadCachedProbe("node2", probe).has_value());
  std::ofstream(probe, std::ios::trunc) << "version 2, longer";
  EXPECT_FALSE(ReadCachedProbe("node2", probe).has_value());
}

TEST_F(RemoteCacheTest, ReportsWithoutAFingerprintOrCutShortAreNotUsed) {
  StoreCachedProbe("node2", "/p", "<topology></topology>\n");  // an older probe: nothing to confirm it by
  EXPECT_TRUE(Entries().empty());
  StoreCachedProbe("node2", "/p", Report("f2"));
  ASSERT_EQ(Entries().size(), 1u);
  std::ofstream(Entries()[0], std::ios::trunc) << FingerprintComment("f2") << "\n<topology>";
  EXPECT_FALSE(ReadCachedProbe("node2", "/p").has_value());
}

TEST_F(RemoteCacheTest, OldEntriesAndTurningItOffLeaveDiscoveryLive) {
  StoreCachedProbe("node2", "/p", Report("f2"));
  ASSERT_TRUE(ReadCachedProbe("node2", "/p").has_value());
  setenv("GPULAUNCH_TOPOLOGY_CACHE", "0", 1);
  EXPECT_FALSE(ReadCachedProbe("node2", "/p").has_value());
  unsetenv("GPULAUNCH_TOPOLOGY_CACHE");
  const time_t old = time(nullptr) - kMaxCachedProbeAge.count() - 60;
  const timespec times[2] = {{old, 0}, {old, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, Entries()[0].c_str(), times, 0), 0);
  EXPECT_FALSE(ReadCachedProbe("node2", "/p").has_value());
}

}  // namespace
}  // namespace gpulaunch
