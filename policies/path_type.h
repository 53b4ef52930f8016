// How far apart two devices of one host are, in the path types NCCL uses and
// documents (NCCL_P2P_LEVEL, NCCL_NET_GDR_LEVEL), nearest first. The one
// place that decides nearness: NIC choice, the link model, `--explain` and
// `check` all ask here, so they never disagree about which NIC is "near".
//
// PCI paths are the bridges from the host bridge down (host_topology.h). A
// PCIe switch shows as an upstream bridge with one downstream bridge per
// port, so two devices whose paths part below a bridge other than the host
// bridge, each at most one bridge further down, hang off one switch (PIX);
// parting deeper means several switches (PXB).
#pragma once

#include <string>

#include "common/host_topology.h"

namespace gpulaunch {

enum class PathType {
  kNvl,   // NVLink, NVSwitch, XGMI or C2C, where recorded (GPU to GPU)
  kPix,   // through one PCIe switch
  kPxb,   // through several PCIe switches, no host bridge between
  kPhb,   // through a PCIe host bridge (the root complex)
  kNode,  // the same package: another host bridge or NUMA node
  kSys,   // across packages (the inter-socket link: QPI/UPI, xGMI, X-Bus)
};

// "NVL", "PIX", "PXB", "PHB", "NODE", "SYS".
const char* PathTypeName(PathType p);

// The package (socket) holding `pus`, or holding NUMA node `numa` when `pus`
// is empty; -1 when unknown or when they span packages.
int PackageOf(const HostTopology& t, const std::vector<int>& pus, int numa);

PathType GpuNicPath(const HostTopology& t, const Gpu& gpu, const Nic& nic);

// Where a device sits, as far as nearness goes: for comparing the same
// devices many times (NicAssigner), computed once per device. Refers into
// the device it was made from.
struct DeviceSite {
  const PciPath* pci = nullptr;
  int numa = -1;
  int package = -1;
};
DeviceSite SiteOf(const HostTopology& t, const Gpu& gpu);
DeviceSite SiteOf(const HostTopology& t, const Nic& nic);
PathType PathBetween(const HostTopology& t, const DeviceSite& a, const DeviceSite& b);
PathType GpuGpuPath(const HostTopology& t, int gpu_a, int gpu_b);

}  // namespace gpulaunch
