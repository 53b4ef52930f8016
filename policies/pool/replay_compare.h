// How close a simulation came to what a real scheduler did with the same
// jobs (`gpulaunch sim --replay`): per job the difference between the start
// the simulator gave it and the one it had, and the jobs' completion times.
// Also two of the real scheduler's runs of the same jobs against each other
// (`--against`): how far the scheduler is from itself, the floor under any
// simulator's difference.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "policies/pool/simulator.h"

namespace gpulaunch::pool {

// One job as the real scheduler ran it, in seconds from the first
// submission (the trace's clock). start < 0: it never started.
struct ObservedRun {
  int id = 0;                 // the trace job's id
  std::string name;           // how the scheduler named it (Slurm's job id)
  double submit = 0, start = -1, end = -1;
  bool requeued = false;      // preempted and started again (its start is still its first one)
  bool backfilled = false;    // the real scheduler's backfill started it (its first run)
};

// In a comparison of two real runs, "simulated" is the second run throughout.
struct ReplayJobDiff {
  int id = 0;
  std::string name;           // the scheduler's name (both runs': "first/second")
  double observed_start = 0, simulated_start = 0;
  double start_diff = 0;      // simulated - observed
  std::string reason;         // why, where it can be told; empty otherwise
};

struct ReplayComparison {
  std::string observed_label = "observed", simulated_label = "simulated";  // the two sides, as printed
  int jobs = 0;               // observed
  int compared = 0;           // started in both
  double mean_abs_start_diff = 0, max_abs_start_diff = 0;
  int within_1s = 0, within_3s = 0;
  double avg_jct_observed = 0, avg_jct_simulated = 0;  // over the compared jobs
  double jct_error = 0;       // simulated / observed - 1
  std::vector<ReplayJobDiff> worst;  // the largest |start_diff| first, at most `show` of them
  // Where the runs part: of the jobs more than 3 s apart, the one that
  // started first in either run (a preemption or a requeue hold then
  // carries the difference on to the jobs after it); none when all agree.
  std::optional<ReplayJobDiff> first_apart;
};

// `backfill_interval_s`: how often the real scheduler's backfill runs (Slurm's
// bf_interval), named in the reasons.
ReplayComparison CompareReplay(const std::vector<ObservedRun>& observed, const std::vector<JobOutcome>& simulated,
                               double backfill_interval_s, int show = 5);

// Two real runs of the same jobs, matched by trace id: `second` in the place
// of the simulation, the reasons saying which run backfilled or preempted.
ReplayComparison CompareRuns(const std::vector<ObservedRun>& first, const std::vector<ObservedRun>& second,
                             int show = 5);

std::string ReplayComparisonText(const ReplayComparison& c);

}  // namespace gpulaunch::pool
