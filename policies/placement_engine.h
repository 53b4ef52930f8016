// The placement engine: JobRequest + ClusterTopology -> Placement.
//
//   filter   every host through HostFilters() (healthy, not excluded) and
//            its capacity (free GPUs / GPUs per rank, or cores / cores per rank)
//   select   a HostSelector from the registry picks hosts and units
//            (compact by default; --comm compute uses "fragmented")
//   pick     inside each host, the GPU set with the best links that strands
//            the fewest well-connected GPUs; cores of each GPU's NUMA node
//            split among its ranks; the nearest NIC, unshared while an
//            equidistant one is free
//   order    slots are filled TP-innermost, then PP, then DP, so TP groups
//            share a host (an NVLink island when there is one) and pipeline
//            neighbours sit on the same or adjacent hosts
//
// Deterministic: ties break by host and GPU order, so the same inputs give
// the same placement.
#pragma once

#include <string>

#include "common/cluster_topology.h"
#include "policies/placement.h"

namespace gpulaunch {

// The one placement entry point. `request.policy` chooses: the presets of
// the topology-aware engine above (compact, spread, fault-domain,
// fragmented, and gang, the pool scheduler's whole-host rule;
// host_selection.h), or kBySlotPolicy, Open MPI's by-slot mapping (below).
// With `request.unbound_when_unbindable` (launches), a job the engine finds
// infeasible only because it has more ranks than GPUs or cores to bind them
// to is filled slot by slot and unbound, as mpirun would run it
// (slot_placement.h), when the hosts' slots or --oversubscribe allow.
// (The pool scheduler behind `sim` calls the gang rule, PlaceGang in
// pool/gang_placement.h, directly on its own incremental model, free GPU
// masks per host, thousands of times per simulated hour; the gang policy
// here is that same function over a real or recorded cluster.)
StatusOr<Placement> Place(const JobRequest& request, const ClusterTopology& cluster);

inline constexpr char kBySlotPolicy[] = "by-slot";

// What Open MPI's default by-slot mapping does with the same job: ranks in
// numeric order fill the hosts in listed order, slot by slot (GPUs in index
// order). The baseline the engine is measured against.
StatusOr<Placement> PlaceLikeOpenMpiBySlot(const JobRequest& request, const ClusterTopology& cluster);

// The modelled per-step communication time of a placement (link_model.h):
// TP ring allreduce, PP neighbour transfers along each pipeline, DP ring
// allreduce, each the slowest group's.
struct StepModel {
  double tp_seconds = 0, pp_seconds = 0, dp_seconds = 0;
  double total_seconds() const { return tp_seconds + pp_seconds + dp_seconds; }
  int hosts = 0;
  int switches = 0;  // distinct switches on the paths of the hosts used
};
StepModel ModelStep(const Placement& placement, const ClusterTopology& cluster, const JobRequest& request);

// The request with gpus_per_rank resolved and the layout sized to ranks.
StatusOr<JobRequest> Normalise(const JobRequest& request, const ClusterTopology& cluster);

}  // namespace gpulaunch
