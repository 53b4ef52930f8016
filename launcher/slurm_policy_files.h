// What `gpulaunch slurm-config --policy` writes beside topology.conf and
// gres.conf: the policy's Slurm side (slurm/policy_slurm_side.h), judged
// against the site's configuration, read from --slurm-conf FILE or, when
// none is given, from the running slurmctld (scontrol) if one answers.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "slurm/slurm_policy.h"

namespace gpulaunch {

struct PolicyFiles {
  std::vector<std::pair<std::string, std::string>> files;  // name, text
  std::string summary;  // for stdout: where the site was read, what must change, what Slurm does differently
};

// Errors: an unreadable or malformed --slurm-conf (FILE:LINE).
StatusOr<PolicyFiles> MakePolicyFiles(const PolicyFile& policy, const std::optional<std::string>& slurm_conf);

}  // namespace gpulaunch
