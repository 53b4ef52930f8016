// What a policy may know of a job's run time (`gpulaunch sim --estimates`):
//   perfect  the trace's run time (an exact time limit no user gives)
//   user     the user's time limit: the trace's `limit` column where it has
//            one, else drawn from UserLimitModel; a run that reaches its
//            limit ends there, as Slurm ends it (OverTimeLimit=0)
//   none     nothing: policies see no duration at all (estimate 0)
//
// UserLimitModel follows the published analyses of real time limits:
//   - Tsafrir, Etsion and Feitelson, "Modeling User Runtime Estimates"
//     (JSSPP 2005): limits are modal, about 20 round values cover 90% of
//     jobs, and the site's maximum is one of the most popular;
//   - Mu'alem and Feitelson, "Utilization, Predictability, Workloads, and User
//     Runtime Estimates in Scheduling the IBM SP2 with Backfilling" (IEEE TPDS
//     12(6), 2001): most limits are several times the real run time, and a
//     share of jobs runs until its limit ends it.
// So a job (each drawn from its own seeded stream: the same job gets the same
// limit whatever the rest of the trace):
//   - with probability `reach_share` ran until its limit ended it: its limit
//     is its trace run time (a trace records what ran, so a job that was
//     killed at its limit ran exactly that long);
//   - with probability `site_max_share` asks for the site's maximum
//     (`site_max_s`, or the next round value above its run time when longer);
//   - otherwise takes its run time times a factor log-uniform in
//     [1, max_factor], rounded up to the next round value (15 and 30 min;
//     1, 2, 4, 6, 8 and 12 h; 1 to 5 days; 7 days; then whole weeks).
// Limits are never below the run time except where a trace says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "policies/pool/job_trace.h"

namespace gpulaunch::pool {

enum class EstimateMode { kPerfect, kUser, kNone };
const char* EstimateModeName(EstimateMode m);
// "perfect", "user" or "none".
StatusOr<EstimateMode> ParseEstimateMode(const std::string& text);

struct UserLimitModel {
  double reach_share = 0.10;
  double site_max_share = 0.20;
  double site_max_s = 7 * 86400;
  double max_factor = 4;
  uint64_t seed = 1;
};

// The smallest round value (see above) at or above `seconds`.
double RoundUpToCommonLimit(double seconds);

// Gives every job without a limit one drawn from `model`.
void DrawUserLimits(std::vector<TraceJob>& jobs, const UserLimitModel& model = {});

}  // namespace gpulaunch::pool
