#include "runtime/rank_env.h"

#include <sched.h>

#include <optional>

#include "common/strings.h"

namespace gpulaunch::rt {
namespace {

std::optional<int> Int(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  if (!v) return std::nullopt;
  const auto n = ParseInt(v);
  if (!n || *n < 0 || *n > 1 << 30) return std::nullopt;
  return static_cast<int>(*n);
}

}  // namespace

StatusOr<RankEnv> ReadRankEnv(const EnvLookup& env) {
  RankEnv e;
  const auto first = [&](std::initializer_list<const char*> names) -> std::optional<int> {
    for (const char* n : names)
      if (auto v = Int(env, n)) return v;
    return std::nullopt;
  };
  if (auto r = Int(env, "OMPI_COMM_WORLD_RANK")) {
    e.source = "OMPI_COMM_WORLD_*";
    e.rank = *r;
    e.world_size = first({"OMPI_COMM_WORLD_SIZE"}).value_or(1);
    e.local_rank = first({"OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK"}).value_or(0);
    e.local_size = first({"OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE"}).value_or(1);
    e.node_rank = first({"NODE_RANK", "OMPI_COMM_WORLD_NODE_RANK"}).value_or(0);
    // gpulaunch's own variables must agree with the engine's.
    if (auto g = Int(env, "RANK"); g && *g != e.rank) {
      return FailedPrecondition("RANK=" + std::to_string(*g) + " but OMPI_COMM_WORLD_RANK=" + std::to_string(e.rank) +
                                ": the environment is stale or was set by hand; start ranks with gpulaunch or mpirun");
    }
  } else if (auto rk = Int(env, "RANK")) {
    e.source = "RANK/WORLD_SIZE";
    e.rank = *rk;
    e.world_size = first({"WORLD_SIZE"}).value_or(1);
    e.local_rank = first({"LOCAL_RANK"}).value_or(0);
    e.local_size = first({"LOCAL_WORLD_SIZE"}).value_or(1);
    e.node_rank = first({"NODE_RANK", "GROUP_RANK"}).value_or(0);
  } else if (auto p = first({"PMIX_RANK", "SLURM_PROCID"})) {
    // Direct launch by srun: the rank from PMIx (or Slurm), the rest from Slurm.
    e.source = Int(env, "PMIX_RANK") ? "PMIX_RANK" : "SLURM_*";
    e.rank = *p;
    e.world_size = first({"SLURM_NTASKS", "SLURM_NPROCS"}).value_or(1);
    e.local_rank = first({"SLURM_LOCALID"}).value_or(0);
    e.node_rank = first({"SLURM_NODEID"}).value_or(0);
  } else {
    e.source = "none (one process)";
  }
  if (e.rank >= e.world_size) {
    return FailedPrecondition("rank " + std::to_string(e.rank) + " is not below the world size " +
                              std::to_string(e.world_size) + " (from " + e.source + ")");
  }
  if (const char* h = env("GPULAUNCH_PLAN_HASH")) e.plan_hash = h;
  if (const char* s = env("GPULAUNCH_SWITCH")) e.leaf_switch = s;
  if (const char* j = env("GPULAUNCH_JOB_ID")) e.job_id = j;
  const char* layout = env("GPULAUNCH_LAYOUT");
  e.layout_from_launcher = layout && *layout;
  auto parsed = ParseLayout(e.layout_from_launcher ? layout : "", e.world_size);
  if (!parsed.ok()) {
    return FailedPrecondition("GPULAUNCH_LAYOUT='" + std::string(layout) + "' does not fit this world of " +
                              std::to_string(e.world_size) + " ranks (" + parsed.status().message() +
                              "); it is set by gpulaunch: start the ranks with it, or unset it");
  }
  e.layout = *parsed;
  return e;
}

std::vector<int> BoundCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  return cpus;
}

}  // namespace gpulaunch::rt
