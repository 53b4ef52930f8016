// A launch plan: the placement plus what every rank runs and sees. It is
// printable (--dry-run) and hashed; the hash covers everything that decides
// where and how ranks run, and nothing per-invocation (job id, ports, paths),
// so the same inputs give the same hash.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "launcher/core/options.h"
#include "policies/placement.h"

namespace gpulaunch {

struct LaunchPlan {
  Placement placement;
  std::vector<std::string> program;   // job argv as given
  std::vector<EnvAssignment> env;     // -x, in order
  bool all_local = true;              // every host is this machine
  std::string layout;                 // as the user gave it (empty: data parallel)
  std::string plan_hash;              // sha256 of CanonicalPlanText
};

LaunchPlan MakeLaunchPlan(Placement placement, const LaunchOptions& options, bool all_local);

// Stable, line-oriented text that the plan hash is computed over.
std::string CanonicalPlanText(const LaunchPlan& plan);

// The human-readable table printed by --dry-run.
std::string RenderPlanTable(const LaunchPlan& plan);

}  // namespace gpulaunch
