#include "launcher/core/slurm_job.h"

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "common/env.h"
#include "common/strings.h"
#include "launcher/base/process.h"

namespace gpulaunch {
namespace {

constexpr int kScontrolTimeoutMs = 10000;

std::optional<std::string> ScontrolOutput(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"scontrol"};
  argv.insert(argv.end(), args.begin(), args.end());
  const CapturedRun run = RunCaptured(argv, EnvironmentWith({}), kScontrolTimeoutMs);
  if (run.timed_out || run.wait_status != 0) return std::nullopt;
  return run.out;
}

std::string SignalName(int sig) {
  switch (sig) {
    case SIGINT: return "INT";
    case SIGTERM: return "TERM";
    case SIGHUP: return "HUP";
    case SIGKILL: return "KILL";
    case SIGUSR1: return "USR1";
    case SIGUSR2: return "USR2";
    default: return std::to_string(sig);
  }
}

}  // namespace

std::optional<NetworkTree> SlurmNetworkTree() {
  if (!HasEnv("SLURM_JOB_ID")) return std::nullopt;
  const auto out = ScontrolOutput({"show", "topology"});
  if (!out || out->find("SwitchName=") == std::string::npos) return std::nullopt;
  auto tree = ParseScontrolTopology(*out, "scontrol show topology");
  if (!tree.ok()) return std::nullopt;
  return std::move(tree).value();
}

StatusOr<std::optional<NetworkTree>> SlurmNetworkTreeFor(const std::vector<ClusterHost>& hosts) {
  if (!HasEnv("SLURM_JOB_ID")) return std::optional<NetworkTree>();
  if (!EnvIs("GPULAUNCH_SLURM_TREE", "addr")) {
    if (auto tree = SlurmNetworkTree()) return tree;
  }
  // A host discovered here rather than through a step (gpulaunch itself
  // runs on it, outside any step, e.g. under salloc) has no address yet:
  // a one-task step there tells it, when the others' addresses show a tree.
  std::vector<ClusterHost> with = hosts;
  const bool tree = std::any_of(hosts.begin(), hosts.end(), [](const ClusterHost& h) {
    return h.topology->slurm_topology_pattern.find("switch") != std::string::npos;
  });
  for (ClusterHost& h : with) {
    if (!tree || !h.topology->slurm_topology_addr.empty()) continue;
    const CapturedRun run = RunCaptured({"srun", "--overlap", "-N1", "-n1", "-w", h.name, "printenv",
                                         "SLURM_TOPOLOGY_ADDR", "SLURM_TOPOLOGY_ADDR_PATTERN"},
                                        EnvironmentWith({}), kScontrolTimeoutMs);
    const std::vector<std::string> lines = Split(std::string(Trim(run.out)), '\n');
    if (!run.timed_out && run.wait_status == 0 && lines.size() == 2) {
      h.topology.Mutable().slurm_topology_addr = lines[0];
      h.topology.Mutable().slurm_topology_pattern = lines[1];
    }
  }
  // Only a hint for placement: a tree that does not add up is said, and the
  // job placed without it rather than refused.
  auto built = TreeFromTopologyAddrs(with);
  if (!built.ok()) {
    std::cerr << "gpulaunch: warning: " << built.status().message() << "; placing without the switch tree\n";
    return std::optional<NetworkTree>();
  }
  return built;
}

Status NarrowToSlurmJob(std::vector<ClusterHost>& hosts) {
  const std::optional<std::string> job = GetEnv("SLURM_JOB_ID");
  if (!job || hosts.empty()) return Status::Ok();
  const std::string what = "scontrol show job -d " + *job;
  const auto detail = ScontrolOutput({"show", "job", "-d", *job});
  if (!detail) {
    return Unavailable("`" + what + "` failed, so the cores and GPUs Slurm gave this job are unknown; check that "
                       "slurmctld answers (`scontrol ping`)");
  }
  GL_ASSIGN_OR_RETURN(auto shares, ParseScontrolJobDetail(*detail, what));
  std::vector<std::string> names;
  for (const ClusterHost& h : hosts)
    if (shares.count(h.name)) names.push_back(h.name);
  if (names.empty()) return Status::Ok();  // hosts outside the job: srun will say so
  const auto nodes = ScontrolOutput({"show", "node", "-o", Join(names, ",")});
  const std::set<std::string> with_gpu_gres = nodes ? ParseNodesWithGpuGres(*nodes) : std::set<std::string>{};
  for (ClusterHost& h : hosts) {
    const auto it = shares.find(h.name);
    if (it == shares.end()) continue;
    GL_ASSIGN_OR_RETURN(NarrowedHost n, NarrowToSlurmShare(h.topology, it->second, with_gpu_gres.count(h.name) > 0,
                                                          h.name));
    h.topology = std::move(n.topology);
    h.gpu_busy = std::move(n.gpu_busy);
  }
  return Status::Ok();
}

bool SignalSlurmSteps(const std::set<std::string>& steps, int sig) {
  bool any = false;
  for (const std::string& step : steps) {
    const CapturedRun run =
        RunCaptured({"scancel", "--signal=" + SignalName(sig), step}, EnvironmentWith({}), kScontrolTimeoutMs);
    any = any || (!run.timed_out && run.wait_status == 0);
  }
  return any;
}

}  // namespace gpulaunch
