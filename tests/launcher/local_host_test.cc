// This machine's topology: discovered live or read from its cache entry, the
// same either way; what an entry keeps and how it is replaced, named and
// pruned; and what a launch that hits the cache does not load (hwloc, its
// plugins, libxml2), told by fresh runs of this test binary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <fcntl.h>
#include <hwloc.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cluster_json.h"
#include "launcher/discovery/hwloc_source.h"
#include "launcher/discovery/topology_cache.h"
#include "launcher/discovery/topology_file.h"
#include "tests/launcher/recorded_topologies.h"
#include "tests/testing/scoped_env.h"

namespace gpulaunch {
namespace {

// One host's topology as the cluster JSON writes it: every field placement reads.
std::string AsJson(const HostTopology& t) { return DumpHostJson(t); }

TEST(LocalHost, ACurrentCacheEntryGivesTheSameTopologyAndABadOneIsReplaced) {
  char folder[] = "/tmp/gl-topology-cache-XXXXXX";
  ASSERT_NE(mkdtemp(folder), nullptr);
  ScopedEnv runtime("XDG_RUNTIME_DIR", folder);
  const auto path = TopologyCachePath();
  ASSERT_TRUE(path.has_value());
  EXPECT_EQ(path->rfind(std::string(folder) + "/gpulaunch/topology-", 0), 0u) << *path;
  auto live = DiscoverLocalHost();  // no entry yet: live, then kept
  ASSERT_TRUE(live.ok()) << live.status().message();
  ASSERT_TRUE(ReadCachedTopology(*path).has_value());
  auto cached = DiscoverLocalHost();
  ASSERT_TRUE(cached.ok()) << cached.status().message();
  EXPECT_EQ(AsJson(*cached), AsJson(*live));
  // An entry cut short is not used, and a whole one replaces it.
  { std::ofstream(*path, std::ios::trunc) << "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object"; }
  EXPECT_FALSE(ReadCachedTopology(*path).has_value());
  auto again = DiscoverLocalHost();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(AsJson(*again), AsJson(*live));
  EXPECT_TRUE(ReadCachedTopology(*path).has_value());
  {
    // Whatever hwloc reads from its environment is part of the entry's name.
    ScopedEnv hwloc("HWLOC_COMPONENTS", "-gl");
    EXPECT_NE(TopologyCachePath(), path);
  }
  {
    ScopedEnv off("GPULAUNCH_TOPOLOGY_CACHE", "0");
    EXPECT_FALSE(TopologyCachePath().has_value());
  }
  {
    ScopedEnv file("HWLOC_XMLFILE", "/nonexistent.xml");  // hwloc reads a file: nothing to keep
    EXPECT_FALSE(TopologyCachePath().has_value());
  }
  // Old entries (other cgroups, other boots) do not pile up: the newest 16 stay.
  const std::string dir = std::string(folder) + "/gpulaunch";
  for (int i = 0; i < 20; ++i) {
    const std::string old = dir + "/topology-old" + std::to_string(i) + ".xml";
    std::ofstream(old) << "<topology></topology>";
    const timespec times[2] = {{1000 + i, 0}, {1000 + i, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, old.c_str(), times, 0), 0);
  }
  StoreCachedTopology(*path, *ReadCachedTopology(*path));
  int kept = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) kept += e.path().filename().string().rfind("topology-", 0) == 0;
  EXPECT_EQ(kept, 16);
  EXPECT_TRUE(ReadCachedTopology(*path).has_value());
  EXPECT_FALSE(std::filesystem::exists(dir + "/topology-old0.xml"));  // the oldest went
  // A folder others may write is refused.
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);
  EXPECT_FALSE(TopologyCachePath().has_value());
  std::filesystem::remove_all(folder);
}

// The topology an engine may read instead of discovering this host again:
// hwloc v1 XML of this machine as DiscoverLocalHost loaded it, and nothing
// when hwloc read another input or the cache is off.
TEST(LocalHost, AnEngineGetsThisMachinesTopologyAsV1XmlOnlyWhenItIsThisMachine) {
  char folder[] = "/tmp/gl-topology-cache-XXXXXX";
  ASSERT_NE(mkdtemp(folder), nullptr);
  ScopedEnv runtime("XDG_RUNTIME_DIR", folder);
  for (int load = 0; load < 2; ++load) {  // live, then from the cache entry
    auto live = DiscoverLocalHost();
    ASSERT_TRUE(live.ok()) << live.status().message();
    const std::optional<std::string> xml = LocalTopologyXmlForEngine();
    ASSERT_TRUE(xml.has_value()) << "load " << load;
    EXPECT_NE(xml->find("<topology>"), std::string::npos) << "not v1: " << xml->substr(0, 300);
    auto back = LoadHwlocXmlText(*xml, "engine");
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->cores.size(), live->cores.size());
    EXPECT_EQ(back->numa_nodes.size(), live->numa_nodes.size());
  }
  {
    ScopedEnv file("HWLOC_XMLFILE", PathOf("mpibind/g4dnmetal.xml"));
    ASSERT_TRUE(DiscoverLocalHost().ok());
    EXPECT_FALSE(LocalTopologyXmlForEngine().has_value()) << "another machine's topology for this one's engine";
  }
  {
    ScopedEnv off("GPULAUNCH_TOPOLOGY_CACHE", "0");
    ASSERT_TRUE(DiscoverLocalHost().ok());
    EXPECT_FALSE(LocalTopologyXmlForEngine().has_value());
  }
  std::filesystem::remove_all(folder);
}

TEST(LocalHost, DiscoversThisMachine) {
  auto t = DiscoverLocalHost();
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_FALSE(t->cores.empty());
  EXPECT_FALSE(t->hostname.empty());
}

// A fresh process that does one thing: this test binary run again with
// kFreshRun set to the thing, which it does before any test runs. A forked
// copy of this process would inherit what other tests left loaded (hwloc
// keeps its plugins while any topology is open).
//   hwloc-plugins, hwloc-plugins-skipped: opens a topology (hwloc loads its
//     plugins then), without or with SkipUnusedHwlocPlugins first. Exit code
//     1 when hwloc's OpenGL or OpenCL plugin is mapped then, else 0.
//   discover: DiscoverLocalHost (with the cache the environment gives).
//     Exit code 0, or 1 when it failed or left the engine no topology.
// 64: hwloc could not open a topology.
constexpr const char* kFreshRun = "GL_TEST_FRESH_RUN";

[[maybe_unused]] const bool kAnsweredFreshRun = [] {
  const char* run = getenv(kFreshRun);
  if (!run) return false;
  const std::string mode = run;
  if (mode == "discover") _exit(DiscoverLocalHost().ok() && LocalTopologyXmlForEngine() ? 0 : 1);
  if (mode == "hwloc-plugins-skipped") SkipUnusedHwlocPlugins();
  hwloc_topology_t topology = nullptr;
  if (hwloc_topology_init(&topology) != 0) _exit(64);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  int code = 0;
  while (std::getline(maps, line)) {
    if (line.find("hwloc_gl") != std::string::npos || line.find("hwloc_opencl") != std::string::npos) code = 1;
  }
  hwloc_topology_destroy(topology);
  _exit(code);
}();

// The fresh run's exit code, -1 when it did not exit.
int FreshRun(const std::string& mode, const std::vector<std::pair<const char*, std::string>>& env = {}) {
  const pid_t pid = fork();
  if (pid == 0) {
    unsetenv("HWLOC_PLUGINS_BLACKLIST");
    unsetenv("HWLOC_COMPONENTS");
    for (const auto& [name, value] : env) setenv(name, value.c_str(), 1);
    setenv(kFreshRun, mode.c_str(), 1);
    execl("/proc/self/exe", "discovery_test", static_cast<char*>(nullptr));
    _exit(65);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The dynamic loader's log (LD_DEBUG=files) of the one fresh run that wrote
// files named `prefix`.PID.
std::string LoaderLog(const std::string& prefix) {
  const std::filesystem::path p(prefix);
  std::string log;
  for (const auto& e : std::filesystem::directory_iterator(p.parent_path())) {
    if (e.path().filename().string().rfind(p.filename().string() + ".", 0) != 0) continue;
    std::ifstream in(e.path());
    log.append(std::istreambuf_iterator<char>(in), {});
  }
  return log;
}

TEST(HwlocPlugins, TheOpenGlAndOpenClPluginsAreNotLoaded) {
  // Without the call hwloc maps them, where they are installed: the control.
  const int without = FreshRun("hwloc-plugins");
  ASSERT_GE(without, 0);
  ASSERT_LT(without, 2) << "hwloc_topology_init failed, or the test binary could not run again";
  if (without == 0) GTEST_SKIP() << "hwloc mapped neither its OpenGL nor its OpenCL plugin here (not installed, or not "
                                     "loadable in this build)";
  EXPECT_EQ(FreshRun("hwloc-plugins-skipped"), 0);
}

// A launch that finds its host in the cache never starts hwloc (which loads
// its plugins, libxml2 with ICU among them, at its first topology) nor loads
// libxml2 itself, and still has the topology for the engine. Told by the
// dynamic loader's own log of a fresh process.
TEST(LocalHost, ACacheEntryIsReadWithoutHwlocOrLibxml2) {
  char folder[] = "/tmp/gl-topology-cache-XXXXXX";
  ASSERT_NE(mkdtemp(folder), nullptr);
  const std::string dir = folder;
  auto run = [&](const std::string& name) {
    const int code = FreshRun("discover", {{"XDG_RUNTIME_DIR", dir}, {"LD_DEBUG", "files"},
                                           {"LD_DEBUG_OUTPUT", dir + "/" + name}});
    EXPECT_EQ(code, 0) << name << ": discovery failed, or the engine got no topology";
    return LoaderLog(dir + "/" + name);
  };
  const std::string live = run("live");  // no entry yet: discovered live, then kept
  const std::string cached = run("cached");
  std::filesystem::remove_all(folder);
  ASSERT_NE(live.find("calling init"), std::string::npos) << "no loader log: " << live.substr(0, 500);
  // The control: live discovery loads hwloc's PCI plugin, where hwloc has its plugins (the
  // sanitizer builds point HWLOC_PLUGINS_PATH at an empty folder).
  if (live.find("hwloc_pci") == std::string::npos) {
    GTEST_SKIP() << "live discovery loaded no hwloc plugin here: nothing to tell the cached run from";
  }
  EXPECT_EQ(cached.find("/hwloc/hwloc_"), std::string::npos) << "an hwloc plugin was loaded from the cache entry";
  EXPECT_EQ(cached.find("libxml2"), std::string::npos) << "libxml2 was loaded from the cache entry";
  EXPECT_NE(cached.find("calling init"), std::string::npos) << "no loader log: " << cached.substr(0, 500);
}

// An entry gives back exactly what was kept: every field of the topology
// (recorded machines with GPUs, NICs, NVLink, xGMI; values sysfs and NVML
// would add), and the engine's XML byte for byte.
TEST(TopologyCache, AnEntryGivesBackTheTopologyAndTheEngineXmlExactly) {
  char folder[] = "/tmp/gl-topology-cache-XXXXXX";
  ASSERT_NE(mkdtemp(folder), nullptr);
  const std::string path = std::string(folder) + "/topology-test.entry";
  std::vector<std::string> files;
  for (const Recorded& r : kRecorded) files.push_back(PathOf(r.file));
  for (const char* nccl : {"aws-ofi-nccl/p4de-24xl-topo.xml", "rccl/topo_16p1h.xml", "azhpc-images/ndv4-topo.xml"}) {
    files.push_back(std::string(GL_TEST_DATA) + "/topologies/nccl/" + nccl);
  }
  for (const std::string& file : files) {
    auto host = LoadTopologyFile(file);
    ASSERT_TRUE(host.ok()) << file << ": " << host.status().ToString();
    CachedTopology kept{*host, "<?xml version=\"1.0\"?>\n<topology>" + file + "</topology>\n"};
    kept.host.hostname.clear();  // not kept: gethostname names this host
    for (Nic& n : kept.host.nics) n.gbps = 12.5 / 3;  // sysfs speeds are rarely round
    for (Gpu& g : kept.host.gpus) {
      g.uuid = "GPU-" + std::to_string(g.index) + "-\"quoted\"";
      g.memory_bytes = (uint64_t{80} << 30) + 7;
    }
    StoreCachedTopology(path, kept);
    const std::optional<CachedTopology> back = ReadCachedTopology(path);
    ASSERT_TRUE(back.has_value()) << file;
    EXPECT_TRUE(back->host == kept.host) << file << "\nkept:\n" << AsJson(kept.host) << "\nback:\n" << AsJson(back->host);
    EXPECT_EQ(back->engine_xml, kept.engine_xml) << file;
  }
  // Cut short anywhere, an entry is not used.
  std::ifstream in(path);
  const std::string whole((std::istreambuf_iterator<char>(in)), {});
  for (size_t cut : {size_t{0}, size_t{10}, whole.find('\n'), whole.find('\n') + 40, whole.find("<?xml"),
                     whole.size() - 3}) {
    std::ofstream(path, std::ios::trunc) << whole.substr(0, cut);
    EXPECT_FALSE(ReadCachedTopology(path).has_value()) << "cut at " << cut << " of " << whole.size();
  }
  std::filesystem::remove_all(folder);
}
}  // namespace
}  // namespace gpulaunch
