// StepMetrics: what the runtime measured during one step of one rank, with
// --profile (runtime/step_profiler.h). The runtime writes one JSON line per
// step; gpulaunch reads them back (through the rank's exec shim) for the run
// report and the metrics files (launcher/run_report.h). Both ends share this
// value type and its one-line JSON form, so they can never disagree on it.
//
//   {"rank":3,"step":7,"step_s":0.081,"compute_s":0.052,"bubble_s":0,
//    "bubble_theory":0,"groups":[{"group":"dp","comm_s":0.029,"bytes":1048576,"calls":4,
//    "inter_host_bytes":393216}]}
//
// Units: seconds and bytes. `comm_s` is wall time inside the group's
// communication calls, waiting for peers included (a rank that waits for a
// slower one spends that time "in communication", which is what the
// communication share of the step should show). compute_s = step_s minus
// every group's comm_s. bubble_s is the part of the pipeline group's comm_s
// that the pipeline executor spent waiting for its neighbours;
// bubble_theory the schedule's textbook bubble fraction (0 without a
// pipeline).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

struct GroupTraffic {
  std::string group;   // "dp", "tp", "pp", "world", or a name the job chose
  double comm_s = 0;
  uint64_t bytes = 0;  // payload bytes sent plus received by this rank
  uint64_t calls = 0;
  // Payload bytes this rank sent to ranks on other hosts in point-to-point
  // calls (what the runtime's reductions use); 0 when the group's hosts are
  // unknown. Collectives the transport runs itself are not split by host.
  uint64_t inter_host_bytes = 0;
};

struct StepMetrics {
  int rank = -1;
  int64_t step = 0;
  double step_s = 0;
  double compute_s = 0;
  double bubble_s = 0;
  double bubble_theory = 0;
  std::vector<GroupTraffic> groups;  // sorted by name

  double comm_s() const;  // every group's comm_s
};

// One line of JSON, without a newline.
std::string StepMetricsJson(const StepMetrics& m);
// `origin` names where the line came from for errors ("rank 3 metrics:12").
StatusOr<StepMetrics> ParseStepMetricsJson(std::string_view line, const std::string& origin);

}  // namespace gpulaunch
