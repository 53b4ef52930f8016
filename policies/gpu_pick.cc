#include "policies/gpu_pick.h"

#include <algorithm>
#include <set>

namespace gpulaunch {

std::vector<std::vector<int>> Islands(const ClusterHost& host) {
  const HostTopology& t = host.topology;
  std::vector<int> free;
  for (const Gpu& g : t.gpus)
    if (host.GpuFree(g.index)) free.push_back(g.index);
  std::vector<std::vector<int>> islands;
  std::set<int> seen;
  for (int g : free) {
    if (seen.count(g)) continue;
    std::vector<int> island, stack = {g};
    seen.insert(g);
    while (!stack.empty()) {
      const int cur = stack.back();
      stack.pop_back();
      island.push_back(cur);
      for (int o : free) {
        const bool linked = t.gpu_link_gbps.empty() ? t.gpus[o].numa_node == t.gpus[cur].numa_node
                                                     : t.GpuLinkGbps(cur, o) > 0;
        if (!seen.count(o) && linked) {
          seen.insert(o);
          stack.push_back(o);
        }
      }
    }
    // PCI bus order: bus numbers are assigned depth-first, so GPUs below one
    // PCIe switch are already neighbours.
    std::sort(island.begin(), island.end());
    islands.push_back(island);
  }
  return islands;
}

std::vector<int> PickGpus(const ClusterHost& host, int need) {
  auto islands = Islands(host);
  const std::vector<int>* fit = nullptr;
  for (const auto& is : islands)
    if (static_cast<int>(is.size()) >= need && (!fit || is.size() < fit->size())) fit = &is;
  if (fit) return std::vector<int>(fit->begin(), fit->begin() + need);
  std::stable_sort(islands.begin(), islands.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  std::vector<int> out;
  for (const auto& is : islands)
    for (int g : is)
      if (static_cast<int>(out.size()) < need) out.push_back(g);
  return out;
}

}  // namespace gpulaunch
