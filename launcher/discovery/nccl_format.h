// The rules of NCCL's topology format that need no XML (nccl_topology.h
// reads the file): attribute values, device names and kinds, per-link
// bandwidths, cores from the CPUs' masks, the GPU-GPU bandwidth matrix.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/host_topology.h"

namespace gpulaunch::nccl {

std::string Lower(std::string s);

// "0x030200" -> 0x030200; nullopt unless 1-8 hex digits after an optional 0x.
std::optional<unsigned long> Hex(const std::string& text);

// Linux cpumask text, most significant 32-bit word first ("000000ff,ffff0000");
// at most 65,536 CPUs (Linux's own NR_CPUS limit is 8,192). Sorted CPU ids.
std::optional<std::vector<int>> CpuMask(const std::string& text);

// "nvidia", "amd", "intel" or "unknown" for a PCI vendor id.
std::string VendorName(unsigned long id);

// NCCL's per-link NVLink bandwidth by SM version (GB/s, its src/graph/topo.h).
double NvlinkPerLink(int sm);

// RCCL's per-link xGMI bandwidth by gcn architecture (GB/s, its src/graph/topo.h).
double XgmiPerLink(const std::string& gcn);

// UCX's name for an RDMA port ("mlx5_0:1"); IP interfaces keep their name.
std::string NicName(const std::string& name, const std::string& port);

// "efa", "slingshot", "infiniband" or "ethernet".
std::string NicKind(const std::string& name, unsigned long pci_class, unsigned long vendor);

// Fills t.cores from t.numa_nodes' CPUs (one per <cpu>; see the .cc for how
// SMT twins are paired), logical indices in CPU order.
void AddCoresFromCpus(HostTopology& t);

// One <nvlink>/<xgmi> element: from a GPU (bus id) to a GPU, or to the
// NVSwitches, at this many GB/s.
struct GpuLink {
  std::string from, target;  // bus ids
  double gbps;
  bool to_switch;
};

// Row-major gpus x gpus GB/s: links to other GPUs of the file (either side's
// listing), and between any two GPUs with NVSwitch links the smaller of their
// totals; links to a GPU itself or outside the file are dropped. Empty when
// no GPU pair is linked. `gpus` must be indexed in order.
std::vector<double> GpuLinkMatrix(const std::vector<Gpu>& gpus, const std::vector<GpuLink>& links);

}  // namespace gpulaunch::nccl
