// MPICH's Hydra (mpiexec.hydra; Intel MPI's and MVAPICH's mpiexec are Hydra
// too): a hostfile of "host:count" lines in rank order places every rank,
// ssh starts Hydra's proxies on other hosts, the shim binds each rank.
//
// Hydra's control port speaks an unauthenticated protocol: whoever connects
// and says "proxy 0" gets the launch's arguments, and with Hydra's default
// (-genvall) the caller's whole environment, the job's secret included. So:
// - Hydra forwards no environment (-genvnone); each proxy inherits it from
//   the launcher that starts it, which carries it where only the job's user
//   reads it (fork, srun, or ssh through gpulaunch-hydra-ssh:
//   launcher/shim/hydra_launch_agent.h). Values never go into argv.
// - mpiexec.hydra runs with libgpulaunch-hydra-listener.so preloaded
//   (hydra_listener_preload.c): the port listens on the job's address only
//   (never 0.0.0.0), close-on-exec, and turns away local peers of other
//   users. docs/security.md says what a network peer can still do.
#pragma once

#include <filesystem>
#include <map>
#include <ostream>

#include "launcher/engine/engine.h"

namespace gpulaunch {

// Hydra's program, found in PATH.
inline constexpr const char* kHydraProgram = "mpiexec.hydra";

class HydraEngine final : public Engine {
 public:
  std::string Name() const override { return "hydra"; }
  bool StartsMpi(MpiFamily family) const override { return family == MpiFamily::kMpich; }
  // Viable where mpiexec.hydra is in PATH.
  Status IsViable() const override;
  bool RefusesRootByDefault() const override { return false; }
  StatusOr<EngineJob> PrepareJob(const LaunchPlan& plan, EngineSettings settings,
                                 const std::filesystem::path& job_dir) const override;
  void DescribeJob(std::ostream& out, const LaunchPlan& plan, EngineSettings settings) const override;
  bool LabelsOutputItself() const override { return true; }  // -prepend-rank: "[R] line"
  // Hydra has no grace of its own; the shims keep gpulaunch's, as under mpirun.
  int DefaultKillGraceS() const override { return 1; }
  // hydra_pmi_proxy holds each local rank's stdout, stderr and stdin pipes
  // and its PMI socket: 73 open files for 16 ranks (MPICH 4.0.2). 300 local
  // ranks start under a soft limit of 1,024, which gpulaunch raises.
  int OpenFilesPerLocalRank() const override { return 4; }
  // Through the shims, as under mpirun: Hydra forwards a signal only to the
  // processes it started, so each shim passes it to its job and keeps
  // gpulaunch's kill grace for what the job leaves behind.
  bool SignalAllRanks(ControlServer& control, int world, int sig) const override;
  std::vector<std::string> OnHostArgv(const std::string& host, const std::vector<std::string>& program,
                                      bool allow_run_as_root,
                                      const std::vector<std::string>& forward_env = {}) const override;
  std::vector<std::string> OnEachHostArgv(const std::vector<std::string>& hosts, const std::string& program,
                                          bool allow_run_as_root) const override;
  std::map<int, std::string> SplitByTask(const std::string& output) const override;
};

// Hydra's hostfile for the plan: one "host:count" line for each run of
// consecutive ranks on one host, so that rank r lands where the plan puts it.
void WriteHydraHostfile(std::ostream& out, const Placement& placement);

// True when each host's ranks are one run of consecutive ranks: then Hydra's
// local rank ids (counted per hostfile line) are the plan's local ranks.
bool HostsHoldOneRunEach(const Placement& placement);

// Where Hydra's control port listens: the address the job's other hosts
// reach this one by (127.0.0.1 for a one-host job) and the interface that
// holds it ("" when none does).
struct HydraListen {
  std::string address;
  std::string iface;
};
HydraListen HydraListenFor(const std::vector<std::string>& hosts, bool all_local);

// BIN/../lib/gpulaunch/libgpulaunch-hydra-listener.so
std::filesystem::path HydraListenerLibrary(const std::filesystem::path& bin_dir);
// What mpiexec.hydra's environment gets for the listener library (LD_PRELOAD
// with the user's own after it, the address), or why it cannot start safely:
// the library is missing, or no interface holds the address.
StatusOr<std::map<std::string, std::string>> HydraListenerEnvironment(const std::filesystem::path& bin_dir,
                                                                      const HydraListen& listen);

// The exact mpiexec.hydra argv, reading `hostfile`.
std::vector<std::string> BuildHydraArgv(const LaunchPlan& plan, const EngineSettings& settings,
                                        const std::string& hostfile, const HydraListen& listen);

// `env LD_PRELOAD=... GPULAUNCH_HYDRA_LISTEN_ADDR=... mpiexec.hydra` for a
// command whose control port listens at `listen` (OnHostArgv), or
// mpiexec.hydra alone when the listener cannot be set up (the launch itself
// refuses then).
std::vector<std::string> HydraCommandPrefix(const HydraListen& listen);

}  // namespace gpulaunch
