// What the exec shim does for one rank, split into testable steps:
// find who the engine says we are, check it against the plan, bind, and build
// the environment contract (DESIGN.md) the job sees.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/env.h"
#include "common/status.h"
#include "launcher/base/slot_table.h"

namespace gpulaunch {

// The rank as the engine reports it: through the variables the engine named
// in GPULAUNCH_ENGINE_IDENTITY (slot_table.h) where it did, else Open MPI's
// OMPI_COMM_WORLD_*, which win over PMIx and over stale SLURM_* inherited
// from an enclosing allocation.
struct EngineIdentity {
  int rank = -1;
  std::optional<int> world_size;
  std::optional<int> local_rank;
  std::string source;  // which variables were used
  bool open_mpi = false;  // Open MPI's daemon started this rank (OMPI_COMM_WORLD_*)
};

StatusOr<EngineIdentity> ReadEngineIdentity(const EnvLookup& env);

// Refuses a rank whose engine rank or world size differs from the plan's;
// needs only the table's header.
Status CheckWorld(const SlotTable& table, const EngineIdentity& id);
// Refuses a rank whose local rank or host differs from its row.
// `is_this_host` decides whether a plan host name is this machine.
Status CheckSlot(const RankSlot& slot, const EngineIdentity& id,
                 const std::function<bool(const std::string&)>& is_this_host, const std::string& hostname);
// Both, for a table that carries its rows.
Status CheckIdentity(const SlotTable& table, const EngineIdentity& id,
                     const std::function<bool(const std::string&)>& is_this_host, const std::string& hostname);

// The environment contract for the rank of `slot` (variables to set; an
// empty value is set as empty, e.g. a GPU host rank without GPUs).
std::map<std::string, std::string> RankEnvironment(const SlotTable& table, const RankSlot& slot);
// The same for a table that carries its rows.
std::map<std::string, std::string> RankEnvironment(const SlotTable& table, int rank);

// CUDA_VISIBLE_DEVICES for a rank's GPUs (indices in PCI bus order, as the
// plan gives them). Inside a Slurm step that holds GPUs (SLURM_STEP_GPUS, or
// SLURM_JOB_GPUS in the batch step, alongside Slurm's CUDA_VISIBLE_DEVICES)
// each index becomes the name Slurm's CUDA_VISIBLE_DEVICES gives that GPU:
// the index itself without device cgroups, its position among the step's
// GPUs when ConstrainDevices hides the others. A GPU the step does not hold
// is refused.
StatusOr<std::string> CudaVisibleDevices(const std::vector<int>& gpus, const EnvLookup& env);

// Binds this process to the slot's CPUs and memory node and reads both back.
Status ApplyBinding(const RankSlot& slot);

}  // namespace gpulaunch
