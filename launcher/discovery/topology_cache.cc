#include "launcher/discovery/topology_cache.h"

#include <dirent.h>
#include <hwloc.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>
#include <vector>

#include "common/cluster_json.h"
#include "common/env.h"
#include "common/file_write.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "launcher/base/host_fingerprint.h"

extern char** environ;

namespace gpulaunch {
namespace {

// Bump when DiscoverLocalHost's hwloc settings change (filters, components).
constexpr const char* kDiscoverySettings = "io=all;-gl;-opencl;v1";
constexpr size_t kKeptEntries = 16;

std::string SortedEntries(const std::string& dir) {
  std::string out;
  for (const std::string& n : SortedDirectoryNames(dir)) out += n + "\n";
  return out;
}

// What the entry's name is made of: everything the topology hwloc would
// discover now depends on.
std::optional<std::string> Fingerprint() {
  const std::string boot = ReadFileOrEmpty("/proc/sys/kernel/random/boot_id");
  if (boot.empty()) return std::nullopt;  // no way to tell a reboot
  std::ostringstream f;
  f << kDiscoverySettings << "\nhwloc " << HWLOC_API_VERSION << " " << hwloc_get_api_version() << "\nboot "
    << boot << "pci\n" << SortedEntries("/sys/bus/pci/devices") << "cpus " << ReadFileOrEmpty("/sys/devices/system/cpu/online")
    << "nodes " << ReadFileOrEmpty("/sys/devices/system/node/online") << "cgroup " << ReadFileOrEmpty("/proc/self/cgroup");
  cpu_set_t affinity;
  CPU_ZERO(&affinity);
  if (sched_getaffinity(0, sizeof affinity, &affinity) != 0) return std::nullopt;
  f << "affinity";
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &affinity)) f << " " << c;
  std::vector<std::string> hwloc_env;
  for (char** e = environ; e && *e; ++e)
    if (std::string(*e).rfind("HWLOC_", 0) == 0) hwloc_env.emplace_back(*e);
  std::sort(hwloc_env.begin(), hwloc_env.end());
  for (const std::string& e : hwloc_env) f << "\n" << e;
  return f.str();
}

}  // namespace

std::optional<std::string> TopologyCacheFolder() {
  const std::string runtime = EnvOr("XDG_RUNTIME_DIR", "");
  const std::string dir = !runtime.empty() ? runtime + "/gpulaunch" : "/tmp/gpulaunch-" + std::to_string(getuid());
  mkdir(dir.c_str(), 0700);  // EEXIST is fine: checked below
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0) {
    return std::nullopt;
  }
  return dir;
}

std::vector<CacheFile> CacheEntries(const std::string& dir, const std::string& prefix) {
  std::vector<CacheFile> entries;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind(prefix, 0) != 0 || !(name.ends_with(".entry") || name.ends_with(".xml"))) continue;
      struct stat st {};
      if (lstat((dir + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        entries.push_back({st.st_mtime, dir + "/" + name});
      }
    }
    closedir(d);
  }
  std::sort(entries.begin(), entries.end(), [](const CacheFile& a, const CacheFile& b) {
    return a.modified != b.modified ? a.modified > b.modified : a.path > b.path;
  });
  return entries;
}

std::optional<std::string> TopologyCachePath() {
  if (EnvOr("GPULAUNCH_TOPOLOGY_CACHE", "1") == "0") return std::nullopt;
  // hwloc told to read a file, a synthetic description or another root:
  // that input may change under the same name, and reading it is cheap.
  for (const char* input : {"HWLOC_XMLFILE", "HWLOC_SYNTHETIC", "HWLOC_FSROOT", "HWLOC_CPUID_PATH"})
    if (!EnvOr(input, "").empty()) return std::nullopt;
  const auto fingerprint = Fingerprint();
  if (!fingerprint) return std::nullopt;
  const auto dir = TopologyCacheFolder();
  if (!dir) return std::nullopt;
  return *dir + "/topology-" + Sha256Hex(*fingerprint).substr(0, 32) + ".entry";
}

namespace {

// An entry: this line, then the cluster JSON (its length in bytes on the
// line), then the engine's XML to the end. Lengths, not separators: neither
// part is read for a marker, and an entry cut short anywhere shows.
constexpr std::string_view kEntryMagic = "gpulaunch-topology-cache 1 ";

std::string EncodeEntry(const CachedTopology& entry) {
  const std::string json = DumpHostJson(entry.host);
  return std::string(kEntryMagic) + std::to_string(json.size()) + "\n" + json + entry.engine_xml;
}

std::optional<CachedTopology> DecodeEntry(const std::string& bytes, const std::string& origin) {
  if (bytes.compare(0, kEntryMagic.size(), kEntryMagic) != 0) return std::nullopt;
  const size_t eol = bytes.find('\n');
  if (eol == std::string::npos) return std::nullopt;
  const std::optional<int64_t> json_size =
      ParseInt(std::string_view(bytes).substr(kEntryMagic.size(), eol - kEntryMagic.size()));
  if (!json_size || *json_size < 0 || static_cast<size_t>(*json_size) > bytes.size() - eol - 1) return std::nullopt;
  const size_t json_bytes = static_cast<size_t>(*json_size);
  CachedTopology entry;
  entry.engine_xml = bytes.substr(eol + 1 + json_bytes);
  if (entry.engine_xml.find("</topology>") == std::string::npos) return std::nullopt;  // cut short
  auto host = LoadHostJson(bytes.substr(eol + 1, json_bytes), origin);
  if (!host.ok()) return std::nullopt;
  entry.host = *std::move(host);
  return entry;
}

}  // namespace

std::optional<CachedTopology> ReadCachedTopology(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid()) return std::nullopt;
  return DecodeEntry(ReadFileOrEmpty(path), path);
}

bool DropCachedTopology(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid()) return false;
  return unlink(path.c_str()) == 0;
}

void StoreCachedTopology(const std::string& path, const CachedTopology& entry) {
  if (!WriteFileAtomically(path, EncodeEntry(entry)).ok()) return;
  // Keep the newest few: a new cgroup (a Slurm job, a container) makes a new
  // entry, and old ones would pile up.
  const std::vector<CacheFile> entries = CacheEntries(path.substr(0, path.rfind('/')), "topology-");
  for (size_t i = kKeptEntries; i < entries.size(); ++i)
    if (entries[i].path != path) unlink(entries[i].path.c_str());
}

}  // namespace gpulaunch
