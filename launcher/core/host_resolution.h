// From the command line's host options to HostResources with topologies:
// no host options means the Slurm allocation (SLURM_JOB_NODELIST) when inside
// one, else this machine; local names are discovered in-process;
// remote hosts are probed through the engine (gpulaunch-probe, one rank per
// host); inside a Slurm allocation each host is narrowed to the job's cores
// and GPUs there (slurm_job.h); --topology-file replaces discovery for every host (dry runs).
#pragma once

#include <string>
#include <vector>

#include "common/network_tree.h"
#include "common/status.h"
#include "launcher/core/host_runner.h"
#include "launcher/core/options.h"
#include "policies/placement.h"

namespace gpulaunch {

struct ResolvedHosts {
  std::vector<HostResources> hosts;
  bool all_local = true;
};

struct ResolveSettings {
  std::string probe_path;       // gpulaunch-probe next to gpulaunch
  bool allow_run_as_root = false;
  const HostRunner* runner = nullptr;  // probes remote hosts (an engine); must outlive ResolveHosts
};

StatusOr<ResolvedHosts> ResolveHosts(const LaunchOptions& options, const ResolveSettings& settings);

}  // namespace gpulaunch
