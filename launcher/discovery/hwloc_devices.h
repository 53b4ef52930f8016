// The I/O side of a hwloc topology for hwloc_source.cc: GPUs (PCI display
// and 3D controllers, not BMC consoles), data-network NICs (RDMA devices and
// Slingshot, not plain Ethernet) and the GPU-GPU link matrix, added to a
// HostTopology whose cores and NUMA nodes are already filled.
#pragma once

#include <hwloc.h>

#include <vector>

#include "common/host_topology.h"

namespace gpulaunch {

// OS indices of the PUs in `set`, ascending.
std::vector<int> PusOf(hwloc_const_cpuset_t set);

// An object's info attribute `name`, or nullptr.
const char* HwlocInfo(hwloc_obj_t obj, const char* name);

void AddGpus(hwloc_topology_t topo, HostTopology& host);
void AddNics(hwloc_topology_t topo, HostTopology& host);
void AddGpuLinks(hwloc_topology_t topo, HostTopology& host);

}  // namespace gpulaunch
