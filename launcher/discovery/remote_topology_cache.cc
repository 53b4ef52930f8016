#include "launcher/discovery/remote_topology_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include "common/cluster_json.h"
#include "common/env.h"
#include "common/file_write.h"
#include "common/json.h"
#include "common/sha256.h"
#include "common/strings.h"
#include "launcher/discovery/topology_cache.h"

namespace gpulaunch {
namespace {

constexpr const char* kMarker = "<!-- gpulaunch-host-fingerprint: ";

// Named by the host, the probe's path and, where this host has that file,
// its size and modification time: a rebuilt or upgraded gpulaunch (installed
// at the same path everywhere, as mpirun requires) starts afresh.
std::optional<std::string> EntryPath(const std::string& host, const std::string& probe_path) {
  if (!RemoteTopologyCacheEnabled()) return std::nullopt;
  const auto dir = TopologyCacheFolder();
  if (!dir) return std::nullopt;
  std::string key = host + "\n" + probe_path;
  struct stat st {};
  if (stat(probe_path.c_str(), &st) == 0) {
    key += "\n" + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
  }
  return *dir + "/remote-" + Sha256Hex(key).substr(0, 32) + ".entry";
}

constexpr const char* kEntrySchema = "gpulaunch-remote-topology/v1";

// One JSON object: the schema, the fingerprint, the host's own name and Slurm
// tree address (which a cluster file does not hold) and the topology as a
// one-host cluster file (a string).
std::string EncodeEntry(const std::string& fingerprint, const HostTopology& t) {
  Json entry = Json::Object();
  entry.Set("schema", kEntrySchema);
  entry.Set("fingerprint", fingerprint);
  entry.Set("hostname", t.hostname);
  entry.Set("slurm_topology_addr", t.slurm_topology_addr);
  entry.Set("slurm_topology_pattern", t.slurm_topology_pattern);
  entry.Set("host", DumpHostJson(t));
  return entry.Write();
}

std::optional<CachedProbe> DecodeProbeEntry(const std::string& text, const std::string& origin) {
  const auto entry = ParseJson(text, origin);  // cut short: not valid JSON
  if (!entry.ok() || !entry->is(Json::Type::kObject)) return std::nullopt;
  auto text_of = [&](const char* key) -> std::optional<std::string> {
    const Json* v = entry->Find(key);
    if (!v || !v->is(Json::Type::kString)) return std::nullopt;
    return v->AsString();
  };
  const auto schema = text_of("schema"), fingerprint = text_of("fingerprint"), hostname = text_of("hostname"),
             addr = text_of("slurm_topology_addr"), pattern = text_of("slurm_topology_pattern"), host = text_of("host");
  if (!schema || *schema != kEntrySchema || !fingerprint || fingerprint->empty() || !hostname || !addr || !pattern ||
      !host) {
    return std::nullopt;
  }
  auto topology = LoadHostJson(*host, origin);
  if (!topology.ok()) return std::nullopt;
  CachedProbe probe{*std::move(topology), *fingerprint};
  probe.topology.hostname = *hostname;
  probe.topology.slurm_topology_addr = *addr;
  probe.topology.slurm_topology_pattern = *pattern;
  return probe;
}

}  // namespace

std::string FingerprintComment(const std::string& fingerprint) { return kMarker + fingerprint + " -->"; }

std::optional<std::string> FingerprintIn(const std::string& probe_output) {
  const size_t at = probe_output.rfind(kMarker);
  if (at == std::string::npos) return std::nullopt;
  const size_t from = at + std::string(kMarker).size();
  const size_t end = probe_output.find(' ', from);
  if (end == std::string::npos || end == from) return std::nullopt;
  return probe_output.substr(from, end - from);
}

bool RemoteTopologyCacheEnabled() { return EnvOr("GPULAUNCH_TOPOLOGY_CACHE", "1") != "0"; }

std::optional<CachedProbe> ReadCachedProbe(const std::string& host, const std::string& probe_path) {
  const auto path = EntryPath(host, probe_path);
  struct stat st {};
  if (!path || lstat(path->c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid()) return std::nullopt;
  const auto age = std::chrono::seconds(std::time(nullptr) - st.st_mtime);
  // An entry's time may be up to a clock tick ahead of time()'s coarse clock
  // (Linux 6.13 and later stamp files with the fine one), which reads as a
  // second in the future across a second's boundary: allowed, a later one not.
  if (age > kMaxCachedProbeAge || age.count() < -2) return std::nullopt;
  return DecodeProbeEntry(ReadFileOrEmpty(*path), *path);
}

void StoreCachedProbe(const std::string& host, const std::string& probe_path, const std::string& output,
                      const HostTopology& topology) {
  const auto path = EntryPath(host, probe_path);
  const auto fingerprint = FingerprintIn(output);
  if (!path || !fingerprint) return;
  (void)WriteFileAtomically(*path, EncodeEntry(*fingerprint, topology));
  // Entries past their age are never read again (a host gone from the
  // cluster, a probe rebuilt or upgraded, another format): remove them here,
  // where a probe ran anyway, so the folder holds no more than an hour's hosts.
  const time_t now = std::time(nullptr);
  for (const CacheFile& e : CacheEntries(path->substr(0, path->rfind('/')), "remote-")) {
    if (now - e.modified > kMaxCachedProbeAge.count() && e.path != *path) unlink(e.path.c_str());
  }
}

void DropCachedProbe(const std::string& host, const std::string& probe_path) {
  if (const auto path = EntryPath(host, probe_path)) unlink(path->c_str());
}

}  // namespace gpulaunch
