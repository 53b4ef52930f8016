// NCCL's topology file format (what NCCL_TOPO_FILE reads, and what cloud
// vendors publish for their GPU VMs) as a recorded host:
//
//   <system version="1">
//     <cpu numaid="0" affinity="0000ffff">      a NUMA node with its cpumask
//       <pci busid="..." class="0x060400">       a PCIe switch (nesting: the tree)
//         <pci busid="..."><gpu dev="0" sm="80"> a GPU, with <nvlink>/<xgmi> links
//         <pci busid="..."><nic><net name="mlx5_0" port="1" speed="200000"/>
//
// Devices may also be given only by their PCI class code, with no <gpu> or
// <nic> child and no names: 0x03xx (display, 3D) and 0x12xx (accelerator)
// from a GPU vendor are GPUs, 0x0207 (InfiniBand) and 0x0200 (Ethernet) are
// NICs, named by bus id.
//
// Mapping (docs/placement.md): each <cpu> is a NUMA node and, as NCCL treats
// the link between two <cpu>s as SYS, its own package; each CPU of its
// affinity is a core; a device's PCI path is its <cpu> (standing for the
// host bridge) and then the bus ids of the <pci> elements above it. NVLink
// bandwidth is the link count times NCCL's per-link figure for the GPU's SM
// version; NVSwitch links (tclass 0x068000) join every GPU that has them;
// xGMI uses RCCL's per-link figure for the GPU's gcn architecture.
#pragma once

#include <string>

#include "common/host_topology.h"
#include "common/status.h"

namespace gpulaunch {

// Whether `xml` looks like an NCCL topology (its root element is <system>).
bool LooksLikeNcclTopology(const std::string& xml);

// Errors name origin:line and what to fix: malformed XML, unknown elements,
// bad attribute values, an NCCL graph file (NCCL_GRAPH_FILE) instead of a
// topology, or a fragment with no GPU (vendors' files that NCCL completes
// from the live machine).
StatusOr<HostTopology> LoadNcclTopologyText(const std::string& xml, const std::string& origin);

}  // namespace gpulaunch
