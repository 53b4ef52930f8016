// libgpurt: the runtime inside a gpulaunch job's ranks.
//
//   auto rt = gpulaunch::rt::Init(&argc, &argv);   // MPI, identity, plan check, GPU
//   if (!rt.ok()) { std::cerr << rt.status().message(); return 1; }
//   auto& world = (*rt)->world();
//
// Init() reads the environment contract (rank_env.h), initialises MPI, checks
// that the engine's view (MPI rank and size) matches the contract, refuses to
// run when ranks hold different plans (GPULAUNCH_PLAN_HASH), and selects the
// rank's GPU when CUDA is available. The Runtime finalises MPI when destroyed
// (if Init started it).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/communicator.h"
#include "runtime/rank_env.h"

namespace gpulaunch::rt {

struct InitOptions {
  bool check_plan_hash = true;
  bool select_gpu = true;
};

class Runtime {
 public:
  ~Runtime();
  const RankEnv& env() const { return env_; }
  // The job's dp x tp x pp layout as gpulaunch planned it (RankEnv::layout).
  const ParallelLayout& layout() const { return env_.layout; }
  Communicator& world() { return *world_; }
  // Host name of every rank, by rank (for layout warnings and reports).
  const std::vector<std::string>& hosts() const { return hosts_; }
  // Leaf switch of every rank (RankEnv::leaf_switch), by rank; empty when
  // any rank's plan names none. With hosts(), the levels of the
  // hierarchical reductions (ReduceConfig::switch_of_rank).
  const std::vector<std::string>& switches() const { return switches_; }
  // CUDA device this rank uses, -1 when none (no CUDA, no GPU, or not asked).
  int gpu() const { return gpu_; }

 private:
  friend StatusOr<std::unique_ptr<Runtime>> Init(int*, char***, const InitOptions&);
  Runtime() = default;
  RankEnv env_;
  std::unique_ptr<Communicator> world_;
  std::vector<std::string> hosts_;
  std::vector<std::string> switches_;
  int gpu_ = -1;
  bool finalize_mpi_ = false;
};

StatusOr<std::unique_ptr<Runtime>> Init(int* argc, char*** argv, const InitOptions& options = {});

// CUDA device selection (cuda_device.cc): the device for a rank with this
// local rank, or -1 when CUDA or a GPU is unavailable. With
// CUDA_VISIBLE_DEVICES narrowed by gpulaunch this is device 0.
int SelectGpu(int local_rank);
bool BuiltWithCuda();

}  // namespace gpulaunch::rt
