// `gpulaunch check --slurm-health [--node NAME] [--expect-gpus N]`: a node
// health check usable as Slurm's HealthCheckProgram. It compares what this
// node has with what Slurm expects (its Gres=gpu:N, or --expect-gpus) and
// checks the data NICs' ports; on a problem it drains the node with the
// reason (scontrol update ... State=DRAIN Reason=...) and exits 1.
#pragma once

#include <string>
#include <vector>

#include "slurm/node_health.h"

namespace gpulaunch {

// `gpulaunch check --slurm-health ...` (check_command.cc dispatches here).
int RunSlurmHealthCheck(const std::vector<std::string>& args);

}  // namespace gpulaunch
