// Other hosts' topologies, as gpulaunch-probe last reported them, kept on the
// launching host so that a launch does not discover every host again: over
// ssh the discovery launch costs about as much as the job's own (a 64-rank
// `/bin/true` over the 4 namespace hosts: 0.55 s of 1.2 s; docs/benchmarks.md).
//
// A cached topology is never trusted on its own. Each entry holds the host's
// fingerprint (launcher/base/host_fingerprint.h) from the same probe; the
// launch hands the fingerprints to its control server, one rank on each host
// sends the host's fingerprint with its first request, and no rank anywhere
// gets its row (so none runs) before every host matched. A host that changed
// gets its entry dropped, and the job is planned on a fresh discovery and
// launched again (launch_command.cc). Entries older than kMaxCachedProbeAge
// are not used either.
//
// An entry holds the topology as gpulaunch read it from the probe's report
// (a one-host cluster file, with the Slurm tree address and the host's own
// name beside it) and the fingerprint: a launch planned from the cache
// starts no hwloc and parses no host's XML (topology_cache.h says what that
// costs).
//
// Where: the local topology cache's folder (topology_cache.h), one file a
// host and probe (its path, and its size and time here: another installation
// or a rebuilt one may report otherwise).
// GPULAUNCH_TOPOLOGY_CACHE=0 turns it off. Only launches use it: `plan`,
// `--dry-run`, `check` and `nodes` discover every time (and store what they
// found).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/host_topology.h"

namespace gpulaunch {

inline constexpr std::chrono::seconds kMaxCachedProbeAge{3600};

// The probe's line that carries its host's fingerprint, and reading it back.
std::string FingerprintComment(const std::string& fingerprint);
std::optional<std::string> FingerprintIn(const std::string& probe_output);

struct CachedProbe {
  HostTopology topology;    // as LoadHwlocXmlText read the probe's report
  std::string fingerprint;  // the host's fingerprint in that report
};

// False when GPULAUNCH_TOPOLOGY_CACHE=0.
bool RemoteTopologyCacheEnabled();

// The entry for `host` probed with `probe_path`: nullopt when there is none,
// it is older than kMaxCachedProbeAge, it is cut short or of another format,
// or caching is off.
std::optional<CachedProbe> ReadCachedProbe(const std::string& host, const std::string& probe_path);

// Keeps what the probe reported (`output`) and its reading (`topology`) as
// the entry (atomically; best effort, silent on failure); a report without a
// fingerprint (an older probe) is not kept. Removes every remote entry older
// than kMaxCachedProbeAge (never read again).
void StoreCachedProbe(const std::string& host, const std::string& probe_path, const std::string& output,
                      const HostTopology& topology);

void DropCachedProbe(const std::string& host, const std::string& probe_path);

}  // namespace gpulaunch
