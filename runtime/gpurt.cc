#include "runtime/gpurt.h"

#include <mpi.h>
#include <unistd.h>

#include <cstring>

#include "runtime/heartbeat.h"
#include "runtime/hierarchical_reduce.h"
#include "runtime/mpi_communicator.h"
#include "runtime/step_profiler.h"

namespace gpulaunch::rt {
Runtime::~Runtime() {
  world_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalize_mpi_ && !finalized) MPI_Finalize();
}

StatusOr<std::unique_ptr<Runtime>> Init(int* argc, char*** argv, const InitOptions& options) {
  std::unique_ptr<Runtime> rt(new Runtime());
  GL_ASSIGN_OR_RETURN(rt->env_, ReadRankEnv(ProcessEnv()));
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (MPI_Init(argc, argv) != MPI_SUCCESS) return Internal("MPI_Init failed");
    rt->finalize_mpi_ = true;
  }
  auto world = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, false);
  if (world->size() != rt->env_.world_size || world->rank() != rt->env_.rank) {
    if (world->size() == 1 && rt->env_.world_size > 1) ReportMpiSingleton();
    return FailedPrecondition(
        "MPI says rank " + std::to_string(world->rank()) + " of " + std::to_string(world->size()) +
        " but the environment (" + rt->env_.source + ") says rank " + std::to_string(rt->env_.rank) + " of " +
        std::to_string(rt->env_.world_size) +
        (world->size() == 1 && rt->env_.world_size > 1
             ? "; the ranks started as MPI singletons: the engine that started them is not one this program's "
               "MPI joins (with gpulaunch use --launcher auto; under srun use --mpi=pmix)"
             : "; the environment is stale"));
  }
  // Every rank's host, plan hash and leaf switch, to check the plan and name
  // hosts and switches.
  constexpr size_t kField = 128;
  char mine[3 * kField] = {0};
  gethostname(mine, kField - 1);
  std::strncpy(mine + kField, rt->env_.plan_hash.c_str(), kField - 1);
  std::strncpy(mine + 2 * kField, rt->env_.leaf_switch.c_str(), kField - 1);
  std::vector<char> all(sizeof mine * static_cast<size_t>(world->size()));
  GL_RETURN_IF_ERROR(world->Allgather(mine, sizeof mine, all.data()));
  bool every_switch_known = true;
  for (int r = 0; r < world->size(); ++r) {
    const char* entry = all.data() + sizeof mine * static_cast<size_t>(r);
    rt->hosts_.emplace_back(entry);
    rt->switches_.emplace_back(entry + 2 * kField);
    every_switch_known &= !rt->switches_.back().empty();
    const std::string hash(entry + kField);
    const std::string hash0(all.data() + kField);
    if (options.check_plan_hash && hash != hash0) {
      return FailedPrecondition("rank " + std::to_string(r) + " runs plan " + (hash.empty() ? "(none)" : hash) +
                                " but rank 0 runs plan " + (hash0.empty() ? "(none)" : hash0) +
                                ": the ranks were not started by one gpulaunch; relaunch the whole job");
    }
  }
  if (!every_switch_known) rt->switches_.clear();
  StepProfiler::ConfigureFromEnvironment(world->rank());
  rt->world_ = ProfileCommunicator(std::move(world), "world");
  // The world knows where its ranks run, and so does every group split from
  // it: reductions climb hosts and switches unless told otherwise.
  GL_RETURN_IF_ERROR(rt->world_->SetPlacement({HostIndices(rt->hosts_), HostIndices(rt->switches_)}));
  if (options.select_gpu) rt->gpu_ = SelectGpu(rt->env_.local_rank);
  return rt;
}

}  // namespace gpulaunch::rt
