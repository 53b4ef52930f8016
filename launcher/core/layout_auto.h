// `gpulaunch plan --layout auto`: the dp x tp x pp layout with the fastest
// modelled step for the model on this cluster (partitioner/layout_choice.h),
// communication costed by placing each candidate with the placement engine
// and its link model. Prints every candidate and why the winner won.
#pragma once

#include <ostream>

#include "common/cluster_topology.h"
#include "common/parallel_layout.h"
#include "common/status.h"
#include "launcher/core/options.h"
#include "policies/placement.h"

namespace gpulaunch {

StatusOr<ParallelLayout> ChooseLayout(const PlanOptions& options, const ClusterTopology& cluster,
                                      const JobRequest& request, std::ostream& out);

}  // namespace gpulaunch
