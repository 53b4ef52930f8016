// The placement seam: a JobRequest over a set of hosts becomes a Placement,
// an ordered rank -> slot list. The launcher turns a Placement into a plan and
// an engine command; nothing downstream re-decides where a rank goes.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <array>

#include "common/cluster_topology.h"
#include "common/host_topology.h"
#include "common/parallel_layout.h"
#include "common/status.h"

namespace gpulaunch {

// Bytes each kind of group moves per step, for the communication model.
// Defaults follow a transformer step: tensor parallelism allreduces
// activations several times per layer (1 GiB in all, on the critical path),
// pipeline neighbours pass activations (64 MiB), data parallelism allreduces
// the gradients once (256 MiB, often overlapped with compute).
struct CommVolume {
  double tp_bytes = 1024.0 * (1 << 20);
  double pp_bytes = 64.0 * (1 << 20);
  double dp_bytes = 256.0 * (1 << 20);
};

struct JobRequest {
  int ranks = 0;               // 0: one rank per slot (mpirun's default)
  bool oversubscribe = false;  // allow more ranks than slots (ranks then run unbound)
  // Placement engine (placement_engine.h) only:
  int gpus_per_rank = -1;      // -1: 1 when the hosts have GPUs, else 0 (CPU ranks)
  int cores_per_rank = 0;      // CPU-only ranks: cores each; 0 splits a host's cores evenly
  ParallelLayout layout;       // its size must equal ranks
  std::string policy = "compact";
  std::string comm = "allreduce";  // allreduce | p2p | compute
  std::vector<std::string> exclude_hosts;
  CommVolume volume;
  // Place() only: fill an unbindable job slot by slot, unbound, rather than
  // refuse it (what a launch wants; a plan shows the refusal).
  bool unbound_when_unbindable = false;
};

// Where one rank runs and what it may use.
struct RankSlot {
  int rank = 0;
  std::string host;
  int node_rank = 0;           // index of the host among hosts that run ranks
  int local_rank = 0;
  int local_size = 0;
  bool bound = false;          // false: may run on every PU of the host
  std::vector<int> cpus;       // OS PU indices (all of the host's when unbound)
  std::vector<int> cores;      // logical core indices covering `cpus` (rankfile slots)
  int mem_node = -1;           // NUMA node OS index to bind memory to, -1 none
  std::vector<int> gpus;       // GPU indices (PCI bus order) owned by the rank
  bool host_has_gpus = false;  // decides whether CUDA_VISIBLE_DEVICES is set at all
  std::string nic;             // UCX device name, empty when none chosen
  std::string leaf_switch;     // the host's leaf switch in the network tree, empty when unknown
  std::array<int, 3> coords = {0, 0, 0};  // tp, pp, dp (placement engine)
};

struct Placement {
  std::vector<RankSlot> ranks;        // ordered by rank
  std::vector<std::string> hosts;     // hosts that run ranks, by node rank
  bool oversubscribed = false;
  std::vector<std::string> notes;     // why things are as they are, for --dry-run
  std::vector<std::string> explain;   // per host: chosen or passed over, and why

  // How many ranks each host runs.
  std::map<std::string, int> RanksByHost() const {
    std::map<std::string, int> count;
    for (const RankSlot& r : ranks) ++count[r.host];
    return count;
  }
};

}  // namespace gpulaunch
