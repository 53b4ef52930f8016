#include "launcher/shim/getent_lookup.h"

#include <algorithm>
#include <sstream>

#include "launcher/base/process.h"

namespace gpulaunch {

std::vector<std::string> ParseGetentHosts(const std::string& output) {
  std::vector<std::string> out;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string address;
    if (!(fields >> address)) continue;
    if (std::find(out.begin(), out.end(), address) == out.end()) out.push_back(address);
  }
  return out;
}

std::vector<std::string> AddressesByGetent(const std::string& name, int timeout_ms) {
  // A name that starts with '-' would be read as an option.
  if (name.empty() || name[0] == '-') return {};
  const CapturedRun run = RunCaptured({"getent", "ahosts", name}, EnvironmentWith({}), timeout_ms);
  if (!run.Succeeded()) return {};
  return ParseGetentHosts(run.out);
}

}  // namespace gpulaunch
