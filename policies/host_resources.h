// The "fill" step of placement (placement_engine.h): once a host's ranks
// have their GPUs, their CPUs, memory node and NIC.
#pragma once

#include <vector>

#include "common/host_topology.h"
#include "policies/nic_choice.h"
#include "policies/placement.h"

namespace gpulaunch {

// GPU ranks (r.gpus_per_rank > 0): the cores of each GPU's NUMA node split
// among the ranks whose GPU is there (details in host_resources.cc), the
// NIC by nic_choice.h. CPU ranks: contiguous blocks of r.cores_per_rank
// cores in core order, or the host's cores split evenly when 0. `nics`:
// the NIC sites of the topologies seen so far in this placement.
void FillHostResources(const HostTopology& t, std::vector<RankSlot*>& ranks, const JobRequest& r,
                       NicAssignerCache& nics);

}  // namespace gpulaunch
