#include "policies/path_type.h"

#include <algorithm>

namespace gpulaunch {
namespace {

// Where a device sits, as far as nearness goes.
struct Location {
  const PciPath& pci;
  int numa;
  int package;
};

size_t SharedPrefix(const PciPath& a, const PciPath& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

PathType Between(const HostTopology& t, const Location& a, const Location& b) {
  const size_t shared = SharedPrefix(a.pci, b.pci);
  if (shared >= 2) {
    // Parting below one bridge, each at most one (downstream port) further:
    // one switch. Deeper on either side: several.
    const bool one_switch = a.pci.size() - shared <= 1 && b.pci.size() - shared <= 1;
    return one_switch ? PathType::kPix : PathType::kPxb;
  }
  if (shared == 1) return PathType::kPhb;
  if (a.package >= 0 && b.package >= 0) return a.package == b.package ? PathType::kNode : PathType::kSys;
  if (a.numa >= 0 && b.numa >= 0) return a.numa == b.numa ? PathType::kNode : PathType::kSys;
  // Locality unknown: near only when the host has a single package.
  return t.packages.size() == 1 ? PathType::kNode : PathType::kSys;
}

// Whether every id of `items` is in `set` (either may be unsorted).
bool Includes(const std::vector<int>& set, const std::vector<int>& items) {
  if (std::is_sorted(set.begin(), set.end()) && std::is_sorted(items.begin(), items.end())) {
    return std::includes(set.begin(), set.end(), items.begin(), items.end());
  }
  std::vector<int> s = set, i = items;
  std::sort(s.begin(), s.end());
  std::sort(i.begin(), i.end());
  return std::includes(s.begin(), s.end(), i.begin(), i.end());
}

}  // namespace

const char* PathTypeName(PathType p) {
  switch (p) {
    case PathType::kNvl: return "NVL";
    case PathType::kPix: return "PIX";
    case PathType::kPxb: return "PXB";
    case PathType::kPhb: return "PHB";
    case PathType::kNode: return "NODE";
    case PathType::kSys: return "SYS";
  }
  return "SYS";
}

int PackageOf(const HostTopology& t, const std::vector<int>& pus, int numa) {
  std::vector<int> want = pus;
  if (want.empty()) {
    for (const NumaNode& n : t.numa_nodes)
      if (n.os_index == numa) want = n.pus;
  }
  if (want.empty()) return -1;
  for (const Package& p : t.packages)
    if (Includes(p.pus, want)) return p.os_index;
  return -1;
}

PathType GpuNicPath(const HostTopology& t, const Gpu& gpu, const Nic& nic) {
  return Between(t, {gpu.pci_path, gpu.numa_node, PackageOf(t, gpu.local_pus, gpu.numa_node)},
                 {nic.pci_path, nic.numa_node, PackageOf(t, nic.local_pus, nic.numa_node)});
}

PathType GpuGpuPath(const HostTopology& t, int gpu_a, int gpu_b) {
  if (t.GpuLinkGbps(gpu_a, gpu_b) > 0) return PathType::kNvl;
  const Gpu& a = t.gpus[gpu_a];
  const Gpu& b = t.gpus[gpu_b];
  return Between(t, {a.pci_path, a.numa_node, PackageOf(t, a.local_pus, a.numa_node)},
                 {b.pci_path, b.numa_node, PackageOf(t, b.local_pus, b.numa_node)});
}

}  // namespace gpulaunch
