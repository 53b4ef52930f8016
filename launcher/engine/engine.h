// The engine seam: the one place that knows which program starts ranks
// (Open MPI's mpirun, MPICH's Hydra, Slurm's srun). Everything else holds an
// `Engine&` and never asks which one it is, so another engine (PRRTE's prun,
// Flux, a PMIx-only spawner) is one more file here and one line in the
// registry (engine_registry.cc).
//
// An engine is asked for five things: whether it can run here, which MPI its
// ranks can join, the command that starts a planned job (and the files that
// command reads, and the variables that tell each shim its rank), how to
// signal every rank of a running job, and (as a HostRunner) the command that
// runs one program on other hosts (discovery probes, check, nodes, linkcheck).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/core/host_runner.h"
#include "launcher/core/plan.h"
#include "launcher/engine/program_mpi.h"

namespace gpulaunch {

class ControlServer;

// Everything the engine invocation needs besides the plan.
struct EngineSettings {
  std::string mpirun = "mpirun";
  std::string shim;                 // absolute path of gpulaunch-shim
  std::string rankfile;             // path of the written rankfile (mpirun)
  bool tag = false;                 // --tag: the engine labels output lines by rank
  bool allow_run_as_root = false;
  bool loopback_only = false;       // all ranks local: keep Open MPI's TCP on lo
  // Open MPI (ORTE) stops ranks with SIGCONT, sleep(grace), SIGTERM,
  // sleep(grace), SIGKILL, always sleeping the full grace: unset keeps its 1 s.
  std::optional<int> kill_grace_s;
  // This host's topology as hwloc XML, given when every rank runs on this
  // host and gpulaunch has it (LocalTopologyXmlForEngine, hwloc_source.h):
  // an engine may read it instead of discovering the host again.
  std::optional<std::string> local_topology_xml;
};

// How a planned job is started: the engine's argv and what it adds to the
// environment it runs in (the plan's own variables are added by the caller).
// An engine whose ranks the shim cannot name by Open MPI's, PMIx's or
// Slurm's variables names its own in env[kEngineIdentityEnv] (slot_table.h).
struct EngineJob {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  // Settings for the engine's own process that the job must not see: the
  // shims remove them before the job starts (EngineOnlyEnvironment, process.h).
  std::map<std::string, std::string> engine_only_env;
};

class Engine : public HostRunner {
 public:
  // Ok when the engine can start jobs here, else why not and what to do
  // instead (a usage error: FailedPrecondition).
  virtual Status IsViable() const = 0;

  // True when a program linking `family` joins the world this engine starts;
  // else each of its ranks would be an MPI singleton.
  virtual bool StartsMpi(MpiFamily family) const = 0;

  // True when the engine refuses to run as root unless told it may
  // (mpirun's --allow-run-as-root); false when root is the scheduler's call.
  virtual bool RefusesRootByDefault() const = 0;

  // Writes the files the engine reads into job_dir (a rankfile, a
  // hostfile) and returns the command that starts every rank through the
  // shim. The argv never goes through a shell.
  virtual StatusOr<EngineJob> PrepareJob(const LaunchPlan& plan, EngineSettings settings,
                                         const std::filesystem::path& job_dir) const = 0;

  // What --dry-run prints after the plan table: the file the engine would
  // read and the exact command, with {job_dir} for the job directory.
  // Written as it goes, so a plan of any size is never held as text.
  virtual void DescribeJob(std::ostream& out, const LaunchPlan& plan, EngineSettings settings) const = 0;

  // True when the engine labels output lines by rank itself (then gpulaunch
  // does not reassemble tagged streams).
  virtual bool LabelsOutputItself() const = 0;

  // Seconds from the stop signal to SIGKILL when --kill-grace is not given.
  virtual int DefaultKillGraceS() const = 0;

  // Open files the engine's process on the launching host holds for each rank
  // it starts there (pipes, sockets), at its peak: gpulaunch raises the limit
  // the engine inherits to fit them (open_file_limit.h). 0 when the ranks are
  // started by another process (a Slurm daemon).
  virtual int OpenFilesPerLocalRank() const = 0;

  // Delivers `sig` to every rank of the running job and returns true, or
  // returns false when no rank is known yet (the engine is then signalled).
  virtual bool SignalAllRanks(ControlServer& control, int world, int sig) const = 0;
};

// The engine registry: "mpirun", "hydra", "srun", or "auto" (srun inside a
// Slurm allocation, that is with SLURM_JOB_ID set, else mpirun). An unknown
// name is a usage error naming the choices.
StatusOr<std::unique_ptr<Engine>> SelectEngine(const std::string& name);

// The engine for running `program`, and why it was chosen. "auto" matches
// the MPI the program links (program_mpi.h): inside an allocation srun when
// it starts that MPI, else the first engine that does and can run here
// (mpirun for Open MPI, hydra for the MPICH ABI); a program with no MPI
// preference gets what SelectEngine("auto") gives. A program whose MPI the
// engine (named, or the only match) cannot start is refused before anything
// runs: FailedPrecondition naming the MPI found and the fix.
struct EngineChoice {
  std::unique_ptr<Engine> engine;
  std::string reason;  // one line, for --dry-run and plan --explain
};
StatusOr<EngineChoice> ChooseEngine(const std::string& name, const std::string& program);

// True inside a Slurm allocation (salloc, sbatch): SLURM_JOB_ID is set.
bool InSlurmAllocation();

}  // namespace gpulaunch
