// Slurm configuration from a cluster as gpulaunch sees it: topology.conf
// (the switch tree; one switch over every host when no tree is known) and
// gres.conf (each host's GPUs as /dev/nvidiaN, Cores= the cores of each
// GPU's NUMA node, so Slurm's GPU-to-core affinity matches gpulaunch's).
#pragma once

#include <string>

#include "common/cluster_topology.h"

namespace gpulaunch {

std::string SlurmTopologyConf(const ClusterTopology& cluster);
std::string SlurmGresConf(const ClusterTopology& cluster);

}  // namespace gpulaunch
