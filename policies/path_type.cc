#include "policies/path_type.h"

#include <algorithm>

namespace gpulaunch {
namespace {

size_t SharedPrefix(const PciPath& a, const PciPath& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

PathType PathBetween(const HostTopology& t, const DeviceSite& a, const DeviceSite& b) {
  const size_t shared = SharedPrefix(*a.pci, *b.pci);
  if (shared >= 2) {
    // Parting below one bridge, each at most one (downstream port) further:
    // one switch. Deeper on either side: several.
    const bool one_switch = a.pci->size() - shared <= 1 && b.pci->size() - shared <= 1;
    return one_switch ? PathType::kPix : PathType::kPxb;
  }
  if (shared == 1) return PathType::kPhb;
  if (a.package >= 0 && b.package >= 0) return a.package == b.package ? PathType::kNode : PathType::kSys;
  if (a.numa >= 0 && b.numa >= 0) return a.numa == b.numa ? PathType::kNode : PathType::kSys;
  // Locality unknown: near only when the host has a single package.
  return t.packages.size() == 1 ? PathType::kNode : PathType::kSys;
}

namespace {

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
  // No copies: the link model asks this for every rank of a plan.
  const std::vector<int>* want = &pus;
  if (want->empty()) {
    for (const NumaNode& n : t.numa_nodes)
      if (n.os_index == numa) want = &n.pus;
  }
  if (want->empty()) return -1;
  for (const Package& p : t.packages)
    if (Includes(p.pus, *want)) return p.os_index;
  return -1;
}

DeviceSite SiteOf(const HostTopology& t, const Gpu& gpu) {
  return {&gpu.pci_path, gpu.numa_node, PackageOf(t, gpu.local_pus, gpu.numa_node)};
}

DeviceSite SiteOf(const HostTopology& t, const Nic& nic) {
  return {&nic.pci_path, nic.numa_node, PackageOf(t, nic.local_pus, nic.numa_node)};
}

PathType GpuNicPath(const HostTopology& t, const Gpu& gpu, const Nic& nic) {
  return PathBetween(t, SiteOf(t, gpu), SiteOf(t, nic));
}

PathType GpuGpuPath(const HostTopology& t, int gpu_a, int gpu_b) {
  if (t.GpuLinkGbps(gpu_a, gpu_b) > 0) return PathType::kNvl;
  return PathBetween(t, SiteOf(t, t.gpus[gpu_a]), SiteOf(t, t.gpus[gpu_b]));
}

}  // namespace gpulaunch
