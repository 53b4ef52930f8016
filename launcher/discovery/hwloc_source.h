// hwloc discovery: the local host (live), or a recorded hwloc XML (v1 or v2).
// I/O objects are always kept (hwloc drops them by default on XML import).
// GPUs are counted per PCI device (display/3D/accelerator classes from GPU
// vendors), never per OS device, since one GPU may appear as cuda0, nvml0,
// opencl0d0, card0 and renderD128 at once.
#pragma once

#include <string>

#include "common/host_topology.h"
#include "common/status.h"

namespace gpulaunch {

// Discovers this machine with hwloc; merges NVML facts when a driver exists.
StatusOr<HostTopology> DiscoverLocalHost();

// Loads a recorded topology from an hwloc XML file.
StatusOr<HostTopology> LoadHwlocXmlFile(const std::string& path);

// Loads a topology from hwloc XML text (as exported by `gpulaunch-probe`).
StatusOr<HostTopology> LoadHwlocXmlText(const std::string& xml, const std::string& origin);

// Exports this machine's topology as hwloc XML (I/O objects included).
StatusOr<std::string> ExportLocalHwlocXml();

}  // namespace gpulaunch
