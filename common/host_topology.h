// Value types for one host's hardware as placement sees it. Filled by the
// launcher's discovery sources (hwloc live or XML, NVML) and consumed by
// policies/, which never sees hwloc itself. All CPU ids are OS indices
// (what sched_setaffinity and `taskset` use); ordering is by logical index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpulaunch {

struct Core {
  int logical_index = 0;   // hwloc logical core index (what an Open MPI rankfile "slot=" names)
  std::vector<int> pus;    // OS indices of its hardware threads
  int numa_node = -1;      // OS index of the NUMA node holding it
  int package = -1;        // OS index of its package (socket), -1 when unknown

  bool operator==(const Core&) const = default;
};

struct Package {
  int os_index = 0;
  std::vector<int> pus;

  bool operator==(const Package&) const = default;
};

struct NumaNode {
  int os_index = 0;
  std::vector<int> pus;    // OS PU indices local to it (empty for GPU-memory nodes)

  bool operator==(const NumaNode&) const = default;
};

// Where a PCI device sits: the chain of bridge ids from the host bridge down
// (the host bridge first), from which policies/path_type.h tells how near two
// devices are.
using PciPath = std::vector<std::string>;

struct Gpu {
  int index = 0;              // position in PCI bus-id order (CUDA_DEVICE_ORDER=PCI_BUS_ID)
  std::string pci_bus_id;     // "0000:1a:00.0"
  std::string vendor;         // "nvidia", "amd", "intel", "unknown"
  std::string model;          // from hwloc/NVML when recorded
  std::string uuid;           // NVML UUID when known
  uint64_t memory_bytes = 0;  // when known
  int numa_node = -1;         // nearest NUMA node with CPUs, -1 when unknown
  std::vector<int> local_pus; // PUs of the GPU's locality (its non-I/O ancestor)
  PciPath pci_path;

  bool operator==(const Gpu&) const = default;
};

struct Nic {
  std::string name;           // device name as UCX names it: "mlx5_0:1", "hsi0", "eth0"
  std::string kind;           // "infiniband", "slingshot", "efa", "ethernet"
  std::string pci_bus_id;
  int numa_node = -1;
  std::vector<int> local_pus; // PUs of the NIC's locality (its non-I/O ancestor), empty when unknown
  PciPath pci_path;
  double gbps = 0;            // link speed in GB/s when known (sysfs on live hosts), else 0

  bool operator==(const Nic&) const = default;
};

struct HostTopology {
  std::string hostname;       // as recorded or discovered (informational)
  // Where Slurm's topology/tree puts the host, as its steps see it
  // (SLURM_TOPOLOGY_ADDR "top.leaf0.node1", SLURM_TOPOLOGY_ADDR_PATTERN
  // "switch.switch.node"); empty outside Slurm. Reported by gpulaunch-probe.
  std::string slurm_topology_addr, slurm_topology_pattern;
  std::vector<Package> packages;
  std::vector<Core> cores;    // sorted by logical index
  std::vector<NumaNode> numa_nodes;
  std::vector<Gpu> gpus;      // sorted by PCI bus id
  std::vector<Nic> nics;      // data-network NICs only, sorted by PCI bus id then name
  // Direct GPU-GPU bandwidth in GB/s over NVLink, NVSwitch or XGMI, row-major
  // gpus.size() squared; empty when the source records none (PCIe only).
  std::vector<double> gpu_link_gbps;

  double GpuLinkGbps(int a, int b) const {
    return gpu_link_gbps.empty() ? 0.0 : gpu_link_gbps[static_cast<size_t>(a) * gpus.size() + b];
  }
  // The fastest known NIC's speed in GB/s, 0 when none is known.
  double NicGbps() const;
  int NumPus() const;
  std::vector<int> AllPus() const;

  bool operator==(const HostTopology&) const = default;
};

}  // namespace gpulaunch
