// libFuzzer: the command lines of gpulaunch, `gpulaunch plan`, `slurm-config`, `gpulaunch
// submit`, `gpulaunch nodes` and `gpulaunch check`; the input is the argument list, one argument per line.
#include <cstdint>
#include <string>
#include <vector>

#include "launcher/core/options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args(1);
  for (size_t i = 0; i < size && args.size() < 64; ++i) {
    if (data[i] == '\n') {
      args.emplace_back();
    } else {
      args.back() += static_cast<char>(data[i]);
    }
  }
  (void)gpulaunch::ParseCommandLine(args);
  (void)gpulaunch::ParsePlanCommandLine(args);
  (void)gpulaunch::ParseSlurmConfigCommandLine(args);
  (void)gpulaunch::ParseSubmitCommandLine(args);
  (void)gpulaunch::ParseNodesCommandLine(args);
  (void)gpulaunch::ParseCheckCommandLine(args);
  return 0;
}
