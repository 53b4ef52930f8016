// A launch plan: the placement plus what every rank runs and sees, printable
// (--dry-run) and named by its plan hash (PlanHash below).
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "common/parallel_layout.h"
#include "launcher/core/options.h"
#include "policies/placement.h"

namespace gpulaunch {

struct LaunchPlan {
  Placement placement;
  std::vector<std::string> program;   // job argv as given
  std::vector<EnvAssignment> env;     // -x, in order
  bool all_local = true;              // every host is this machine
  std::string layout;                 // the resolved layout (ParallelLayout::ToString)
  std::string plan_hash;              // PlanHash(placement, layout)
};

LaunchPlan MakeLaunchPlan(Placement placement, const ParallelLayout& layout, const LaunchOptions& options,
                          bool all_local);

// The plan hash (GPULAUNCH_PLAN_HASH, `plan hash:` in --dry-run, --display-map
// and `gpulaunch plan`, "plan_hash" in their JSON and the summary): SHA-256 of
// CanonicalPlanText, the one function every command uses.
//
// It covers where and how ranks run: the world size, every rank's host, node
// rank, local rank and size, whether it is bound, its CPUs, memory node, GPUs
// and NIC, and the resolved layout (so "tp=2,pp=2" and "pp=2,tp=2" hash
// alike). It covers neither the program nor -x values, which are the job's,
// not the plan's: `gpulaunch plan` has no program, and a plan is compared
// across commands and jobs (the same placement for a training run and its
// evaluation). Nothing per invocation (job id, ports, paths) is in it, so the
// same inputs give the same hash on every run.
std::string PlanHash(const Placement& placement, const std::string& layout);

// Stable, line-oriented text that the plan hash is computed over.
std::string CanonicalPlanText(const Placement& placement, const std::string& layout);

// The human-readable table printed by --dry-run.
std::string RenderPlanTable(const LaunchPlan& plan);
// The same, written as it goes (--dry-run, --display-map: any size of plan).
void WritePlanTable(std::ostream& s, const LaunchPlan& plan);

}  // namespace gpulaunch
