#include "launcher/shim/getent_lookup.h"

#include <algorithm>

#include "common/strings.h"
#include "launcher/base/process.h"

namespace gpulaunch {

std::vector<std::string> ParseGetentHosts(const std::string& output) {
  std::vector<std::string> out;
  for (const std::string& line : Split(output, '\n')) {
    const std::optional<std::string_view> address = Words(line).Next();
    if (address && std::find(out.begin(), out.end(), *address) == out.end()) out.emplace_back(*address);
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
