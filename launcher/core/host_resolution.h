// From the command line's host options to ClusterHosts with topologies:
// no host options means the Slurm allocation (SLURM_JOB_NODELIST) when inside
// one, else this machine; local names are discovered in-process;
// remote hosts are probed through the engine (gpulaunch-probe, one rank per
// host); inside a Slurm allocation each host is narrowed to the job's cores
// and GPUs there (slurm_job.h); --topology-file replaces discovery for every host (dry runs).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/cluster_topology.h"
#include "common/network_tree.h"
#include "common/status.h"
#include "launcher/core/host_runner.h"
#include "policies/placement.h"

namespace gpulaunch {

// Which hosts, as the command line named them (launches and `plan` alike).
struct HostRequest {
  std::vector<std::string> host_args;      // each -H/--host value, in order
  std::optional<std::string> hostfile;     // --hostfile / --machinefile
  // --topology-file, repeatable: "FILE" for every host, or "HOST=FILE".
  std::vector<std::string> topology_files;
  // No job will start (--dry-run, plan): recorded topologies may stand in for
  // discovery. A launch refuses --topology-file.
  bool planning_only = false;
};

struct ResolvedHosts {
  std::vector<ClusterHost> hosts;
  bool all_local = true;
  // Remote hosts whose topology came from the cache
  // (launcher/discovery/remote_topology_cache.h), with the fingerprint each
  // must still show: the launch checks them before any rank runs.
  std::map<std::string, std::string> cached_fingerprints;
};

struct ResolveSettings {
  std::string probe_path;       // gpulaunch-probe next to gpulaunch
  bool allow_run_as_root = false;
  const HostRunner* runner = nullptr;  // probes remote hosts (an engine); must outlive ResolveHosts
  // Remote topologies may come from the cache: only for a launch, which
  // confirms them (never inside a Slurm allocation, whose cgroups differ
  // from job to job). Every live probe is stored either way.
  bool use_cached_probes = false;
};

StatusOr<ResolvedHosts> ResolveHosts(const HostRequest& request, const ResolveSettings& settings);

}  // namespace gpulaunch
