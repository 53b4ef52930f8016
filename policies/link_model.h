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

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
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

// What the model asks about hosts again and again, by host index: each
// host's measured leaf, each host pair's measured figure and switch count.
// Looked up by name the first time and remembered, so that a model that
// walks every ring edge of a plan does no string work per edge. One per
// evaluation: it refers to `cluster`, which must not change meanwhile.
class LinkLookup {
 public:
  explicit LinkLookup(const ClusterTopology& cluster) : c_(cluster) {}
  const ClusterTopology& cluster() const { return c_; }
  const MeasuredLeaf* LeafOf(int host);              // nullptr: under no measured leaf
  const MeasuredLink* MeasuredPair(int a, int b);    // nullptr: not measured
  int SwitchesBetween(int a, int b);                 // NetworkTree::SwitchesBetween; 1 with no tree

 private:
  struct PairFacts {
    const MeasuredLink* measured = nullptr;
    int switches = 0;
  };
  const PairFacts& Pair(int a, int b);
  const ClusterTopology& c_;
  std::unordered_map<int, const MeasuredLeaf*> leaf_;
  std::unordered_map<uint64_t, PairFacts> pairs_;  // key: (lesser << 32) | greater host index
};

LinkCost CostBetween(LinkLookup& links, const SlotRef& a, const SlotRef& b);
// The same for one question (a lookup of its own).
LinkCost CostBetween(const ClusterTopology& cluster, const SlotRef& a, const SlotRef& b);

// The flows that run at once in one phase of a step (every TP group's ring,
// say), counted per measured leaf and direction: a ring edge (or a
// point-to-point transfer) from a host under one measured leaf to a host
// under another is one flow up that leaf's uplink and one down the other's.
// Hosts outside the measured leaves add nothing.
struct UplinkLoad {
  std::map<const MeasuredLeaf*, int> up, down;
};
void AddRingFlows(LinkLookup& links, const std::vector<SlotRef>& ring, UplinkLoad& load);
void AddFlow(LinkLookup& links, const SlotRef& from, const SlotRef& to, UplinkLoad& load);

// The link from `a` to `b` while `load` runs: its own figure, capped by its
// share of each measured uplink it crosses (the uplink's figure divided by
// the flows on it).
LinkCost LoadedCost(LinkLookup& links, const SlotRef& a, const SlotRef& b, const UplinkLoad* load);

// Ring allreduce of `bytes` over `ring` (in order): 2(n-1)/n * bytes at the
// slowest link's bandwidth, plus 2(n-1) times the slowest link's latency. Seconds.
double RingAllreduceSeconds(LinkLookup& links, const std::vector<SlotRef>& ring, double bytes,
                            const UplinkLoad* load = nullptr);
double PointToPointSeconds(LinkLookup& links, const SlotRef& a, const SlotRef& b, double bytes,
                           const UplinkLoad* load = nullptr);

}  // namespace gpulaunch
