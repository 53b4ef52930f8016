#include "launcher/host_command.h"

#include <cstdlib>
#include <filesystem>

#include "common/env.h"
#include "common/host_spec.h"
#include "common/slurm_allocation.h"
#include "common/strings.h"
#include "launcher/host_identity.h"

namespace gpulaunch {

StatusOr<HostCommandTarget> ResolveCommandHosts(const std::vector<std::string>& host_args,
                                                const std::optional<std::string>& hostfile, const std::string& what) {
  std::vector<HostSpec> specs;
  for (const std::string& arg : host_args) {
    auto more = ParseHostArgument(arg);
    if (!more.ok()) return InvalidArgument(what + ": " + more.status().message());
    specs.insert(specs.end(), more->begin(), more->end());
  }
  if (hostfile) {
    auto read = ReadHostfile(*hostfile);
    if (!read.ok()) return InvalidArgument(what + ": " + read.status().message());
    specs = std::move(read).value();
  }
  HostCommandTarget target;
  const bool in_allocation = std::getenv("SLURM_JOB_ID") != nullptr;
  if (specs.empty() && in_allocation) {
    auto alloc = HostsFromSlurmAllocation(ProcessEnv());
    if (alloc.ok()) {
      specs = std::move(alloc).value();
      target.use_srun = true;
    }
  }
  if (specs.empty()) specs.push_back(HostSpec{LocalHostname(), std::nullopt, std::nullopt});
  for (const HostSpec& h : specs) target.hosts.push_back(h.name);
  return target;
}

CapturedRun RunOnHost(const std::string& host, const std::vector<std::string>& program, bool use_srun,
                      bool allow_run_as_root, int budget_ms) {
  std::vector<std::string> argv;
  if (IsLocalHost(host)) {
    argv = program;
  } else if (use_srun) {
    argv = {"srun", "-N", "1", "-n", "1", "--overcommit", "-w", host};
    argv.insert(argv.end(), program.begin(), program.end());
  } else {
    // Unbound: mpirun binds one process to core 0, and two probes on a host
    // (linkcheck's server and client) would share that core.
    argv = {"mpirun", "-n", "1", "--host", host + ":1", "--bind-to", "none"};
    if (allow_run_as_root) argv.push_back("--allow-run-as-root");
    argv.insert(argv.end(), program.begin(), program.end());
  }
  return RunCaptured(argv, EnvironmentWith({}), budget_ms);
}

std::string EngineFailureReason(const CapturedRun& run, const std::string& engine) {
  for (const std::string& line : Split(run.err, '\n')) {
    const std::string t(Trim(line));
    if (!t.empty() && t.find_first_not_of('-') != std::string::npos) return engine + ": " + t.substr(0, 160);
  }
  return "the engine could not reach it";
}

std::string SiblingBinary(const std::string& name) {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / name).string();
}

}  // namespace gpulaunch
