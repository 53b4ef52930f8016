// What gpulaunch asks of Slurm from inside an allocation: the switch tree,
// the job's share of each node, and signals for the job step its ranks run
// in. Every call runs a Slurm client (argv, never a shell) under a timeout.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/cluster_topology.h"
#include "common/network_tree.h"
#include "slurm/slurm_allocation.h"
#include "common/status.h"
#include "policies/placement.h"

namespace gpulaunch {

// Inside a Slurm allocation, the switch tree from `scontrol show topology`;
// nullopt outside one or when Slurm has no tree.
std::optional<NetworkTree> SlurmNetworkTree();

// The tree for these hosts inside an allocation: `scontrol show topology`,
// else (it shows none, or GPULAUNCH_SLURM_TREE=addr asks so) where each
// host's steps are told they are, SLURM_TOPOLOGY_ADDR as gpulaunch-probe
// reported it (slurm/slurm_allocation.h). nullopt outside an allocation or
// with neither.
StatusOr<std::optional<NetworkTree>> SlurmNetworkTreeFor(const std::vector<ClusterHost>& hosts);

// Inside a Slurm allocation, narrows each host that is one of the job's
// nodes to the cores and GPUs Slurm gave the job there (`scontrol show job
// -d`); GPUs count only on nodes whose Slurm config lists gpu GRES. Outside
// an allocation, leaves the hosts as they are.
Status NarrowToSlurmJob(std::vector<ClusterHost>& hosts);

// Sends `sig` to every task of the given steps ("JOB.STEP") with scancel.
// False when there is no step or scancel failed for all of them.
bool SignalSlurmSteps(const std::set<std::string>& steps, int sig);

}  // namespace gpulaunch
