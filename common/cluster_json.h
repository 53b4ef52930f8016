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

// One host's topology as a cluster file holding that host alone, and back:
// the form the topology caches keep it in. The cluster file keeps neither the
// host's own name nor its Slurm tree address: callers that need them keep them
// beside it. Loading fails unless the file holds exactly one host.
std::string DumpHostJson(const HostTopology& host);
StatusOr<HostTopology> LoadHostJson(const std::string& text, const std::string& origin);

}  // namespace gpulaunch
