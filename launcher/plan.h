// A launch plan: the placement plus what every rank runs and sees. It is
// printable (--dry-run) and hashed; the hash covers everything that decides
// where and how ranks run, and nothing per-invocation (job id, ports, paths),
// so the same inputs give the same hash.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "launcher/options.h"
#include "policies/placement.h"

namespace gpulaunch {

struct LaunchPlan {
  Placement placement;
  std::vector<std::string> program;   // job argv as given
  std::vector<EnvAssignment> env;     // -x, in order
  bool all_local = true;              // every host is this machine
  std::string layout;                 // as the user gave it (empty: data parallel)
  std::string plan_hash;              // sha256 of CanonicalPlanText
};

LaunchPlan MakeLaunchPlan(Placement placement, const LaunchOptions& options, bool all_local);

// Stable, line-oriented text that the plan hash is computed over.
std::string CanonicalPlanText(const LaunchPlan& plan);

// The human-readable table printed by --dry-run.
std::string RenderPlanTable(const LaunchPlan& plan);

// Open MPI rankfile: "rank R=HOST slot=<logical cores>" per rank.
std::string RenderRankfile(const Placement& placement);

// Everything the engine invocation needs besides the plan.
struct EngineSettings {
  std::string mpirun = "mpirun";
  std::string shim;                 // absolute path of gpulaunch-shim
  std::string rankfile;             // path of the written rankfile
  bool tag = false;
  bool allow_run_as_root = false;
  bool loopback_only = false;       // all ranks local: keep Open MPI's TCP on lo
  // Open MPI (ORTE) stops ranks with SIGCONT, sleep(grace), SIGTERM,
  // sleep(grace), SIGKILL, always sleeping the full grace: unset keeps its 1 s.
  std::optional<int> kill_grace_s;
};

// True when some host runs more ranks than the PUs its ranks may use. Open MPI
// cannot see this through a rankfile, so ranks would busy-poll each other.
bool HostsOversubscribed(const Placement& placement);

// The exact mpirun argv. Values (slot table, -x VAR=VALUE) travel through the
// engine's environment and `-x VAR`, never through a shell.
std::vector<std::string> BuildMpirunArgv(const LaunchPlan& plan, const EngineSettings& settings);

// Slurm's SLURM_HOSTFILE for --distribution=arbitrary: one host per rank.
std::string RenderSlurmHostfile(const Placement& placement);

// --cpu-bind for srun: "mask_cpu:m0,m1,..." by local task id when every rank
// is bound and every host wants the same masks for the same local ids, else
// "none" (the exec shim binds every bound rank either way).
std::string SrunCpuBind(const Placement& placement);

// The exact srun argv for one job step inside an allocation. The hostfile
// path travels in SLURM_HOSTFILE, the plan in GPULAUNCH_SLOT_TABLE (srun
// exports the environment).
std::vector<std::string> BuildSrunArgv(const LaunchPlan& plan, const EngineSettings& settings);

}  // namespace gpulaunch
