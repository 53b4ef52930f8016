// Which of a host's free GPUs a rank (or a host's share of a job) gets: the
// placement engine's "pick" step (placement_engine.h).
#pragma once

#include <vector>

#include "common/cluster_topology.h"

namespace gpulaunch {

// Free GPUs grouped into islands (NVLink components, else NUMA nodes), each
// in PCI bus order.
std::vector<std::vector<int>> Islands(const ClusterHost& host);

// `need` GPUs: the smallest island that holds them all (keeps big islands
// whole), else whole islands from the largest down.
std::vector<int> PickGpus(const ClusterHost& host, int need);

}  // namespace gpulaunch
