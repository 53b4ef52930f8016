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

#include "common/cluster_topology.h"
#include "common/host_topology.h"
#include "common/network_tree.h"
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

// How many GPUs each rank gets inside an allocation, and where that number
// came from: SLURM_GPUS_PER_TASK (--gpus-per-task; `gpus_per_task` is its
// value, "2" or "a100:2") when set; else, when the job has more of its GPUs
// than tasks on every node that runs tasks (--gres=gpu:N or --gpus-per-node
// with fewer tasks per node), each node's GPUs (`hosts` already narrowed to
// the job) shared out over its tasks (`slots`), the smallest share. nullopt:
// one GPU per rank, the default.
struct GpuShare {
  int per_rank = 1;
  std::string source;  // for the plan, e.g. "SLURM_GPUS_PER_TASK=2"
};
std::optional<GpuShare> GpusPerRankInAllocation(const std::optional<std::string>& gpus_per_task,
                                                const std::vector<ClusterHost>& hosts);

// The switch tree from where Slurm puts each host: SLURM_TOPOLOGY_ADDR and
// SLURM_TOPOLOGY_ADDR_PATTERN as each host's steps see them (HostTopology's
// slurm_topology_addr/pattern): "top.leaf0.node1" under "switch.switch.node"
// puts node1 below leaf0 below top. The fallback for `scontrol show
// topology` (slurm_job.h). Hosts without an address, or with the node
// alone (what Slurm sets without topology/tree), are left out; nullopt when
// none has a switch. A malformed or contradictory address is an error naming
// the host.
StatusOr<std::optional<NetworkTree>> TreeFromTopologyAddrs(const std::vector<ClusterHost>& hosts);

}  // namespace gpulaunch
