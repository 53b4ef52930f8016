// sim --replay's live part: the running cluster's scheduler timing, and a
// trace submitted to it as sleep jobs, read back through sacct.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "policies/pool/job_trace.h"
#include "slurm/scheduler_timing.h"

namespace gpulaunch {

// bf_interval, the requeue hold and the borrowed tier's reclaim delay of the
// cluster slurmctld runs (`scontrol show config`, `scontrol -o show
// partition`); Slurm's defaults where it does not answer (and `answered`
// false).
struct ClusterTiming {
  SlurmSchedulerTiming timing;
  bool answered = false;
};
ClusterTiming ReadClusterTiming();

// When Slurm's backfill last ran a cycle that had pending jobs to look at
// (seconds since the epoch, sdiag's "Last cycle when"); -1: unknown. A cycle
// that finds no pending job ends before sdiag records it, although it still
// restarts the backfill timer.
double ReadLastBackfillEpoch();

// Waits until no job has been in the cluster's queue (any user's) for
// `quiet_s` seconds, giving up after `give_up_s`: whether it got there.
// Slurm's backfill, with no change for an interval after its last cycle,
// polls for one, so its next cycle comes at the first submission, as the
// simulator's does; background changes (job records purged after
// MinJobAge, node state) can keep its grid alive through the wait
// (docs/sim.md), so the quiet wait makes that likely, not certain.
bool WaitForQuietCluster(double quiet_s, double give_up_s);

struct ReplaySubmission {
  double time_scale = 1;  // trace seconds per wall second
  int gpus_per_host = 1;
  // The Slurm account of each team (by the trace's team number); empty: the
  // jobs name none (the user's default account).
  std::vector<std::string> accounts;
};

// Submits the trace's jobs at their (scaled) arrival times, waits until all
// have ended, and returns their sacct export (kSacctExportCommand's columns,
// times in UTC).
// Cancels what it submitted when it fails.
StatusOr<std::string> SubmitAndRecord(const std::vector<pool::TraceJob>& trace, const ReplaySubmission& how);

}  // namespace gpulaunch
