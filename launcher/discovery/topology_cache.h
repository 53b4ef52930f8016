// This host's topology, kept between launches. Finding the PCI devices
// reads each one's configuration space, which on a virtual machine traps to
// the hypervisor (measured here: 40% of gpulaunch's own CPU for a 16-rank
// launch, about 6 ms), and a host's devices do not change from one launch to
// the next. An entry is used only while everything discovery depends on is
// unchanged: the boot, hwloc's version, the PCI devices and online CPUs and
// memory nodes, this process's CPU affinity and cgroup, and every HWLOC_*
// variable; any change gives another entry, discovered live.
//
// An entry holds the topology as gpulaunch reads it (cluster JSON, one host)
// and hwloc's v1 XML of it for the engine, so that a launch that finds one
// never starts hwloc: hwloc loads every plugin it has at its first topology
// (libxml2 with ICU, libpciaccess: about 5 ms of CPU a start on a 2-core VM,
// docs/benchmarks.md), and parses XML, to give what the entry already says.
//
// Where: $XDG_RUNTIME_DIR/gpulaunch, else /tmp/gpulaunch-UID; the folder is
// created 0700 and refused when it is a symlink or another user's.
// GPULAUNCH_TOPOLOGY_CACHE=0 turns it off, and so does pointing hwloc at
// another input (HWLOC_XMLFILE, HWLOC_SYNTHETIC, HWLOC_FSROOT,
// HWLOC_CPUID_PATH). Losing an entry costs one discovery.
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "common/host_topology.h"

namespace gpulaunch {

// The cache's folder, made if missing; nullopt when it is not safely ours.
std::optional<std::string> TopologyCacheFolder();

struct CacheFile {
  time_t modified;
  std::string path;
};

// The entries in `dir` whose names start with `prefix` ("topology-",
// "remote-"), of this format (.entry) and of older gpulaunch versions (.xml),
// newest first; never a file another launch is still writing (.tmp.N).
std::vector<CacheFile> CacheEntries(const std::string& dir, const std::string& prefix);

// The entry for this process as things are now; nullopt when caching is off
// or no safe folder exists.
std::optional<std::string> TopologyCachePath();

struct CachedTopology {
  // As hwloc gave it, before sysfs, UCX and NVML add theirs; its hostname is
  // not kept (DiscoverLocalHost names the host by gethostname).
  HostTopology host;
  std::string engine_xml;  // hwloc v1 XML of the same topology (LocalTopologyXmlForEngine)
};

// The entry, or nullopt when it is missing, cut short or unreadable.
std::optional<CachedTopology> ReadCachedTopology(const std::string& path);

// Removes the entry at `path` when it is a file of this user's (never a
// link or another's); true when one was removed.
bool DropCachedTopology(const std::string& path);

// Keeps `entry` (atomically; best effort: a failure is silent, the next
// launch discovers live again), and removes all but the 16 newest entries of
// the folder.
void StoreCachedTopology(const std::string& path, const CachedTopology& entry);

}  // namespace gpulaunch
