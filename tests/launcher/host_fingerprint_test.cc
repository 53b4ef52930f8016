// The host fingerprint, over folders laid out as /proc and /sys.
#include "launcher/base/host_fingerprint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace gpulaunch {
namespace {

namespace fs = std::filesystem;

class FakeHost {
 public:
  FakeHost() {
    char tmpl[] = "/tmp/gl-host-fingerprint-XXXXXX";
    root_ = mkdtemp(tmpl);
    Write("proc/sys/kernel/random/boot_id", "5e1c0b6a-0f7d-4a53-9c1e-2b0f5d1e9a11\n");
    Write("sys/devices/system/cpu/online", "0-63\n");
    Write("sys/devices/system/node/online", "0-1\n");
    Write("proc/self/cgroup", "0::/user.slice/session-7.scope\n");
    Write("sys/fs/cgroup/user.slice/session-7.scope/cpuset.cpus.effective", "0-63\n");
    Write("sys/fs/cgroup/user.slice/session-7.scope/cpuset.mems.effective", "0-1\n");
    fs::create_directories(root_ / "sys/bus/pci/devices/0000:17:00.0");
    fs::create_directories(root_ / "sys/bus/pci/devices/0000:65:00.0");
    Write("sys/class/net/eth0/operstate", "up\n");
    Write("sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
  }
  ~FakeHost() { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel, std::ios::trunc) << text;
  }
  std::string Fingerprint() const { return HostFingerprint(root_.string()); }
  const fs::path& root() const { return root_; }

 private:
  fs::path root_;
};

TEST(HostFingerprint, IsStableForAnUnchangedHost) {
  FakeHost host;
  const std::string first = host.Fingerprint();
  EXPECT_EQ(first.size(), 32u);
  EXPECT_EQ(host.Fingerprint(), first);
}

// Each thing a discovered topology depends on moves the fingerprint.
TEST(HostFingerprint, ChangesWithWhatTheTopologyDependsOn) {
  FakeHost host;
  const std::string before = host.Fingerprint();
  const std::vector<std::pair<std::string, std::string>> changes = {
      {"proc/sys/kernel/random/boot_id", "another boot\n"},
      {"sys/devices/system/cpu/online", "0-31\n"},
      {"sys/devices/system/node/online", "0\n"},
      {"sys/fs/cgroup/user.slice/session-7.scope/cpuset.cpus.effective", "0-15\n"},
      {"sys/class/net/eth0/operstate", "down\n"},
      {"sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n"},
      {"sys/class/net/ib0/operstate", "up\n"},  // a new interface
  };
  for (const auto& [file, text] : changes) {
    FakeHost changed;
    changed.Write(file, text);
    EXPECT_NE(changed.Fingerprint(), before) << file;
  }
  FakeHost unplugged;
  fs::remove_all(unplugged.root() / "sys/bus/pci/devices/0000:65:00.0");  // a GPU gone
  EXPECT_NE(unplugged.Fingerprint(), before);
}

// The probe and the ranks' shims run in different ssh sessions, so in
// different cgroups that allow the same CPUs: the same host to the plan.
TEST(HostFingerprint, IgnoresWhichSessionCgroupTheProcessIsIn) {
  FakeHost host;
  const std::string before = host.Fingerprint();
  host.Write("proc/self/cgroup", "0::/user.slice/session-9.scope\n");
  host.Write("sys/fs/cgroup/user.slice/session-9.scope/cpuset.cpus.effective", "0-63\n");
  host.Write("sys/fs/cgroup/user.slice/session-9.scope/cpuset.mems.effective", "0-1\n");
  EXPECT_EQ(host.Fingerprint(), before);
}

}  // namespace
}  // namespace gpulaunch
