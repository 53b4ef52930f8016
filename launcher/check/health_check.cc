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
#include "launcher/core/subcommand_parser.h"

namespace po = boost::program_options;

namespace gpulaunch {

namespace {

const SubcommandParser& HealthCheckParser() {
  static const SubcommandParser* parser = [] {
    auto* p = new SubcommandParser(
        "check", "--slurm-health [--node NAME] [--expect-gpus N]",
        "Slurm's HealthCheckProgram: checks this node (its GPUs against Slurm's gres, its NICs' ports) and drains\n"
        "it with the reason when something is wrong.");
    p->Add()
      ("slurm-health", "the Slurm node health check")
      ("node", po::value<std::string>()->value_name("NAME"), "the node's Slurm name (default: SLURMD_NODENAME, else the hostname)")
      ("expect-gpus", po::value<std::string>()->value_name("N"), "GPUs the node must have (default: its gpu gres)");
    return p;
  }();
  return *parser;
}

// GPUs the node must have: --expect-gpus, else its gpu gres as Slurm has it
// configured (none when scontrol does not say).
std::optional<int> ConfiguredGpus(const std::string& node) {
  const CapturedRun info = RunCaptured({"scontrol", "show", "node", node, "-o"}, EnvironmentWith({}), 10000);
  static const std::regex gres(R"(\bGres=(\S+))");
  std::smatch m;
  if (std::regex_search(info.out, m, gres)) return GpusInGres(m[1].str());
  return std::nullopt;
}

// The state of each InfiniBand port the host's data NICs name ("mlx5_0:1").
std::vector<std::pair<std::string, std::string>> PortStates(const HostTopology& host) {
  std::vector<std::pair<std::string, std::string>> ports;
  for (const Nic& nic : host.nics) {
    const auto colon = nic.name.find(':');
    if (colon == std::string::npos) continue;
    std::ifstream state("/sys/class/infiniband/" + nic.name.substr(0, colon) + "/ports/" + nic.name.substr(colon + 1) +
                        "/state");
    std::string text;
    if (std::getline(state, text)) ports.push_back({nic.name, text});
  }
  return ports;
}

}  // namespace

int RunSlurmHealthCheck(const std::vector<std::string>& args) {
  const SubcommandParser& parser = HealthCheckParser();
  auto vm = parser.Parse(args);
  if (!vm.ok()) return Fail(vm.status());
  if (SubcommandParser::WantsHelp(*vm)) {
    std::cout << parser.Help();
    return kExitOk;
  }
  std::string node = vm->count("node") ? (*vm)["node"].as<std::string>() : "";
  std::optional<int> expect_gpus;
  if (vm->count("expect-gpus")) {
    auto n = IntOption(parser, *vm, "expect-gpus", 0, 0, 1 << 20, "a number of GPUs");
    if (!n.ok()) return Fail(n.status());
    expect_gpus = *n;
  }
  if (node.empty()) node = EnvOr("SLURMD_NODENAME", LocalHostname());
  auto host = DiscoverLocalHost();
  if (!host.ok()) {
    std::cerr << "gpulaunch: " << host.status().message() << "\n";
    return kExitLaunchFailure;
  }
  const HealthExpectation expect{expect_gpus ? expect_gpus : ConfiguredGpus(node)};
  const auto problems = HealthProblems(*host, expect, PortStates(*host));
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
