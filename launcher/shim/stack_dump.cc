#include "launcher/shim/stack_dump.h"

#include <sys/wait.h>

#include <vector>

#include "launcher/base/process.h"

namespace gpulaunch {

std::string DumpStacks(int pid, int timeout_ms) {
  const std::string p = std::to_string(pid);
  const std::vector<std::vector<std::string>> tools = {
      {"eu-stack", "-p", p},
      {"gdb", "-p", p, "-batch", "-nx", "-ex", "set pagination off", "-ex", "thread apply all bt"},
  };
  std::string why;
  for (const auto& argv : tools) {
    const CapturedRun run = RunCaptured(argv, EnvironmentWith({}), timeout_ms);
    const bool missing = WIFEXITED(run.wait_status) && WEXITSTATUS(run.wait_status) == 127 && run.out.empty();
    if (missing) continue;
    if (!run.out.empty()) return run.out;
    why = argv[0] + " found no stacks" + (run.timed_out ? " (timed out)" : "") + ": " + run.err.substr(0, 500);
    break;
  }
  return why.empty() ? "no stacks: neither eu-stack nor gdb is installed on this host\n" : why + "\n";
}

}  // namespace gpulaunch
