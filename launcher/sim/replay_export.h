// A sacct export (slurm/sacct_export.h) as sim --replay needs it: the jobs
// as a trace to simulate, and what Slurm did with them to compare against.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "policies/pool/job_trace.h"
#include "policies/pool/quota.h"
#include "policies/pool/replay_compare.h"
#include "slurm/sacct_export.h"

namespace gpulaunch {

struct RecordedJobs {
  double t0 = 0;  // the first submission, s since the epoch (UTC); the clock's zero
  std::vector<pool::TraceJob> trace;       // recorded submission, GPUs, last run's length, time limit
  std::vector<pool::ObservedRun> observed;  // the same jobs (by trace id) as Slurm ran them
  int skipped = 0;  // never started, or no GPUs: in neither list
};

// In submit order. With quotas, each job is of the team its Account names;
// an account that is no team is an error naming `origin`:line.
StatusOr<RecordedJobs> RecordedFromExport(std::vector<SacctJob> jobs, const pool::QuotaBook& quotas,
                                          const std::string& origin);

// OK when `b` holds the same jobs as `a` (two runs of one trace): as many,
// and in submit order each of the same GPUs, submitted within
// `submit_slack_s` of the other on each run's own clock. Else an error naming
// both files and lines.
Status SameJobs(const RecordedJobs& a, const std::string& origin_a, const RecordedJobs& b,
                const std::string& origin_b, double submit_slack_s = 5);

}  // namespace gpulaunch
