// `gpulaunch check --slurm-health [--node NAME] [--expect-gpus N]`: a node
// health check usable as Slurm's HealthCheckProgram. It compares what this
// node has with what Slurm expects (its Gres=gpu:N, or --expect-gpus) and
// checks the data NICs' ports; on a problem it drains the node with the
// reason (scontrol update ... State=DRAIN Reason=...) and exits 1.
#pragma once

#include <optional>
#include <string>
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

// `gpulaunch check --slurm-health ...` (check_command.cc dispatches here).
int RunSlurmHealthCheck(const std::vector<std::string>& args);

}  // namespace gpulaunch
