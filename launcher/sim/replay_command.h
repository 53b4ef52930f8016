// `gpulaunch sim --replay`: the simulator checked against a real Slurm.
//
//   gpulaunch sim --replay --trace FILE --cluster SPEC [--time-scale X] [--save FILE]
//       submits the trace's jobs to the running cluster at their arrival
//       times (sleep jobs of their GPUs and duration, divided by X), waits for
//       them, reads what sacct recorded, and compares;
//   gpulaunch sim --replay --sacct FILE --cluster SPEC
//       the same from an existing export (an admin's own history:
//       slurm/sacct_export.h says how to make one).
// Both simulate the same jobs (their arrivals, GPUs and run times) on SPEC
// under --policy (default fifo-first-fit: measured closest to Slurm's FIFO
// with its 30 s backfill pass), with --reclaim-delay, --start-latency and
// --quota as for sim, and print
// policies/pool/replay_compare.h's report.
#pragma once

#include <string>
#include <vector>

namespace gpulaunch {

// Whether `args` ask for a replay (they hold --replay).
bool WantsReplay(const std::vector<std::string>& args);
int RunSimReplay(const std::vector<std::string>& args);

}  // namespace gpulaunch
