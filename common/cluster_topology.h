// A cluster as placement sees it: hosts with their hardware and state, and
// the switch tree between them. Built from discovery (hwloc per host), from a
// recorded file, or synthetically (synthetic_cluster.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/host_topology.h"
#include "common/link_table.h"
#include "common/network_tree.h"

namespace gpulaunch {

// A host's topology, shared by the hosts that have the same one: the 65,536
// hosts of one --topology-file, or every node of a synthetic group, hold one
// copy, so memory grows with the distinct machines, not with the host list.
// Read it through -> and * (or as a const HostTopology&); write through
// Mutable(), which first copies it when other hosts share it.
class SharedTopology {
 public:
  SharedTopology() : p_(std::make_shared<HostTopology>()) {}
  SharedTopology(HostTopology t) : p_(std::make_shared<HostTopology>(std::move(t))) {}  // NOLINT: implicit on purpose

  const HostTopology& operator*() const { return *p_; }
  const HostTopology* operator->() const { return p_.get(); }
  operator const HostTopology&() const { return *p_; }  // NOLINT: implicit on purpose
  HostTopology& Mutable() {
    if (p_.use_count() > 1) p_ = std::make_shared<HostTopology>(*p_);
    return *p_;
  }

 private:
  std::shared_ptr<HostTopology> p_;
};

// One host: what discovery (or a recording, or a synthetic cluster) found and
// what the user granted on it. The one host type from host resolution to
// placement, for launches and `gpulaunch plan` alike.
struct ClusterHost {
  std::string name{};
  SharedTopology topology{};
  bool healthy = true;
  // By GPU index: GPUs other jobs hold (a Slurm node shared with them); never
  // given to a rank. Empty: every GPU is this job's.
  std::vector<bool> gpu_busy{};
  // Slots the user granted (-H a:2, hostfile slots=); nullopt: derive them
  // from the topology (GPUs when it has any, else cores).
  std::optional<int> slots{};
  std::optional<int> max_slots{};  // hostfile max_slots=: ranks beyond slots, up to this
  int FreeGpus() const;
  bool GpuFree(int index) const { return gpu_busy.empty() || !gpu_busy[index]; }
};

struct ClusterTopology {
  std::vector<ClusterHost> hosts;
  NetworkTree network;           // empty: every host under one switch
  double nic_gbps = 25.0;        // per NIC, inter-host (GB/s; 200 Gb/s HDR/NDR200 class)
  // Measured links (linkcheck's file): used by the model in place of the
  // nominal figures wherever they cover a pair, a host or a leaf.
  LinkTable links;
};

}  // namespace gpulaunch
