// Who this rank is, from the environment contract (DESIGN.md). Works under
// gpulaunch, plain mpirun and srun --mpi=pmix. Precedence: Open MPI's
// OMPI_COMM_WORLD_* (they win over stale SLURM_* inherited from an
// allocation), then RANK/WORLD_SIZE (gpulaunch, torchrun), then PMIX_RANK,
// then SLURM_PROCID/SLURM_NTASKS; with none of them, rank 0 of 1.
#pragma once

#include <string>
#include <vector>

#include "common/env.h"
#include "common/parallel_layout.h"
#include "common/status.h"

namespace gpulaunch::rt {

struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_size = 1;
  int node_rank = 0;
  std::string plan_hash;  // GPULAUNCH_PLAN_HASH, empty when not under gpulaunch
  std::string job_id;     // GPULAUNCH_JOB_ID
  // GPULAUNCH_SWITCH: the leaf switch of this rank's host in the plan's
  // network tree, empty when the plan has none.
  std::string leaf_switch;
  // GPULAUNCH_LAYOUT (what gpulaunch resolved, checked against the world
  // size), else data parallel over the whole world (tp=1,pp=1,dp=W).
  ParallelLayout layout;
  bool layout_from_launcher = false;  // GPULAUNCH_LAYOUT was set
  std::string source;     // which variables named the rank
};

// Fails when the variables contradict each other (e.g. RANK != OMPI_COMM_WORLD_RANK)
// or GPULAUNCH_LAYOUT does not fit the world size.
StatusOr<RankEnv> ReadRankEnv(const EnvLookup& env);

// The CPUs this process may run on (sched_getaffinity), ascending: what a
// rank compares with GPULAUNCH_CPUSET.
std::vector<int> BoundCpus();

}  // namespace gpulaunch::rt
