// The Slurm node health verdict behind `gpulaunch check --slurm-health`
// (launcher/check/health_check.h runs it on a node and drains the node
// through scontrol): what the node has against what Slurm expects of it.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/host_topology.h"

namespace gpulaunch {

struct HealthExpectation {
  std::optional<int> gpus;  // GPUs the node should have
};

// Problems found, one short reason each; empty when healthy. `port_states`
// maps a NIC name to its port state text ("4: ACTIVE") when known.
std::vector<std::string> HealthProblems(const HostTopology& host, const HealthExpectation& expect,
                                        const std::vector<std::pair<std::string, std::string>>& port_states);

// GPUs in a Slurm Gres string ("gpu:4", "gpu:a100:8(S:0-1)", "gpu:2,nic:1"), or nullopt.
std::optional<int> GpusInGres(const std::string& gres);

}  // namespace gpulaunch
