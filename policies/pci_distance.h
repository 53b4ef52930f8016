// PCI nearness between devices of one host, shared by every placement policy
// and the link model so that they agree on which NIC or GPU is "near".
#pragma once

#include <cstddef>
#include <vector>

#include "common/host_topology.h"

namespace gpulaunch {

// Number of leading bridges two PCI paths share (0: different host bridges).
int SharedPciPrefix(const PciPath& a, const PciPath& b);

// Lower is nearer: same switch chain (deeper is nearer) beats same host
// bridge beats same NUMA node beats anything else.
int NicDistance(const Gpu& gpu, const Nic& nic);

// The NIC for the next rank on `gpu`: the nearest one, ties going to the one
// with the fewest users so far, so equidistant NICs are shared out. Counts the
// choice in `nic_users` (one entry per t.nics, zero to start). t.nics must not
// be empty.
size_t NearestLeastUsedNic(const HostTopology& t, const Gpu& gpu, std::vector<int>& nic_users);

}  // namespace gpulaunch
