// gpulaunch-linkcheck: `gpulaunch linkcheck ARGS` (linkcheck_command.h),
// and the server and client halves it runs on each host of a link. Apart
// from gpulaunch because it is the one user of UCX: linked into gpulaunch,
// UCX's libraries load and initialise at every start of every command (1.1 ms
// of CPU a launch here, docs/benchmarks.md).
#include <signal.h>

#include <string>
#include <vector>

#include "launcher/check/linkcheck/linkcheck_command.h"

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  return gpulaunch::RunLinkcheckCommand(std::vector<std::string>(argv + 1, argv + argc));
}
