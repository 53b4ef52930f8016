// A cluster as placement sees it: hosts with their hardware and state, and
// the switch tree between them. Built from discovery (hwloc per host), from a
// recorded file, or synthetically (synthetic_cluster.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/host_topology.h"
#include "common/network_tree.h"

namespace gpulaunch {

struct ClusterHost {
  std::string name;
  HostTopology topology;
  bool healthy = true;
  std::vector<bool> gpu_busy;  // by GPU index; empty: all free
  std::optional<int> max_ranks;  // slots the user granted (-H a:2, hostfile slots=)
  int FreeGpus() const;
  bool GpuFree(int index) const { return gpu_busy.empty() || !gpu_busy[index]; }
};

struct ClusterTopology {
  std::vector<ClusterHost> hosts;
  NetworkTree network;           // empty: every host under one switch
  double nic_gbps = 25.0;        // per NIC, inter-host (GB/s; 200 Gb/s HDR/NDR200 class)
};

}  // namespace gpulaunch
