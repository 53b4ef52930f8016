// `gpulaunch nodes [-H LIST | --hostfile FILE] [--format table|json]
// [--budget S] [--watch S]`: one row per host and GPU model with the GPU
// count and memory, the host's state (online, down, drained, draining, with
// the reason) and when it last answered. Hosts are asked in parallel, each
// through the same engine as launches (one `mpirun -n 1 --host H
// gpulaunch-probe`, or srun inside an allocation; no daemon of gpulaunch's
// own), and a host that does not answer within the budget is shown down.
// Where Slurm runs (scontrol answers), its drain and down states and
// reasons are shown too. Exit 0 when every host is online, 1 otherwise.
#pragma once

#include <string>
#include <vector>

namespace gpulaunch {

int RunNodesCommand(const std::vector<std::string>& args);

}  // namespace gpulaunch
