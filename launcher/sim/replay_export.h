// A sacct export (slurm/sacct_export.h) as sim --replay needs it: the jobs
// as a trace to simulate, and what Slurm did with them to compare against.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "policies/pool/job_trace.h"
#include "policies/pool/quota.h"
#include "policies/pool/reclaim_timing.h"
#include "policies/pool/replay_compare.h"
#include "slurm/sacct_export.h"

namespace gpulaunch {

struct RecordedJobs {
  double t0 = 0;  // the first submission, s since the epoch (UTC); the clock's zero
  std::vector<pool::TraceJob> trace;       // recorded submission, GPUs, last run's length, time limit
  std::vector<pool::ObservedRun> observed;  // the same jobs (by trace id) as Slurm ran them
  int skipped = 0;  // never started, or no GPUs: in neither list
  // When slurmctld killed preempted runs (their recorded End, PREEMPTED), on
  // the trace's clock, earliest first: with a GraceTime, times of its
  // time-limit passes.
  std::vector<double> kills;
};

// In submit order. With quotas, each job is of the team its Account names;
// an account that is no team is an error naming `origin`:line.
StatusOr<RecordedJobs> RecordedFromExport(std::vector<SacctJob> jobs, const pool::QuotaBook& quotas,
                                          const std::string& origin);

// How the simulation of a run reclaims (pool::ReclaimTiming), from the
// borrowed tier's GraceTime `grace_time_s` and the run's kills:
//   - GraceTime 0: victims are requeued in the scheduling pass; the GPUs come
//     free `delay_s` later;
//   - GraceTime > 0: victims die at slurmctld's time-limit passes, every 30 s;
//     the run's first kill fixes their phase, and the GPUs come free
//     `delay_s` after the kill. With no kill recorded the phase is unknown,
//     and the wait is the mean, `mean_delay_s`.
// `phase_from`, when not null, says where the passes' phase came from.
pool::ReclaimTiming ReclaimOfRun(const RecordedJobs& run, double grace_time_s, double delay_s, double mean_delay_s,
                                 std::string* phase_from = nullptr);

// OK when `b` holds the same jobs as `a` (two runs of one trace): as many,
// and in submit order each of the same GPUs, submitted within
// `submit_slack_s` of the other on each run's own clock. Else an error naming
// both files and lines.
Status SameJobs(const RecordedJobs& a, const std::string& origin_a, const RecordedJobs& b,
                const std::string& origin_b, double submit_slack_s = 5);

}  // namespace gpulaunch
