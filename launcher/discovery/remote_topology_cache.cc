#include "launcher/discovery/remote_topology_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <sstream>

#include "common/env.h"
#include "common/file_write.h"
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
  return *dir + "/remote-" + Sha256Hex(key).substr(0, 32) + ".xml";
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
  if (age > kMaxCachedProbeAge || age.count() < 0) return std::nullopt;
  std::string text = ReadFileOrEmpty(*path);
  const auto fingerprint = FingerprintIn(text);
  // Cut short or from an older probe: not a whole report.
  if (!fingerprint || text.find("</topology>") == std::string::npos) return std::nullopt;
  return CachedProbe{std::move(text), *fingerprint};
}

void StoreCachedProbe(const std::string& host, const std::string& probe_path, const std::string& output) {
  const auto path = EntryPath(host, probe_path);
  if (path && FingerprintIn(output)) (void)WriteFileAtomically(*path, output);
}

void DropCachedProbe(const std::string& host, const std::string& probe_path) {
  if (const auto path = EntryPath(host, probe_path)) unlink(path->c_str());
}

}  // namespace gpulaunch
