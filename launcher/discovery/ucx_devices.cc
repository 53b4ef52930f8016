#include "launcher/discovery/ucx_devices.h"

#include <sstream>

#include "common/strings.h"
#include "launcher/base/process.h"

namespace gpulaunch {

std::set<std::string> ParseUcxDevices(const std::string& text) {
  std::set<std::string> devices;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto at = line.find("Device:");
    if (at == std::string::npos) continue;
    const std::string name(Trim(std::string_view(line).substr(at + 7)));
    if (!name.empty()) devices.insert(name);
  }
  return devices;
}

std::optional<std::set<std::string>> QueryUcxDevices() {
  const CapturedRun run = RunCaptured({"ucx_info", "-d"}, EnvironmentWith({}), 5000);
  if (!run.Succeeded()) return std::nullopt;
  return ParseUcxDevices(run.out);
}

}  // namespace gpulaunch
