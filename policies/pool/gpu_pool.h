// The shared GPU pool that multi-tenant policies decide over: hosts of
// identical GPUs under leaf switches, which GPUs are held, and by whom.
// A pure value with one invariant, checked on every change: a GPU is held by
// at most one allocation (Take refuses a GPU already held; Give refuses one
// that is not), so no decision can assign a GPU twice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/cluster_spec.h"
#include "common/status.h"

namespace gpulaunch::pool {

struct PoolHost {
  std::string name;
  int leaf = 0;   // index of its leaf switch (its fault domain)
  int gpus = 8;   // at most 64
  double gpu_memory_gib = 80;  // per GPU
  double link_gbps = 100;      // the host's network link
  // Its CPUs, when they bind: every job takes one on each host it runs on
  // (a share), so at most this many jobs share the host. 0: not modelled.
  int cpus = 0;
};

// GPUs on one host, as a bit mask of GPU indices.
struct HostShare {
  int host = 0;
  uint64_t gpus = 0;
  bool operator==(const HostShare&) const = default;
};

struct Allocation {
  std::vector<HostShare> shares;  // by host index, ascending
  int gpus() const;
  int hosts() const { return static_cast<int>(shares.size()); }
  bool empty() const { return shares.empty(); }
};

class GpuPool {
 public:
  GpuPool() = default;
  explicit GpuPool(std::vector<PoolHost> hosts);
  // "leaf:2 node:8 gpu:8 [mem:80] [link:100] [core:N [numa:M]]": 2 leaf
  // switches of 8 hosts of 8 GPUs (80 GiB each, 100 Gb/s links by default;
  // N x M CPUs each when given: PoolHost::cpus). Groups of different
  // hosts join with '+' ("leaf:1 node:8 gpu:8 mem:80 + leaf:1 node:8 gpu:8
  // mem:40 link:200"), each under leaf switches of its own; every group has
  // the same GPUs per host.
  // The one cluster-spec syntax (common/cluster_spec.h); sim models leaf,
  // node, gpu (default 8), mem (default 80) and link (default 100), every
  // value at least 1, node required; hosts are named s<leaf>n<index>.
  static StatusOr<GpuPool> FromSpec(const ClusterSpec& spec);
  static StatusOr<GpuPool> FromSpec(const std::string& spec);

  const std::vector<PoolHost>& hosts() const { return hosts_; }
  int leaves() const { return leaves_; }
  int total_gpus() const { return total_; }
  int free_gpus() const { return free_total_; }
  int free_on(int host) const { return free_count_[static_cast<size_t>(host)]; }
  uint64_t free_mask(int host) const;
  bool usable(int host) const { return usable_[static_cast<size_t>(host)]; }
  // Whether one more job may share the host (PoolHost::cpus).
  bool cpu_free(int host) const {
    const size_t h = static_cast<size_t>(host);
    return hosts_[h].cpus <= 0 || shares_[h] < hosts_[h].cpus;
  }
  // A host that is not usable (bad health, drained) keeps what it holds but
  // gets nothing new.
  void set_usable(int host, bool usable) { usable_[static_cast<size_t>(host)] = usable; }

  Status Take(const Allocation& a);
  Status Give(const Allocation& a);

 private:
  std::vector<PoolHost> hosts_;
  std::vector<uint64_t> held_;  // by host
  std::vector<int> free_count_;  // by host: free GPUs (popcount of the free mask, kept current)
  std::vector<int> shares_;      // by host: allocations holding GPUs there (each takes a CPU)
  std::vector<bool> usable_;
  int leaves_ = 0, total_ = 0, free_total_ = 0;
};

// The lowest `count` free GPU indices of a host's mask.
uint64_t LowestFree(uint64_t free_mask, int count);

}  // namespace gpulaunch::pool
