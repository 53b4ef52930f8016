// `gpulaunch plan`: builds the cluster from hosts (discovered or recorded) or
// a synthetic description, places the job with the placement engine, and
// prints the plan, its modelled communication time and the same for Open
// MPI's default by-slot mapping. Formats: table, or JSON (docs/placement.md, plan_output.h).
#pragma once

#include <string>
#include <vector>

namespace gpulaunch {

// Returns the process exit code (0, or 2 for usage errors and infeasible jobs).
int RunPlanCommand(const std::vector<std::string>& args);

// `gpulaunch slurm-config --out DIR [cluster options as for plan]`: writes
// DIR/topology.conf and DIR/gres.conf for the cluster (slurm/slurm_config.h).
int RunSlurmConfigCommand(const std::vector<std::string>& args);

}  // namespace gpulaunch
