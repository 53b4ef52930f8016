// A recorded machine from a file, in either format gpulaunch reads: hwloc
// XML (v1 or v2, root <topology>) or NCCL's topology format (root <system>,
// nccl_topology.h), told apart by the root element.
#pragma once

#include <string>

#include "common/host_topology.h"
#include "common/status.h"

namespace gpulaunch {

StatusOr<HostTopology> LoadTopologyFile(const std::string& path);
StatusOr<HostTopology> LoadTopologyText(const std::string& xml, const std::string& origin);

}  // namespace gpulaunch
