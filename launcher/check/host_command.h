// What the per-host commands (`gpulaunch nodes`, `gpulaunch check`) share:
// which hosts to ask, and running one program once on one host through the
// same engine as launches (no daemon of gpulaunch's own).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/engine/engine.h"
#include "launcher/base/process.h"

namespace gpulaunch {

struct HostCommandTarget {
  std::vector<std::string> hosts;  // in the order given
  // Asks them: the engine named by --launcher; with auto, srun when the hosts
  // are the Slurm allocation's, else mpirun.
  std::shared_ptr<const Engine> engine;
};

// -H arguments or a hostfile; without either, the Slurm allocation, else this
// machine. `what` names the command in errors ("nodes", "check"); `launcher`
// is an engine's name or "auto".
StatusOr<HostCommandTarget> ResolveCommandHosts(const std::vector<std::string>& host_args,
                                                const std::optional<std::string>& hostfile, const std::string& what,
                                                const std::string& launcher = "auto");

// `program` (argv, program path first) once on `host`: directly when the host
// is this machine, else through the engine (Engine::OnHostArgv).
// Killed after budget_ms (timed_out set). `env` reaches the program in its
// environment, never in argv (the engine forwards the names).
CapturedRun RunOnHost(const std::string& host, const std::vector<std::string>& program, const HostRunner& runner,
                      bool allow_run_as_root, int budget_ms, const std::map<std::string, std::string>& env = {});

// Why a run that did not succeed failed: the engine's first line that says
// something, or a fallback.
std::string EngineFailureReason(const CapturedRun& run, const HostRunner& runner);

// A helper binary that sits next to the running gpulaunch (gpulaunch-probe).
std::string SiblingBinary(const std::string& name);

}  // namespace gpulaunch
