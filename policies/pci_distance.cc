#include "policies/pci_distance.h"

#include <utility>

namespace gpulaunch {

int SharedPciPrefix(const PciPath& a, const PciPath& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return static_cast<int>(i);
}

int NicDistance(const Gpu& gpu, const Nic& nic) {
  const int shared = SharedPciPrefix(gpu.pci_path, nic.pci_path);
  if (shared > 0) return 100 - shared;
  if (gpu.numa_node >= 0 && gpu.numa_node == nic.numa_node) return 200;
  return 300;
}

size_t NearestLeastUsedNic(const HostTopology& t, const Gpu& gpu, std::vector<int>& nic_users) {
  const auto key = [&](size_t n) { return std::make_pair(NicDistance(gpu, t.nics[n]), nic_users[n]); };
  size_t best = 0;
  for (size_t n = 1; n < t.nics.size(); ++n)
    if (key(n) < key(best)) best = n;
  ++nic_users[best];
  return best;
}

}  // namespace gpulaunch
