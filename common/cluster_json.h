// The cluster file: a ClusterTopology as JSON ("gpulaunch-cluster/v1"), for
// recording a cluster once and planning against it anywhere. Dump, load and
// dump again gives identical bytes. Schema: docs/cluster-json.md.
#pragma once

#include <string>

#include "common/cluster_topology.h"
#include "common/status.h"

namespace gpulaunch {

std::string DumpClusterJson(const ClusterTopology& cluster);
// Errors name origin:line and the field.
StatusOr<ClusterTopology> LoadClusterJson(const std::string& text, const std::string& origin);
StatusOr<ClusterTopology> ReadClusterFile(const std::string& path);

}  // namespace gpulaunch
