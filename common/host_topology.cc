#include "common/host_topology.h"

#include <algorithm>

namespace gpulaunch {

double HostTopology::NicGbps() const {
  double best = 0;
  for (const Nic& n : nics) best = std::max(best, n.gbps);
  return best;
}

int HostTopology::NumPus() const { return static_cast<int>(AllPus().size()); }

std::vector<int> HostTopology::AllPus() const {
  std::vector<int> pus;
  for (const Core& c : cores) pus.insert(pus.end(), c.pus.begin(), c.pus.end());
  std::sort(pus.begin(), pus.end());
  return pus;
}

}  // namespace gpulaunch
