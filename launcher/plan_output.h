// What `gpulaunch plan` prints: the table (with the modelled step and Open
// MPI's by-slot mapping beside it) or the JSON of docs/placement.md. Both are
// written as they go, a rank at a time, so a 65,536-rank plan is never held
// as text.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "common/cluster_topology.h"
#include "common/status.h"
#include "policies/placement.h"
#include "policies/placement_engine.h"

namespace gpulaunch {

// A plan as computed, with what it is compared against.
struct PlanReport {
  const Placement* placement = nullptr;
  const ClusterTopology* cluster = nullptr;
  std::string layout;                         // ParallelLayout::ToString()
  std::string policy;
  std::string plan_hash;
  StepModel ours;
  std::optional<StepModel> openmpi_by_slot;  // absent when by-slot cannot place the job
};

// The JSON document, one line: every rank, the modelled step of ours and of
// by-slot, the explanation. Strings and each rank's object go through
// nlohmann-json; modelled seconds keep 6 significant digits, as %g wrote them.
void WritePlanJson(std::ostream& out, const PlanReport& r);

// The table: the header lines, one row per rank in columns as wide as their
// widest cell, the model summary and, with `explain`, the reasons.
void WritePlanText(std::ostream& out, const PlanReport& r, bool explain);

}  // namespace gpulaunch
