#include "launcher/check/storage_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "launcher/core/options.h"

namespace fs = std::filesystem;

namespace gpulaunch {
namespace {

constexpr uint64_t kBytes = (1 << 20) + 12345;  // more than one chunk, not a multiple

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("gl-storage-" + std::to_string(getpid()));
  Scratch() { fs::create_directories(dir); }
  ~Scratch() { fs::remove_all(dir); }
};

TEST(StorageProbe, WritesReadsBackAndSeesMissingOrDifferentFiles) {
  Scratch s;
  const std::string path = s.dir.string();
  const StorageWriteResult a = StorageWrite(path, "t1", "a", kBytes, 5);
  ASSERT_EQ(a.error, "");
  EXPECT_GT(a.write_mibs, 0);
  EXPECT_GT(a.read_mibs, 0);
  EXPECT_GT(a.create_us, 0);
  ASSERT_EQ(StorageWrite(path, "t1", "b", kBytes, 5).error, "");
  StorageReadResult r = StorageRead(path, "t1", "a", {"a", "b", "c"}, kBytes);
  EXPECT_EQ(r.seen, (std::map<std::string, std::string>{{"a", "ok"}, {"b", "ok"}, {"c", "missing"}}));
  // Another token's bytes are different data (a stale file from another run).
  EXPECT_EQ(StorageRead(path, "t2", "a", {"a"}, kBytes).seen.at("a"), "missing");
  fs::copy_file(StorageScratchDir(path, "t1") + "/a.dat", s.dir / "a-old.dat");
  ASSERT_EQ(StorageWrite(path, "t2", "a", kBytes, 1).error, "");
  fs::copy_file(s.dir / "a-old.dat", StorageScratchDir(path, "t2") + "/a.dat", fs::copy_options::overwrite_existing);
  EXPECT_EQ(StorageRead(path, "t2", "x", {"a"}, kBytes).seen.at("a"), "different");
  // One flipped byte at the end of b's file.
  {
    std::fstream f(StorageScratchDir(path, "t1") + "/b.dat", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(kBytes - 1));
    const char last = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(kBytes - 1));
    f.put(static_cast<char>(last ^ 0x01));
  }
  r = StorageRead(path, "t1", "a", {"b"}, kBytes);
  EXPECT_TRUE(r.seen.at("b") == "different") << r.seen.at("b");
  // Clean: each host its own file; the directory with the last.
  ASSERT_TRUE(StorageClean(path, "t1", "a").ok());
  EXPECT_TRUE(fs::exists(StorageScratchDir(path, "t1")));
  ASSERT_TRUE(StorageClean(path, "t1", "b").ok());
  EXPECT_FALSE(fs::exists(StorageScratchDir(path, "t1")));
}

TEST(StorageProbe, AWriteThatCannotHappenSaysWhere) {
  const StorageWriteResult r = StorageWrite("/proc/no-such-dir", "t", "a", 1024, 1);
  EXPECT_NE(r.error.find("cannot create /proc/no-such-dir/.gpulaunch-storage-t"), std::string::npos) << r.error;
}

TEST(StorageProbe, LinesReadBack) {
  StorageWriteResult w;
  w.host = "node2";
  w.write_mibs = 412.25;
  w.read_mibs = 1800;
  w.create_us = 35.5;
  w.stat_us = 3;
  w.unlink_us = 20;
  auto back = ParseStorageWriteLine("noise from the engine\n" + FormatStorageLine(w) + "\n");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->host, "node2");
  EXPECT_NEAR(back->write_mibs, 412.2, 0.11);
  EXPECT_DOUBLE_EQ(back->create_us, 35.5);
  w.error = "cannot create /x: Permission denied\nsecond line";
  back = ParseStorageWriteLine(FormatStorageLine(w));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->error, "cannot create /x: Permission denied second line");
  StorageReadResult r;
  r.host = "node1";
  r.seen = {{"node1", "ok"}, {"node2", "missing"}};
  auto rb = ParseStorageReadLine(FormatStorageLine(r));
  ASSERT_TRUE(rb.ok());
  EXPECT_EQ(rb->seen, r.seen);
  EXPECT_FALSE(ParseStorageReadLine("nothing here").ok());
}

// Four hosts; `view` gives each host's view (hosts with the same view see
// each other's files).
StorageCheckReport Check(const std::vector<int>& view, const std::set<std::string>& not_written = {},
                         const std::set<std::string>& not_read = {}) {
  const std::vector<std::string> hosts = {"node1", "node2", "node3", "node4"};
  std::map<std::string, StorageWriteResult> writes;
  std::map<std::string, StorageReadResult> reads;
  for (size_t i = 0; i < hosts.size(); ++i) {
    StorageWriteResult w;
    w.host = hosts[i];
    w.write_mibs = 100 + static_cast<double>(i);
    w.read_mibs = 200;
    if (not_written.count(hosts[i])) w.error = "cannot create /shared/x: Read-only file system";
    writes[hosts[i]] = w;
    if (not_read.count(hosts[i])) continue;
    StorageReadResult r;
    r.host = hosts[i];
    for (size_t j = 0; j < hosts.size(); ++j) {
      r.seen[hosts[j]] = view[i] == view[j] && !not_written.count(hosts[j]) ? "ok" : "missing";
    }
    reads[hosts[i]] = r;
  }
  return AnalyzeStorage("/shared", 16 << 20, hosts, writes, reads);
}

TEST(StorageCheck, EveryHostSeeingTheSameStoragePasses) {
  const StorageCheckReport r = Check({0, 0, 0, 0});
  EXPECT_TRUE(r.ok);
  for (const auto& h : r.hosts) {
    EXPECT_TRUE(h.ok) << h.host << ": " << h.reason;
    EXPECT_EQ(h.sees, 4);
  }
  const std::string table = RenderStorageTable(r);
  EXPECT_NE(table.find("node1            ok"), std::string::npos) << table;
  EXPECT_NE(table.find("spread: write 100.0-103.0 MiB/s (3%)"), std::string::npos) << table;
}

TEST(StorageCheck, AHostWithItsOwnDirectoryIsNamed) {
  const StorageCheckReport r = Check({0, 0, 1, 0});
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.hosts[0].ok && r.hosts[1].ok && r.hosts[3].ok);
  ASSERT_FALSE(r.hosts[2].ok);
  EXPECT_EQ(r.hosts[2].reason,
            "does not see the files of node1, node2, node4; node1, node2, node4 do not see its file: /shared is not "
            "the same storage there");
  EXPECT_EQ(r.hosts[2].sees, 1);
  EXPECT_NE(RenderStorageTable(r).find("node3            FAILED"), std::string::npos);
  EXPECT_NE(StorageReportJson(r).find("\"ok\":false"), std::string::npos);
}

TEST(StorageCheck, HostsThatCouldNotWriteOrReadFailWithTheirReason) {
  const StorageCheckReport r = Check({0, 0, 0, 0}, {"node2"}, {"node4"});
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.hosts[0].ok) << r.hosts[0].reason;  // node2 never wrote: not counted against node1
  EXPECT_EQ(r.hosts[1].reason, "cannot create /shared/x: Read-only file system");
  EXPECT_EQ(r.hosts[3].reason, "did not answer the read phase");
  EXPECT_EQ(r.hosts[0].of, 3);
}

TEST(StorageCheck, CommandLine) {
  auto o = ParseCheckCommandLine({"--storage", "/shared", "-H", "a,b", "--size", "4", "--budget", "9"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(*o->storage, "/shared");
  EXPECT_EQ(o->size_mib, 4);
  EXPECT_EQ(o->budget_s, 9);
  const struct {
    std::vector<std::string> args;
    const char* says;
  } bad[] = {
      {{"--storage", "/x", "--save", "b.json"}, "--storage runs the storage check only"},
      {{"--max-clock-skew", "-1"}, "--max-clock-skew -1: give seconds above 0"},
      {{"--storage"}, "--storage needs a value"},
      {{"--storage", "/x", "--size", "0"}, "--size 0: give MiB from 1 to 65536"},
      {{"--storage", "/x", "-H", "a", "--hostfile", "f"}, "either --host or --hostfile"},
      {{"--storage", "/x", "--format", "xml"}, "choose table or json"},
      {{"--storage", "/x", "--bogus"}, "unknown option '--bogus'"},
  };
  for (const auto& c : bad) {
    auto r = ParseCheckCommandLine(c.args);
    ASSERT_FALSE(r.ok()) << c.says;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace gpulaunch

namespace gpulaunch {
namespace {

// What another user could plant where the probe writes (docs/security.md):
// a link or a folder others may write under the scratch name, or a link
// under a host's file name, is refused, and the link's target is untouched.
TEST(StorageProbe, RefusesWhatSomeoneElsePlanted) {
  char dir[] = "/tmp/gl-storage-plant-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = dir, victim = path + "/victim";
  { std::ofstream(victim) << "precious"; }
  std::filesystem::create_directory(path + "/elsewhere");
  std::filesystem::create_directory_symlink(path + "/elsewhere", StorageScratchDir(path, "linked"));
  const StorageWriteResult linked = StorageWrite(path, "linked", "a", 4096, 1);
  EXPECT_NE(linked.error.find("is not this check's own folder"), std::string::npos) << linked.error;
  EXPECT_TRUE(std::filesystem::is_empty(path + "/elsewhere"));
  std::filesystem::create_directory(StorageScratchDir(path, "open"));
  std::filesystem::permissions(StorageScratchDir(path, "open"), std::filesystem::perms::all);
  EXPECT_NE(StorageWrite(path, "open", "a", 4096, 1).error.find("is not this check's own folder"), std::string::npos);
  std::filesystem::create_directory(StorageScratchDir(path, "mine"));
  std::filesystem::permissions(StorageScratchDir(path, "mine"), std::filesystem::perms::owner_all);
  std::filesystem::create_symlink(victim, StorageScratchDir(path, "mine") + "/a.dat");
  EXPECT_NE(StorageWrite(path, "mine", "a", 4096, 1).error, "");
  std::ifstream in(victim);
  std::string kept;
  std::getline(in, kept);
  EXPECT_EQ(kept, "precious");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpulaunch
