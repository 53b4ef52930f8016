#include "slurm/node_health.h"

#include <regex>

#include "common/strings.h"

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

}  // namespace gpulaunch
