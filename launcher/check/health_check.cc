#include "launcher/check/health_check.h"

#include <sys/wait.h>

#include <fstream>
#include <iostream>
#include <regex>

#include "common/env.h"
#include "common/strings.h"
#include "launcher/discovery/hwloc_source.h"
#include "launcher/base/exit_codes.h"
#include "launcher/base/host_identity.h"
#include "launcher/base/process.h"

namespace gpulaunch {

std::optional<int> GpusInGres(const std::string& gres) {
  static const std::regex gpu(R"((^|,)gpu(:[^:,(]+)?:(\d+))");
  std::smatch m;
  if (!std::regex_search(gres, m, gpu)) return std::nullopt;
  return std::stoi(m[3].str());
}

std::vector<std::string> HealthProblems(const HostTopology& host, const HealthExpectation& expect,
                                        const std::vector<std::pair<std::string, std::string>>& port_states) {
  std::vector<std::string> problems;
  if (expect.gpus && static_cast<int>(host.gpus.size()) < *expect.gpus) {
    problems.push_back(std::to_string(host.gpus.size()) + " of " + std::to_string(*expect.gpus) + " GPUs found");
  }
  for (const auto& [nic, state] : port_states) {
    if (state.find("ACTIVE") == std::string::npos) problems.push_back("NIC " + nic + " port is " + std::string(Trim(state)));
  }
  return problems;
}

int RunSlurmHealthCheck(const std::vector<std::string>& args) {
  bool slurm_health = false;
  std::string node;
  std::optional<int> expect_gpus;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--slurm-health") slurm_health = true;
    else if (args[i] == "--node" && i + 1 < args.size()) node = args[++i];
    else if (args[i] == "--expect-gpus" && i + 1 < args.size()) {
      const auto n = ParseInt(args[++i]);
      if (!n || *n < 0) {
        std::cerr << "gpulaunch: --expect-gpus needs a number\n";
        return kExitUsage;
      }
      expect_gpus = static_cast<int>(*n);
    } else {
      std::cerr << "gpulaunch: check: unknown argument '" << args[i]
                << "'; usage: gpulaunch check --slurm-health [--node NAME] [--expect-gpus N]\n";
      return kExitUsage;
    }
  }
  if (!slurm_health) {
    std::cerr << "gpulaunch: check: this version checks Slurm nodes only: gpulaunch check --slurm-health\n";
    return kExitUsage;
  }
  if (node.empty()) {
    node = EnvOr("SLURMD_NODENAME", LocalHostname());
  }
  auto host = DiscoverLocalHost();
  if (!host.ok()) {
    std::cerr << "gpulaunch: " << host.status().message() << "\n";
    return kExitLaunchFailure;
  }
  HealthExpectation expect{expect_gpus};
  if (!expect.gpus) {  // what Slurm has configured for this node
    const CapturedRun info = RunCaptured({"scontrol", "show", "node", node, "-o"}, EnvironmentWith({}), 10000);
    static const std::regex gres(R"(\bGres=(\S+))");
    std::smatch m;
    if (std::regex_search(info.out, m, gres)) expect.gpus = GpusInGres(m[1].str());
  }
  std::vector<std::pair<std::string, std::string>> ports;
  for (const Nic& nic : host->nics) {
    const auto colon = nic.name.find(':');
    if (colon == std::string::npos) continue;
    std::ifstream state("/sys/class/infiniband/" + nic.name.substr(0, colon) + "/ports/" + nic.name.substr(colon + 1) +
                        "/state");
    std::string text;
    if (std::getline(state, text)) ports.push_back({nic.name, text});
  }
  const auto problems = HealthProblems(*host, expect, ports);
  if (problems.empty()) {
    std::cout << "gpulaunch: node " << node << " is healthy (" << host->gpus.size() << " GPUs, " << host->nics.size()
              << " data NICs)\n";
    return kExitOk;
  }
  const std::string reason = "gpulaunch: " + Join(problems, "; ");
  std::cout << "gpulaunch: node " << node << " is unhealthy: " << Join(problems, "; ") << "; draining it\n";
  const CapturedRun drain = RunCaptured({"scontrol", "update", "NodeName=" + node, "State=DRAIN", "Reason=" + reason},
                                        EnvironmentWith({}), 10000);
  if (drain.wait_status != 0) std::cerr << "gpulaunch: scontrol could not drain " << node << ": " << drain.err;
  return 1;
}

}  // namespace gpulaunch
