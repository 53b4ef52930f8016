// `gpulaunch check --storage PATH [-H LIST | --hostfile FILE] [--size MiB]
// [--budget S] [--format table|json]`: the shared-storage check
// (launcher/storage_check.h) from every host at once, each through the same
// engine as launches. Exit 0 when every host sees the same PATH and could
// write and read it, 1 naming the hosts that could not, 2 for usage errors.
// `gpulaunch check --slurm-health` is the Slurm node health check
// (health_check.h).
#pragma once

#include <string>
#include <vector>

namespace gpulaunch {

int RunCheckCommand(const std::vector<std::string>& args);

}  // namespace gpulaunch
