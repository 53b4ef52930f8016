// What a Slurm job was given on each of its nodes, as `scontrol show job -d`
// reports it, and the node's hardware narrowed to that share. On a node
// shared with other jobs, ranks must use only the job's cores and GPUs.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/host_topology.h"
#include "common/status.h"

namespace gpulaunch {

struct SlurmNodeShare {
  // Slurm's abstract CPU ids (CPU_IDs=): cores numbered socket by socket in
  // hwloc's logical order, times threads per core, plus the thread.
  std::vector<int> cpu_ids;
  // GRES gpu indices (IDX:) in gres.conf order; nullopt when the job holds
  // no GPU there.
  std::optional<std::vector<int>> gpu_indices;
};

// The per-node lines of `scontrol show job -d`, e.g.
//   Nodes=node[1-2] CPU_IDs=0-3 Mem=0 GRES=gpu:a100:2(IDX:0,2)
// keyed by host name. `origin` names the source in errors.
StatusOr<std::map<std::string, SlurmNodeShare>> ParseScontrolJobDetail(std::string_view text,
                                                                       const std::string& origin);

// The nodes whose configured GRES (`scontrol show node -o`, Gres=) include
// gpu: Slurm hands out their GPUs, so a job may use only the ones it holds.
std::set<std::string> ParseNodesWithGpuGres(std::string_view text);

// `topology` narrowed to `share`: cores (and PUs) outside its CPU ids are
// dropped. Returns the GPU indices the job may not use (by GPU index, as
// ClusterHost::gpu_busy), all of them when it holds none and Slurm manages
// the node's GPUs. Fails when no core of the topology is in the share.
struct NarrowedHost {
  HostTopology topology;
  std::vector<bool> gpu_busy;  // empty: every GPU usable
};
StatusOr<NarrowedHost> NarrowToSlurmShare(const HostTopology& topology, const SlurmNodeShare& share,
                                          bool slurm_manages_gpus, const std::string& host);

}  // namespace gpulaunch
