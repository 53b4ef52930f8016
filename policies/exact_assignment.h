// Exact assignment of ranks to GPUs for small cases: every injective map of
// ranks to the free GPUs of some hosts, scored by the link model as
// ModelStep() scores a placement (the slowest TP ring + pipeline + DP ring).
// The placement engine uses it when the search space is small.
#pragma once

#include <vector>

#include "common/cluster_topology.h"
#include "policies/placement.h"

namespace gpulaunch {

// One slot in fill order: the host and the GPUs (empty for CPU ranks).
struct SlotChoice {
  int host = 0;
  std::vector<int> gpus;
};

// At most this many assignments are tried.
inline constexpr double kExactAssignmentLimit = 65536;

// The best slots in fill order (TP innermost, then PP, then DP) over the free
// GPUs of `hosts`, one GPU per rank; empty when the search would exceed the
// limit. `heuristic`'s GPUs are tried first, so among equally good
// assignments its choice stands.
std::vector<SlotChoice> ExactAssignment(const ClusterTopology& cluster, const std::vector<int>& hosts,
                                        const JobRequest& request, const std::vector<SlotChoice>& heuristic);

}  // namespace gpulaunch
