// A short digest of what a host's discovered topology depends on, cheap
// enough for a rank's shim to take: the boot, the PCI devices, the online
// CPUs and memory nodes, the CPUs and memory nodes this process's cgroup may
// use, the network interfaces with their state, the InfiniBand ports with
// theirs, and gpulaunch's version. gpulaunch-probe reports it with a host's
// topology; when a launch plans from a topology cached on the launching host
// (launcher/discovery/remote_topology_cache.h), one rank on each host takes
// it again before any rank runs, and a difference means the host changed
// since (control_protocol.h, `slot`).
//
// It leaves out what differs between processes of one host (the process's
// own affinity, which the engine sets per rank; the cgroup's path, which is
// a new session scope for each ssh login): the probe and the shims are
// started differently but see the same host.
#pragma once

#include <string>
#include <vector>

namespace gpulaunch {

// The digest (hex), read under `root` ("" for this host's /proc and /sys;
// tests pass a folder laid out the same way). Files that do not exist count
// as empty; so the digest is never missing, only less telling.
std::string HostFingerprint(const std::string& root = "");

// The names in `dir` (no dot entries), sorted; empty when it cannot be read.
std::vector<std::string> SortedDirectoryNames(const std::string& dir);

}  // namespace gpulaunch
