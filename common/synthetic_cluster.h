// Synthetic clusters for plan, slurm-config, tests and benchmarks, in the one
// cluster-spec syntax (cluster_spec.h):
//   "node:1 gpu:8"                       one 8-GPU host
//   "leaf:2 node:4 gpu:8 nic:4"          2 leaves x 4 hosts under one spine
//   "pod:4 leaf:16 node:16 gpu:8"        1,024 hosts under a 3-level tree
//   "leaf:1 node:4 gpu:8 + leaf:1 node:4 gpu:4 nic:2"   two kinds of hosts
// Keys modelled: pod (optional), leaf (per pod, default 1), node (hosts per
// leaf, default 1), gpu (per host, default 0), nic (per host, default 0),
// numa (default 2), core (per NUMA node, default 16), nvlink (0/1: GPUs of a
// host on one NVSwitch at 300 GB/s, default 1 when gpu > 1); mem and link
// (the simulator's) are refused by name. Hosts are node0001..., leaves
// leaf01..., pods pod1..., numbered on across groups; the top switch "spine".
#pragma once

#include <string_view>

#include "common/cluster_spec.h"
#include "common/cluster_topology.h"
#include "common/status.h"

namespace gpulaunch {

StatusOr<ClusterTopology> MakeSyntheticCluster(const ClusterSpec& spec);
// Parses `spec` first (its deprecation notes are dropped: callers that show
// them parse with ParseClusterSpec themselves).
StatusOr<ClusterTopology> MakeSyntheticCluster(std::string_view spec);

// One host's hardware: `numa` nodes of `cores` single-thread cores, GPUs and
// NICs spread evenly over the NUMA nodes, GPU g sharing a PCIe switch with
// NIC g * nics / gpus; NVSwitch links when `nvswitch_gbps` > 0.
HostTopology MakeSyntheticHost(int numa, int cores_per_numa, int gpus, int nics, double nvswitch_gbps);

}  // namespace gpulaunch
