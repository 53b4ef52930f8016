// PlaceBySlot: the launcher's first placement, GPU-first.
//
// Hosts are filled in the order given, each up to its slots (like mpirun's
// by-slot mapping). On a host whose ranks all fit on its GPUs, every rank owns
// one GPU (PCI bus order), the cores of that GPU's NUMA node split evenly
// among the ranks there, that node's memory, and the nearest data NIC (an
// equidistant unused NIC is preferred over a shared one). Other hosts get one
// rank per contiguous block of cores. More ranks than slots is "infeasible"
// unless `oversubscribe`, which spreads ranks evenly over hosts, unbound.
//
// The topology-aware engine of policies/ (issue "Topology-compact
// placement") replaces this behind the same Placement type.
#pragma once

#include <vector>

#include "policies/placement.h"

namespace gpulaunch {

// A request for PlaceBySlot: `ranks` (0: one per slot) and oversubscription.
inline JobRequest SlotJob(int ranks, bool oversubscribe) {
  JobRequest r;
  r.ranks = ranks;
  r.oversubscribe = oversubscribe;
  return r;
}

// Slots a host offers: the user's count, else its GPUs, else its cores.
int EffectiveSlots(const ClusterHost& host);

StatusOr<Placement> PlaceBySlot(const JobRequest& request, const std::vector<ClusterHost>& hosts);

}  // namespace gpulaunch
