// How gpulaunch runs one program on other hosts (the discovery probe, and the
// check, nodes and linkcheck probes): an engine implements it
// (engine/engine.h), so no daemon of gpulaunch's own is needed. It lives
// below the engines so that host resolution (host_resolution.h) depends on
// this interface only, never on which engine there is.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gpulaunch {

class HostRunner {
 public:
  virtual ~HostRunner() = default;

  // "mpirun" or "srun": what messages call it.
  virtual std::string Name() const = 0;

  // One copy of `program` on the remote `host`, unbound (two probes on one
  // host must not share a core). The variables named in `forward_env` reach
  // it from the caller's environment, by name: a value never goes into argv.
  virtual std::vector<std::string> OnHostArgv(const std::string& host, const std::vector<std::string>& program,
                                              bool allow_run_as_root,
                                              const std::vector<std::string>& forward_env = {}) const = 0;

  // One copy of `program` on each of `hosts`, its output labelled by task
  // index (the host's position in `hosts`); SplitByTask undoes the labels.
  virtual std::vector<std::string> OnEachHostArgv(const std::vector<std::string>& hosts, const std::string& program,
                                                  bool allow_run_as_root) const = 0;
  virtual std::map<int, std::string> SplitByTask(const std::string& output) const = 0;
};

}  // namespace gpulaunch
