// The link cost model: bandwidth and latency between two ranks' slots, and
// the modelled per-step communication time of a parallel layout.
//
// Link classes and the figures used (docs/cost-model.md gives the sources):
//   same GPU                     -
//   NVLink / NVSwitch / XGMI     recorded GB/s (hwloc matrices), 2 us
//   PCIe, same switch            24 GB/s, 2 us   (Gen4 x16, ~75% of 31.5 GB/s)
//   PCIe, same host bridge       20 GB/s, 3 us
//   same socket (via CPU)        16 GB/s, 4 us
//   across sockets (UPI/xGMI)    10 GB/s, 5 us
//   CPU ranks on one host        10 GB/s, 0.5 us (shared memory; measured 9-12 GB/s here)
//   between hosts, same leaf     the slower host's fastest NIC (when its speed
//                                is known), else the cluster's GB/s, 3 us;
//                                with the ranks' NICs known, each side's NIC
//                                speed and its GPU-to-NIC path's figure above
//                                (a NIC across the sockets: 10 GB/s) cap it
//   each further switch level    +1 us and half the bandwidth (2:1 taper)
// Measured links (ClusterTopology::links, from `gpulaunch linkcheck`) replace
// these: a measured host pair's figure, a host's measured shared memory.
// With measured leaves, flows that run at once share each leaf's uplink
// (UplinkLoad below); nominal figures know no sharing.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/cluster_topology.h"
#include "policies/path_type.h"

namespace gpulaunch {

struct LinkCost {
  double gbps = 0;
  double latency_us = 0;
  const char* cls = "";
};

// Where a rank runs, for the model: host index in the cluster, its GPU (or
// -1), and the NIC it sends through (index into the host's nics, or -1: the
// host's fastest, over a path that does not limit it).
struct SlotRef {
  int host = 0;
  int gpu = -1;
  int nic = -1;
};

// The figure for a path type inside one host (NVL has its recorded bandwidth).
LinkCost PathCost(PathType path);

LinkCost CostBetween(const ClusterTopology& cluster, const SlotRef& a, const SlotRef& b);

// The flows that run at once in one phase of a step (every TP group's ring,
// say), counted per measured leaf and direction: a ring edge (or a
// point-to-point transfer) from a host under one measured leaf to a host
// under another is one flow up that leaf's uplink and one down the other's.
// Hosts outside the measured leaves add nothing.
struct UplinkLoad {
  std::map<std::string, int> up, down;  // by leaf name
};
void AddRingFlows(const ClusterTopology& cluster, const std::vector<SlotRef>& ring, UplinkLoad& load);
void AddFlow(const ClusterTopology& cluster, const SlotRef& from, const SlotRef& to, UplinkLoad& load);

// The link from `a` to `b` while `load` runs: its own figure, capped by its
// share of each measured uplink it crosses (the uplink's figure divided by
// the flows on it).
LinkCost LoadedCost(const ClusterTopology& cluster, const SlotRef& a, const SlotRef& b, const UplinkLoad* load);

// Ring allreduce of `bytes` over `ring` (in order): 2(n-1)/n * bytes at the
// slowest link's bandwidth, plus 2(n-1) times the slowest link's latency. Seconds.
double RingAllreduceSeconds(const ClusterTopology& cluster, const std::vector<SlotRef>& ring, double bytes,
                            const UplinkLoad* load = nullptr);
double PointToPointSeconds(const ClusterTopology& cluster, const SlotRef& a, const SlotRef& b, double bytes,
                           const UplinkLoad* load = nullptr);

}  // namespace gpulaunch
