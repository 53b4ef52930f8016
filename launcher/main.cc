// gpulaunch: one table maps each subcommand's name to the function that runs
// it; anything else is the launch command (launch_command.h). Each returns the
// process's exit code (exit_codes.h).
#include <signal.h>

#include <string>
#include <vector>

#include "launcher/check/check_command.h"
#include "launcher/launch_command.h"
#include "launcher/check/linkcheck/linkcheck_command.h"
#include "launcher/check/nodes_command.h"
#include "launcher/plan_command.h"
#include "launcher/sim/sim_command.h"
#include "launcher/submit_command.h"

namespace {

using SubcommandMain = int (*)(const std::vector<std::string>& args);

struct Subcommand {
  const char* name;
  SubcommandMain run;
};

constexpr Subcommand kSubcommands[] = {
    {"plan", gpulaunch::RunPlanCommand},
    {"slurm-config", gpulaunch::RunSlurmConfigCommand},
    {"submit", gpulaunch::RunSubmitCommand},
    {"check", gpulaunch::RunCheckCommand},
    {"nodes", gpulaunch::RunNodesCommand},
    {"linkcheck", gpulaunch::RunLinkcheckCommand},
    {"sim", gpulaunch::RunSimCommand},
};

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty()) {
    for (const Subcommand& sub : kSubcommands) {
      if (args[0] == sub.name) return sub.run({args.begin() + 1, args.end()});
    }
  }
  return gpulaunch::RunLaunchCommand(args);
}
