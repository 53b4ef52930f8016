// A deterministic discrete-event simulator of the pool: jobs of a trace
// arrive, the Scheduler (the same code that decides on a real pool) places
// them, they run for their duration and leave; preempted jobs go back to the
// queue and start over, or resume from their last checkpoint (SimJobModel). Events at one
// time are taken as: finishes, then arrivals, then one scheduling pass; a
// pass also happens when a running job's preemption grace ends, so reclaim
// is not delayed to the next arrival. Same inputs, same result, bit for bit
// (the only wall-clock figure is the decision latency).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "policies/pool/data_cache.h"
#include "policies/pool/job_trace.h"
#include "policies/pool/node_health.h"
#include "policies/pool/rule_audit.h"
#include "policies/pool/runtime_estimates.h"
#include "policies/pool/scheduler.h"

namespace gpulaunch::pool {

struct JobOutcome {
  int id = 0, gpus = 0, team = 0;
  double submit = 0, start = -1, end = -1;  // start: the first one
  int hosts = 0, leaves = 0, min_hosts = 0, min_leaves = 0;  // of its last placement
  int preemptions = 0, migrations = 0, lost_to_failures = 0;
  double gpu_seconds_lost = 0;  // work redone after preemptions and failures, and migration costs
  bool timed_out = false;       // left the queue unstarted (SimSetup::max_wait_s); no end
  bool reached_limit = false;   // its last run was ended by its time limit (user estimates)
};

struct SimReport {
  std::string policy;
  int jobs = 0, dropped = 0;               // dropped: needs more GPUs than the pool has
  int timed_out = 0;                       // left the queue unstarted; not in the JCT and wait figures
  int never_started = 0;                   // still queued at the end: they can never fit (e.g. hosts gone)
  double avg_jct_s = 0, p95_jct_s = 0, avg_wait_s = 0, p95_wait_s = 0, max_wait_s = 0;
  double utilization = 0;                  // busy GPU time / (GPUs x makespan)
  double stranded_gpus = 0;                // time average of free GPUs while a job that fits by count cannot be placed
  double makespan_s = 0;
  double avg_hosts_over_min = 0, avg_leaves_over_min = 0;  // per multi-... job: spanned / minimum
  int jobs_over_min_leaves = 0;
  std::string estimates = "perfect";       // what the policy knew of run times (EstimateModeName)
  int reached_limit = 0;                   // jobs whose time limit ended their run (Slurm kills them there)
  double gpu_hours_cut = 0;                // work those jobs had left when killed (0 when the limit is their run time)
  int preemptions = 0;                     // of which checkpointed: suspended with their work kept
  int checkpointed_preemptions = 0;
  int migrations = 0;                      // jobs moved to make room (defragmentation)
  int jobs_lost_to_failures = 0;           // runs ended by a bad host (requeued)
  double gpu_hours_lost = 0;               // preempted work redone, plus migration costs
  // Episodes in which a team wanted GPUs within its guarantee while others
  // held borrowed GPUs, and did not get them within the grace period + 60 s.
  int guarantee_violations = 0;
  RuleCounts rules;                        // hard rules broken (rule_audit.h): all 0 unless a bug
  double decision_us_avg = 0, decision_us_max = 0;  // per scheduling pass, wall clock
  int passes = 0;
  long cache_hits = 0, cache_misses = 0;   // per host a job started on (SimSetup::locality)
  double staging_hours = 0;                // run time spent copying datasets to hosts (all runs)
  std::vector<std::pair<double, int>> busy;  // (time, busy GPUs) after each pass
  std::vector<JobOutcome> outcomes;
  // SimSetup::explain_job's story: one line per change in why it waits,
  // where it went and why, and how its runs ended.
  std::vector<std::string> explain;
};

// Whole hosts held for a team during a window (Scheduler::Reserve).
struct SimReservation {
  std::string name;
  int team = 0;
  int hosts = 1;
  double start = 0, end = 0;  // s, on the trace's clock
};

// A host that stops sending heartbeats at `at` (it fails, or is cut off),
// and sends them again from `back` (negative: never).
struct SimFailure {
  int host = 0;
  double at = 0, back = -1;  // s, on the trace's clock
};

// What the simulation adds to the trace and the policy (when a preemptor's
// victims are gone is the policy's SchedulerConfig::reclaim): how preempted jobs
// resume, from the start (checkpoint_interval_s 0) or from their last
// checkpoint, written every checkpoint_interval_s of work (a resumed job
// first spends the config's migration_cost_s restarting); queue timeouts;
// reservations; and host failures. Every live host heartbeats at each
// scheduling pass; node_health.h's rules (suspect, bad, leases) decide the
// rest, through Scheduler::ApplyHealth, and jobs lost with a bad host go
// back to the queue like preempted ones.
// The run-time estimates the policy sees (runtime_estimates.h): perfect,
// the jobs' time limits (user: every job needs one in TraceJob::limit, and a
// run reaching its limit ends there; its limit counts run time, so it
// survives a suspension but restarts with a requeue), or none (estimate 0).
// With locality.cache_gb > 0, jobs with a dataset copy it to every host of
// theirs that lacks it before they run (data_cache.h).
struct SimSetup {
  EstimateMode estimates = EstimateMode::kPerfect;
  // Slurm's tier billing (slurm/tier_billing.h): a job counts against its
  // team's nominal as max(GPUs, CPUs x this); 0: its GPUs.
  double tier_cpu_billing = 0;
  DataLocality locality;
  int datasets = 0;       // datasets the jobs name (TraceJob::dataset below this)
  int explain_job = -1;   // a job to tell the story of (SimReport::explain); -1: none
  double checkpoint_interval_s = 0;
  double max_wait_s = 0;  // every job's queue timeout (PoolJob::max_wait_s); 0: none
  // Seconds between a start decision and the job running, GPUs held (a real
  // scheduler's latency: Slurm's pass, the node's prolog). 0: at once.
  double start_latency_s = 0;
  std::vector<SimReservation> reservations;
  std::vector<SimFailure> failures;
  HealthConfig health;
};

StatusOr<SimReport> Simulate(const GpuPool& pool, const std::vector<TraceJob>& jobs, const SchedulerConfig& config,
                             const std::string& policy_name, const SimSetup& setup = {});

// The policies `gpulaunch sim` compares. Each uses only what the run's
// estimate mode gives it (PoolJob::estimate and limit; 0 for none):
//   topology           gpulaunch's: jobs rank by size, GPUs x expected run
//                      time, in levels of powers of two (a size not known, or
//                      a limit at the site's maximum, from the service the job
//                      had, twice its run so far and at least an hour, as
//                      under LAS); a level per week waited; jobs that fit
//                      start in that order, one that does not holds no one
//                      back, and one ranked a level above running jobs that
//                      ran 5 minutes suspends them (checkpointed) for its
//                      room; end-aligned topology placement, defragmentation,
//                      quota reclaim
//   fifo-first-fit     FIFO, first fit, no backfill
//   best-fit           FIFO with EASY backfill, best fit, no topology
//   tiresias           discretised 2D-LAS (Tiresias, NSDI '19): levels by
//                      attained GPU time (below 1 GPU-hour, below 10, above),
//                      FIFO within a level, jobs that fit start (greedy),
//                      a job suspends running jobs of a later level, placement
//                      consolidated under one switch; no durations used
//   sjf-oracle         smallest GPU time first, backfill (run it with perfect
//                      estimates: the oracle bound of a non-preemptive policy)
//   slurm-multifactor  Slurm's priority/multifactor (SlurmPriorityWeights),
//                      EASY backfill on the mode's estimates, topology/tree
//                      placement (one switch when one has room)
StatusOr<SchedulerConfig> PolicyConfig(const std::string& name, const QuotaBook& quotas);
// Every name PolicyConfig knows, in report order.
const std::vector<std::string>& PolicyNames();

}  // namespace gpulaunch::pool
