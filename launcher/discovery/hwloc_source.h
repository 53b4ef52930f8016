// hwloc discovery: the local host (live), or a recorded hwloc XML (v1 or v2).
// I/O objects are always kept (hwloc drops them by default on XML import).
// GPUs are counted per PCI device (display/3D/accelerator classes from GPU
// vendors), never per OS device, since one GPU may appear as cuda0, nvml0,
// opencl0d0, card0 and renderD128 at once.
#pragma once

#include <optional>
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

// This machine's topology as DiscoverLocalHost last loaded it in this
// process, as hwloc v1 XML, for an engine to read instead of discovering the
// host again (Open MPI's hwloc_base_topo_file). v1 because every hwloc
// release reads it, and an engine's hwloc may be older than gpulaunch's.
// Only this machine as it is now: nullopt unless the topology cache was in
// use (topology_cache.h: no GPULAUNCH_TOPOLOGY_CACHE=0, no other input such as
// HWLOC_XMLFILE), or when DiscoverLocalHost has not run.
std::optional<std::string> LocalTopologyXmlForEngine();

// The topology cache entry LocalTopologyXmlForEngine's XML was read from,
// or nullopt when it was discovered live in this process. An engine that
// fails before any rank starts may have failed on it: the launch drops it
// (DropCachedTopology, topology_cache.h) so that the next one discovers
// the host afresh.
std::optional<std::string> LocalTopologyCacheEntry();

// Exports this machine's topology as hwloc XML (I/O objects included).
StatusOr<std::string> ExportLocalHwlocXml();

// hwloc loads every installed plugin with its first topology, whatever the
// topology then uses; the OpenGL and OpenCL ones load X11 and OpenCL
// libraries for OS devices this launcher never reads (and excludes from live
// discovery anyway): 2 to 3 ms of every command's start here, cached
// topology or not. Open MPI's mpirun loads them too (about 48 ms of CPU a
// launch on a 2-core VM, measured). Unless the user set
// HWLOC_PLUGINS_BLACKLIST or HWLOC_COMPONENTS, this keeps them unloaded for
// this process and the engine it starts, never for the job: the shim removes
// the setting before the job starts (process.h). Call it first in main.
void SkipUnusedHwlocPlugins();

}  // namespace gpulaunch
