#include "launcher/discovery/hwloc_devices.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "common/strings.h"

namespace gpulaunch {

std::vector<int> PusOf(hwloc_const_cpuset_t set) {
  std::vector<int> pus;
  if (!set) return pus;
  for (int i = hwloc_bitmap_first(set); i != -1; i = hwloc_bitmap_next(set, i)) pus.push_back(i);
  return pus;
}

const char* HwlocInfo(hwloc_obj_t obj, const char* name) { return hwloc_obj_get_info_by_name(obj, name); }

namespace {

std::string BusId(const hwloc_obj_t pci) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
                pci->attr->pcidev.dev, pci->attr->pcidev.func);
  return buf;
}

// Vendors whose display-class devices are BMC or virtual consoles, not GPUs.
bool IsConsoleVendor(unsigned vendor) {
  switch (vendor) {
    case 0x1a03:  // ASPEED (server BMC)
    case 0x102b:  // Matrox (server BMC)
    case 0x1b36:  // QEMU
    case 0x1234:  // Bochs
    case 0x1013:  // Cirrus
    case 0x15ad:  // VMware
    case 0x19a2:  // Emulex BMC
      return true;
    default:
      return false;
  }
}

bool IsGpu(const hwloc_obj_t pci) {
  const unsigned cls = pci->attr->pcidev.class_id;
  const unsigned vendor = pci->attr->pcidev.vendor_id;
  const bool gpu_class = cls == 0x0300 || cls == 0x0302 || cls == 0x0380 || cls == 0x1200;
  if (!gpu_class || IsConsoleVendor(vendor)) return false;
  if (vendor == 0x8086 && cls == 0x0300) return false;  // integrated graphics
  return true;
}

std::string VendorName(unsigned vendor) {
  switch (vendor) {
    case 0x10de: return "nvidia";
    case 0x1002: return "amd";
    case 0x8086: return "intel";
    default: return "unknown";
  }
}

// NUMA node (with CPUs) of an object's locality; -1 when none or ambiguous.
int NumaOf(hwloc_topology_t topo, hwloc_obj_t obj) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, obj);
  if (!anc || !anc->cpuset) return -1;
  int found = -1;
  for (hwloc_obj_t n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, nullptr); n;
       n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n)) {
    if (!n->cpuset || hwloc_bitmap_iszero(n->cpuset)) continue;
    if (!hwloc_bitmap_isincluded(n->cpuset, anc->cpuset)) continue;
    if (found != -1) return -1;
    found = static_cast<int>(n->os_index);
  }
  if (found == -1) {  // ancestor smaller than a NUMA node: the node covering it
    for (hwloc_obj_t n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, nullptr); n;
         n = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, n)) {
      if (n->cpuset && hwloc_bitmap_isincluded(anc->cpuset, n->cpuset)) return static_cast<int>(n->os_index);
    }
  }
  return found;
}

// Bridges from the top of the I/O tree down to (not including) `obj`.
PciPath PathOf(hwloc_obj_t obj) {
  PciPath path;
  for (hwloc_obj_t p = obj->parent; p && p->type == HWLOC_OBJ_BRIDGE; p = p->parent) {
    path.push_back("bridge" + std::to_string(p->gp_index));
  }
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace

void AddGpus(hwloc_topology_t topo, HostTopology& host) {
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci; pci = hwloc_get_next_pcidev(topo, pci)) {
    if (!IsGpu(pci)) continue;
    Gpu g;
    g.pci_bus_id = BusId(pci);
    g.vendor = VendorName(pci->attr->pcidev.vendor_id);
    if (const char* m = HwlocInfo(pci, "PCIDevice")) g.model = m;
    for (hwloc_obj_t os = pci->io_first_child; os; os = os->next_sibling) {
      if (os->type != HWLOC_OBJ_OS_DEVICE) continue;
      if (const char* m = HwlocInfo(os, "GPUModel")) g.model = m;
      if (const char* u = HwlocInfo(os, "NVIDIAUUID")) g.uuid = u;
      if (const char* u = HwlocInfo(os, "AMDUUID")) g.uuid = u;
      if (const char* mem = HwlocInfo(os, "CUDAGlobalMemorySize")) g.memory_bytes = std::stoull(mem) * 1024;
    }
    g.numa_node = NumaOf(topo, pci);
    if (hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, pci)) g.local_pus = PusOf(anc->cpuset);
    g.pci_path = PathOf(pci);
    host.gpus.push_back(std::move(g));
  }
  std::sort(host.gpus.begin(), host.gpus.end(), [](const Gpu& a, const Gpu& b) { return a.pci_bus_id < b.pci_bus_id; });
  for (size_t i = 0; i < host.gpus.size(); ++i) host.gpus[i].index = static_cast<int>(i);
}

// Data-network NICs: RDMA devices (InfiniBand/RoCE, EFA) and Slingshot.
// Plain Ethernet is left out: choosing it for UCX_NET_DEVICES would pin ranks
// to a management network.
void AddNics(hwloc_topology_t topo, HostTopology& host) {
  // An RDMA device and its IP interface (ib0, or "hsi0" on some sites) share
  // one PCI function: keep the RDMA one only.
  std::set<hwloc_obj_t> pci_with_rdma;
  for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os; os = hwloc_get_next_osdev(topo, os)) {
    if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && os->parent) pci_with_rdma.insert(os->parent);
  }
  for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os; os = hwloc_get_next_osdev(topo, os)) {
    const hwloc_obj_t pci = os->parent;
    if (!pci || pci->type != HWLOC_OBJ_PCI_DEVICE) continue;
    Nic nic;
    const std::string name = os->name ? os->name : "";
    if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
      int port = 1;
      for (int p = 1; p <= 4; ++p) {
        if (HwlocInfo(os, ("Port" + std::to_string(p) + "State").c_str())) { port = p; break; }
      }
      nic.name = name + ":" + std::to_string(port);
      nic.kind = (name.rfind("rdmap", 0) == 0 || name.rfind("efa", 0) == 0) ? "efa" : "infiniband";
    } else if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && name.rfind("hsi", 0) == 0 &&
               !pci_with_rdma.count(pci)) {
      nic.name = name;
      nic.kind = "slingshot";
    } else {
      continue;
    }
    nic.pci_bus_id = BusId(pci);
    nic.numa_node = NumaOf(topo, pci);
    if (hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, pci)) nic.local_pus = PusOf(anc->cpuset);
    nic.pci_path = PathOf(pci);
    host.nics.push_back(std::move(nic));
  }
  std::sort(host.nics.begin(), host.nics.end(), [](const Nic& a, const Nic& b) {
    return std::tie(a.pci_bus_id, a.name) < std::tie(b.pci_bus_id, b.name);
  });
}

namespace {

// The GPU (index in host.gpus) an object belongs to: a PCI device or an OS
// device below one; -1 otherwise.
int GpuIndexOf(const HostTopology& host, hwloc_obj_t obj) {
  while (obj && obj->type == HWLOC_OBJ_OS_DEVICE) obj = obj->parent;
  if (!obj || obj->type != HWLOC_OBJ_PCI_DEVICE) return -1;
  const std::string bus = BusId(obj);
  for (const Gpu& g : host.gpus)
    if (g.pci_bus_id == bus) return g.index;
  return -1;
}

}  // namespace

// GPU-GPU bandwidth from hwloc's NVLinkBandwidth / XGMIBandwidth matrices
// (MB/s). Objects are mapped to their PCI GPU (partitions of one GPU merge,
// keeping the largest link); GPUs joined through NVSwitches get the smaller
// of their two totals towards the switches, as the fabric is non-blocking.
void AddGpuLinks(hwloc_topology_t topo, HostTopology& host) {
  const size_t n = host.gpus.size();
  if (n == 0) return;
  std::vector<double> link(n * n, 0.0), to_switch(n, 0.0);
  bool any = false;
  for (const char* name : {"NVLinkBandwidth", "XGMIBandwidth"}) {
    unsigned count = 8;
    hwloc_distances_s* dist[8];
    if (hwloc_distances_get_by_name(topo, name, &count, dist, 0) != 0) continue;
    for (unsigned d = 0; d < std::min(count, 8u); ++d) {
      const unsigned nb = dist[d]->nbobjs;
      for (unsigned i = 0; i < nb; ++i) {
        const int gi = GpuIndexOf(host, dist[d]->objs[i]);
        if (gi < 0) continue;
        for (unsigned j = 0; j < nb; ++j) {
          const double mbps = static_cast<double>(dist[d]->values[i * nb + j]);
          if (i == j || mbps <= 0) continue;
          const int gj = GpuIndexOf(host, dist[d]->objs[j]);
          hwloc_obj_t other = dist[d]->objs[j];
          if (gj >= 0 && gj != gi) {
            double& v = link[gi * n + gj];
            v = std::max(v, mbps / 1000.0);
            any = true;
          } else if (gj < 0 && other->type == HWLOC_OBJ_PCI_DEVICE && other->attr->pcidev.vendor_id == 0x10de) {
            to_switch[gi] += mbps / 1000.0;  // an NVSwitch
            any = true;
          }
        }
      }
      hwloc_distances_release(topo, dist[d]);
    }
  }
  if (!any) return;
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b)
      if (a != b && to_switch[a] > 0 && to_switch[b] > 0) {
        link[a * n + b] = std::max(link[a * n + b], std::min(to_switch[a], to_switch[b]));
      }
  host.gpu_link_gbps = std::move(link);
}

}  // namespace gpulaunch
