#include "launcher/check/host_command.h"

#include <cstdlib>
#include <filesystem>

#include "common/env.h"
#include "common/host_spec.h"
#include "slurm/slurm_allocation.h"
#include "common/strings.h"
#include "launcher/base/host_identity.h"

namespace gpulaunch {

StatusOr<HostCommandTarget> ResolveCommandHosts(const std::vector<std::string>& host_args,
                                                const std::optional<std::string>& hostfile, const std::string& what,
                                                const std::string& launcher) {
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
  bool from_allocation = false;
  if (specs.empty() && InSlurmAllocation()) {
    auto alloc = HostsFromSlurmAllocation(ProcessEnv());
    if (alloc.ok()) {
      specs = std::move(alloc).value();
      from_allocation = true;
    }
  }
  if (specs.empty()) specs.push_back(HostSpec{LocalHostname(), std::nullopt, std::nullopt});
  for (const HostSpec& h : specs) target.hosts.push_back(h.name);
  auto engine = SelectEngine(launcher != "auto" ? launcher : from_allocation ? "srun" : "mpirun");
  if (!engine.ok()) return engine.status();
  target.engine = std::move(engine).value();
  return target;
}

CapturedRun RunOnHost(const std::string& host, const std::vector<std::string>& program, const HostRunner& runner,
                      bool allow_run_as_root, int budget_ms, const std::map<std::string, std::string>& env) {
  std::vector<std::string> names;
  for (const auto& [name, value] : env) names.push_back(name);
  const std::vector<std::string> argv =
      IsLocalHost(host) ? program : runner.OnHostArgv(host, program, allow_run_as_root, names);
  return RunCaptured(argv, EnvironmentWith(env), budget_ms);
}

std::string EngineFailureReason(const CapturedRun& run, const HostRunner& runner) {
  for (const std::string& line : Split(run.err, '\n')) {
    const std::string t(Trim(line));
    if (!t.empty() && t.find_first_not_of('-') != std::string::npos) return runner.Name() + ": " + t.substr(0, 160);
  }
  return "the engine could not reach it";
}

std::string SiblingBinary(const std::string& name) {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / name).string();
}

}  // namespace gpulaunch
