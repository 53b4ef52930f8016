// Open MPI's mpirun: a rankfile places every rank, the shim binds it; values
// travel in mpirun's environment and `-x VAR`, never through a shell.
#pragma once

#include "launcher/engine/engine.h"

namespace gpulaunch {

class MpirunEngine final : public Engine {
 public:
  std::string Name() const override { return "mpirun"; }
  bool StartsMpi(MpiFamily family) const override { return family == MpiFamily::kOpenMpi; }
  Status IsViable() const override { return Status::Ok(); }
  bool RefusesRootByDefault() const override { return true; }
  StatusOr<EngineJob> PrepareJob(const LaunchPlan& plan, EngineSettings settings,
                                 const std::filesystem::path& job_dir) const override;
  void DescribeJob(std::ostream& out, const LaunchPlan& plan, EngineSettings settings) const override;
  bool LabelsOutputItself() const override { return false; }
  // Open MPI's odls_base_sigkill_timeout default.
  int DefaultKillGraceS() const override { return 1; }
  // Open MPI 4.1 under a soft limit of 1,024: 260 local ranks start, 300
  // fail to get their pipes and mpirun hangs; 4 a rank (and 128 for mpirun
  // itself) held at 100 and 250 ranks.
  int OpenFilesPerLocalRank() const override { return 4; }
  // mpirun, signalled, sends SIGTERM and SIGKILL back to back: the shims
  // deliver the stop signal instead.
  bool SignalAllRanks(ControlServer& control, int world, int sig) const override;
  std::vector<std::string> OnHostArgv(const std::string& host, const std::vector<std::string>& program,
                                      bool allow_run_as_root,
                                      const std::vector<std::string>& forward_env = {}) const override;
  std::vector<std::string> OnEachHostArgv(const std::vector<std::string>& hosts, const std::string& program,
                                          bool allow_run_as_root) const override;
  std::map<int, std::string> SplitByTask(const std::string& output) const override;
};

// Open MPI rankfile: "rank R=HOST slot=<logical cores>" per rank.
std::string RenderRankfile(const Placement& placement);
void WriteRankfile(std::ostream& out, const Placement& placement);

// True when some host runs more ranks than the PUs its ranks may use. Open MPI
// cannot see this through a rankfile, so ranks would busy-poll each other.
bool HostsOversubscribed(const Placement& placement);

// The exact mpirun argv for the plan, reading settings.rankfile.
std::vector<std::string> BuildMpirunArgv(const LaunchPlan& plan, const EngineSettings& settings);

}  // namespace gpulaunch
