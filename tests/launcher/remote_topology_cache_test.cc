// Other hosts' topologies, as their probes reported them, kept on the launching host.
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
  // A reading of a report, with every kind of field a probe's report gives.
  static HostTopology Topology(const std::string& hostname) {
    HostTopology t;
    t.hostname = hostname;
    t.slurm_topology_addr = "top.leaf0." + hostname;
    t.slurm_topology_pattern = "switch.switch.node";
    t.packages = {{0, {0, 1, 2, 3}}};
    t.numa_nodes = {{0, {0, 1, 2, 3}}};
    t.cores = {{0, {0, 2}, 0, 0}, {1, {1, 3}, 0, 0}};
    Gpu g;
    g.pci_bus_id = "0000:1a:00.0";
    g.vendor = "nvidia";
    g.model = "H100";
    g.uuid = "GPU-1234";
    g.memory_bytes = uint64_t{80} << 30;
    g.numa_node = 0;
    g.local_pus = {0, 1, 2, 3};
    g.pci_path = {"0000:00", "0000:17:00.0"};
    t.gpus = {g, g};
    t.gpus[1].index = 1;
    t.gpus[1].pci_bus_id = "0000:1b:00.0";
    t.gpu_link_gbps = {0, 450.5, 450.5, 0};
    Nic n;
    n.name = "mlx5_0:1";
    n.kind = "infiniband";
    n.pci_bus_id = "0000:1c:00.0";
    n.numa_node = 0;
    n.local_pus = {0, 1, 2, 3};
    n.pci_path = {"0000:00"};
    n.gbps = 50;
    t.nics = {n};
    return t;
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

TEST_F(RemoteCacheTest, KeepsEachHostsReadingWithItsFingerprint) {
  EXPECT_FALSE(ReadCachedProbe("node2", "/opt/gl/bin/gpulaunch-probe").has_value());
  StoreCachedProbe("node2", "/opt/gl/bin/gpulaunch-probe", Report("f2"), Topology("node2"));
  StoreCachedProbe("node3", "/opt/gl/bin/gpulaunch-probe", Report("f3"), Topology("node3.example"));
  const auto node2 = ReadCachedProbe("node2", "/opt/gl/bin/gpulaunch-probe");
  ASSERT_TRUE(node2.has_value());
  EXPECT_TRUE(node2->topology == Topology("node2"));  // every field, the name and Slurm address included
  EXPECT_EQ(node2->fingerprint, "f2");
  const auto node3 = ReadCachedProbe("node3", "/opt/gl/bin/gpulaunch-probe");
  ASSERT_TRUE(node3.has_value());
  EXPECT_EQ(node3->fingerprint, "f3");
  EXPECT_EQ(node3->topology.slurm_topology_addr, "top.leaf0.node3.example");
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
  StoreCachedProbe("node2", probe, Report("f2"), Topology("node2"));
  ASSERT_TRUE(ReadCachedProbe("node2", probe).has_value());
  std::ofstream(probe, std::ios::trunc) << "version 2, longer";
  EXPECT_FALSE(ReadCachedProbe("node2", probe).has_value());
}

TEST_F(RemoteCacheTest, ReportsWithoutAFingerprintOrEntriesCutShortAreNotUsed) {
  StoreCachedProbe("node2", "/p", "<topology></topology>\n", Topology("node2"));  // an older probe: nothing to confirm it by
  EXPECT_TRUE(Entries().empty());
  StoreCachedProbe("node2", "/p", Report("f2"), Topology("node2"));
  ASSERT_EQ(Entries().size(), 1u);
  std::ifstream in(Entries()[0]);
  const std::string whole((std::istreambuf_iterator<char>(in)), {});
  for (size_t cut : {size_t{0}, size_t{1}, whole.size() / 3, whole.size() / 2, whole.size() - 2}) {
    std::ofstream(Entries()[0], std::ios::trunc) << whole.substr(0, cut);
    EXPECT_FALSE(ReadCachedProbe("node2", "/p").has_value()) << "cut at " << cut << " of " << whole.size();
  }
  // An entry of an older gpulaunch (the probe's report itself) is not read as one either.
  std::ofstream(Entries()[0], std::ios::trunc) << Report("f2");
  EXPECT_FALSE(ReadCachedProbe("node2", "/p").has_value());
}

TEST_F(RemoteCacheTest, OldEntriesAndTurningItOffLeaveDiscoveryLive) {
  StoreCachedProbe("node2", "/p", Report("f2"), Topology("node2"));
  ASSERT_TRUE(ReadCachedProbe("node2", "/p").has_value());
  setenv("GPULAUNCH_TOPOLOGY_CACHE", "0", 1);
  EXPECT_FALSE(ReadCachedProbe("node2", "/p").has_value());
  unsetenv("GPULAUNCH_TOPOLOGY_CACHE");
  const time_t old = time(nullptr) - kMaxCachedProbeAge.count() - 60;
  const timespec times[2] = {{old, 0}, {old, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, Entries()[0].c_str(), times, 0), 0);
  EXPECT_FALSE(ReadCachedProbe("node2", "/p").has_value());
}

// Entries past their age are never read again: storing a new one removes
// them (of this format and older ones), and nothing younger, nothing of the
// local host's cache, nothing being written.
TEST_F(RemoteCacheTest, StoringRemovesEntriesPastTheirAge) {
  StoreCachedProbe("node2", "/p", Report("f2"), Topology("node2"));
  ASSERT_EQ(Entries().size(), 1u);
  const std::string dir = folder_ + "/gpulaunch";
  const time_t old = time(nullptr) - kMaxCachedProbeAge.count() - 60;
  const time_t young = time(nullptr) - kMaxCachedProbeAge.count() + 600;
  const std::pair<std::string, time_t> files[] = {
      {"remote-gone.entry", old}, {"remote-older-format.xml", old}, {"remote-young.entry", young},
      {"topology-old.entry", old}, {"remote-written.entry.tmp.7", old}};
  for (const auto& [name, when] : files) {
    std::ofstream(dir + "/" + name) << "x";
    const timespec times[2] = {{when, 0}, {when, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, (dir + "/" + name).c_str(), times, 0), 0);
  }
  StoreCachedProbe("node3", "/p", Report("f3"), Topology("node3"));
  EXPECT_FALSE(fs::exists(dir + "/remote-gone.entry"));
  EXPECT_FALSE(fs::exists(dir + "/remote-older-format.xml"));
  EXPECT_TRUE(fs::exists(dir + "/remote-young.entry"));
  EXPECT_TRUE(fs::exists(dir + "/topology-old.entry")) << "the local host's cache keeps its own rule";
  EXPECT_TRUE(fs::exists(dir + "/remote-written.entry.tmp.7"));
  EXPECT_TRUE(ReadCachedProbe("node2", "/p").has_value());
  EXPECT_TRUE(ReadCachedProbe("node3", "/p").has_value());
  EXPECT_EQ(Entries().size(), 5u);
}

}  // namespace
}  // namespace gpulaunch
