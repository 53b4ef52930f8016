// gpulaunch: one table maps each subcommand's name to the function that runs
// it; anything else is the launch command (launch_command.h). Each returns the
// process's exit code (exit_codes.h).
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "launcher/base/exit_codes.h"
#include "launcher/check/check_command.h"
#include "launcher/check/host_command.h"
#include "launcher/launch_command.h"
#include "launcher/check/nodes_command.h"
#include "launcher/discovery/hwloc_source.h"
#include "launcher/plan_command.h"
#include "launcher/sim/sim_command.h"
#include "launcher/submit_command.h"

namespace {

using SubcommandMain = int (*)(const std::vector<std::string>& args);

struct Subcommand {
  const char* name;
  SubcommandMain run;
};

// `linkcheck` is its own binary next to this one (linkcheck_main.cc), so
// that UCX loads only where it is used.
int RunLinkcheck(const std::vector<std::string>& args) {
  const std::string path = gpulaunch::SiblingBinary("gpulaunch-linkcheck");
  std::vector<char*> argv = {const_cast<char*>(path.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(path.c_str(), argv.data());
  std::cerr << "gpulaunch: linkcheck: cannot run " << path << ": " << std::strerror(errno)
            << "; it belongs next to gpulaunch (cmake --install puts it there)\n";
  return gpulaunch::kExitLaunchFailure;
}

constexpr Subcommand kSubcommands[] = {
    {"plan", gpulaunch::RunPlanCommand},
    {"slurm-config", gpulaunch::RunSlurmConfigCommand},
    {"submit", gpulaunch::RunSubmitCommand},
    {"check", gpulaunch::RunCheckCommand},
    {"nodes", gpulaunch::RunNodesCommand},
    {"linkcheck", RunLinkcheck},
    {"sim", gpulaunch::RunSimCommand},
};

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  gpulaunch::SkipUnusedHwlocPlugins();  // before any thread (it sets the environment)
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty()) {
    for (const Subcommand& sub : kSubcommands) {
      if (args[0] == sub.name) return sub.run({args.begin() + 1, args.end()});
    }
  }
  return gpulaunch::RunLaunchCommand(args);
}
