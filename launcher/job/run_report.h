// The run report of a --profile job: what the runtime measured per step and
// per group (common/step_metrics.h), summed up for the job's owner.
//
//   - the step time distribution (a step's time is the slowest rank's: ranks
//     of one step wait for each other);
//   - the communication share of the step per group (dp, tp, pp, world):
//     time inside that group's communication / step time, over all ranks
//     and steps, with the bytes moved and the achieved bandwidth;
//   - the measured pipeline bubble against the schedule's textbook one;
//   - the slowest rank (the largest mean compute time: the one the others
//     wait for) and its host;
//   - warnings with the likely cause when communication takes a large share
//     of the step (kHighCommShare): a rank that computes much longer than the
//     others (the rest wait for it), a tensor-parallel group that spans hosts,
//     a bubble well above theory, else the links between hosts.
//
// The same figures go to run-report.json, and per-rank totals to a
// Prometheus text file (PrometheusText; names and units in docs/metrics.md).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/step_metrics.h"

namespace gpulaunch {

inline constexpr double kHighCommShare = 0.30;
// A rank is a straggler when its mean compute time exceeds the median rank's
// by this factor.
inline constexpr double kStragglerFactor = 1.2;

struct RunProfile {
  std::string job_id;
  std::map<int, std::vector<StepMetrics>> steps;  // by rank
  std::vector<std::string> host_of_rank;          // by rank (the plan)
  std::string layout;                             // "tp=2,pp=1,dp=2,..." or empty
};

struct GroupSummary {
  std::string group;
  double comm_s = 0;      // over all ranks and steps
  double share = 0;       // comm_s / step time over all ranks and steps
  uint64_t bytes = 0;
  double gbps = 0;        // bytes * 8 / comm_s / 1e9 (waiting included)
  // Sent to other hosts, all ranks together, per step (GroupTraffic::inter_host_bytes).
  double inter_host_bytes_per_step = 0;
};

struct RunReport {
  int ranks = 0;
  int steps = 0;           // distinct step numbers
  double step_median_s = 0, step_p95_s = 0, step_max_s = 0;
  int64_t step_max_at = -1;
  double comm_share = 0;   // all groups
  std::vector<GroupSummary> groups;  // by name
  double bubble_share = 0, bubble_theory = 0;
  int slowest_rank = -1;
  std::string slowest_host;
  double slowest_compute_s = 0, median_compute_s = 0;  // mean per step
  std::vector<std::string> warnings;
};

// nullopt-like: a report with ranks == 0 when nothing was measured.
RunReport AnalyzeRun(const RunProfile& profile);

// A few lines for the terminal.
std::string RenderRunReport(const RunReport& report);
std::string RunReportJson(const RunReport& report);
// Prometheus text exposition format: per-rank totals and job-level shares.
std::string PrometheusText(const RunProfile& profile, const RunReport& report);

// Writes DIR/rank-<R>.jsonl (every step), DIR/metrics.prom and
// DIR/run-report.json, each through a temporary name.
Status WriteProfileFiles(const std::string& dir, const RunProfile& profile, const RunReport& report);

}  // namespace gpulaunch
