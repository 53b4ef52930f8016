// Slurm's srun: one job step inside the allocation, ranks in plan order
// through SLURM_HOSTFILE and --distribution=arbitrary, CPUs by --cpu-bind
// (the shim binds either way).
#pragma once

#include "launcher/engine/engine.h"

namespace gpulaunch {

class SrunEngine final : public Engine {
 public:
  std::string Name() const override { return "srun"; }
  // --mpi=pmix: Open MPI joins through PMIx; MPICH built for Hydra's PMI would not.
  bool StartsMpi(MpiFamily family) const override { return family == MpiFamily::kOpenMpi; }
  // Only inside an allocation: srun outside one would make its own.
  Status IsViable() const override;
  bool RefusesRootByDefault() const override { return false; }
  StatusOr<EngineJob> PrepareJob(const LaunchPlan& plan, EngineSettings settings,
                                 const std::filesystem::path& job_dir) const override;
  void DescribeJob(std::ostream& out, const LaunchPlan& plan, EngineSettings settings) const override;
  bool LabelsOutputItself() const override { return true; }  // --label
  int DefaultKillGraceS() const override { return 10; }
  int OpenFilesPerLocalRank() const override { return 0; }  // slurmstepd starts the tasks
  // srun would end the step with SIGKILL on SIGTERM or SIGHUP: scancel
  // delivers the signal itself to every task of the steps the ranks reported.
  bool SignalAllRanks(ControlServer& control, int world, int sig) const override;
  std::vector<std::string> OnHostArgv(const std::string& host, const std::vector<std::string>& program,
                                      bool allow_run_as_root,
                                      const std::vector<std::string>& forward_env = {}) const override;
  std::vector<std::string> OnEachHostArgv(const std::vector<std::string>& hosts, const std::string& program,
                                          bool allow_run_as_root) const override;
  std::map<int, std::string> SplitByTask(const std::string& output) const override;
};

// Slurm's SLURM_HOSTFILE for --distribution=arbitrary: one host per rank.
std::string RenderSlurmHostfile(const Placement& placement);
void WriteSlurmHostfile(std::ostream& out, const Placement& placement);

// --cpu-bind for srun: "mask_cpu:m0,m1,..." by local task id when every rank
// is bound and every host wants the same masks for the same local ids, else
// "none" (the exec shim binds every bound rank either way).
std::string SrunCpuBind(const Placement& placement);

// The exact srun argv for one job step inside an allocation. The hostfile
// path travels in SLURM_HOSTFILE, the plan in GPULAUNCH_SLOT_TABLE (srun
// exports the environment).
std::vector<std::string> BuildSrunArgv(const LaunchPlan& plan, const EngineSettings& settings);

}  // namespace gpulaunch
