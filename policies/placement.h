// The placement seam: a JobRequest over a set of hosts becomes a Placement,
// an ordered rank -> slot list. The launcher turns a Placement into a plan and
// an engine command; nothing downstream re-decides where a rank goes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/host_topology.h"
#include "common/status.h"

namespace gpulaunch {

// One candidate host: its name, the slots the user granted (nullopt: derive
// from the topology: GPUs when it has any, else cores), and its hardware.
struct HostResources {
  std::string name;
  std::optional<int> slots;
  std::optional<int> max_slots;
  HostTopology topology;
};

struct JobRequest {
  int ranks = 0;               // 0: one rank per slot (mpirun's default)
  bool oversubscribe = false;  // allow more ranks than slots (ranks then run unbound)
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
};

struct Placement {
  std::vector<RankSlot> ranks;        // ordered by rank
  std::vector<std::string> hosts;     // hosts that run ranks, by node rank
  bool oversubscribed = false;
  std::vector<std::string> notes;     // why things are as they are, for --dry-run
};

}  // namespace gpulaunch
