// How the pool's teams' own tiers count a job on Slurm (policy_slurm_side.h
// writes the partitions and QOS that use it; docs/slurm.md states the rule).
#pragma once

#include <string>

#include "slurm/site_conf.h"

namespace gpulaunch {

// How a team's own tier counts a job: with PriorityFlags=MAX_TRES, Slurm
// bills it max(GPUs, CPUs x cpu, memory GB x mem_gb), so a job counts as the
// largest share of a node it takes, in that node's GPUs. The weights are the
// largest GPUs-per-CPU (and per GB, where memory is consumable) of the
// site's GPU nodes, so taking all of any node's cores (or memory) counts at
// least as its GPUs. Zero: not counted (nothing known of the nodes, or
// memory not consumable).
struct TierBilling {
  double cpu = 0, mem_gb = 0;
  std::string basis;  // what the weights come from, for people
  // TRESBillingWeights ("CPU=2,GRES/gpu=1"); empty when nothing but GPUs counts.
  std::string Weights() const;
  // The partition QOS's GrpTRES for `gpus`, in sacctmgr's order.
  std::string GrpTres(int gpus) const;
};
TierBilling TierBillingFor(const SiteConf* site);

}  // namespace gpulaunch
