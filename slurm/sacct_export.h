// Jobs as `sacct -P` exports them (`gpulaunch sim --replay`): what the real
// scheduler did with each job, for the simulator to be checked against.
//
//   sacct -P -X -D -o JobIDRaw,Submit,Start,End,State,AllocTRES,Timelimit,Account,Flags [-S ... -E ...]
//
// The header line names the columns (any order; others are ignored). With -D
// a requeued job has a row per run: it is one job here, started at its first
// start, ended at its last end, and its run time is its last run's.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

struct SacctJob {
  std::string id;                  // JobIDRaw
  double submit = 0;               // seconds since the epoch, as UTC (only differences are used)
  double start = -1, end = -1;     // -1: Unknown / None
  double last_run_s = 0;           // its last run's end - start
  int gpus = 0;                    // gres/gpu= of AllocTRES (ReqTRES when not allocated)
  int cpus = 0;                    // cpu= of AllocTRES; 0: not given
  double limit_s = 0;              // Timelimit; 0: none given, UNLIMITED or Partition_Limit
  int runs = 1;
  std::string state;               // of its last run
  std::string account;             // Account; empty when the export has no such column
  // Its first run was started by Slurm's backfill (Flags SchedBackfill; the
  // main scheduler's starts say SchedMain, those at submission SchedSubmit).
  bool backfilled = false;
  int line = 0;
  // The End of each of its runs recorded PREEMPTED: when slurmctld killed
  // it (with a GraceTime, at a time-limit pass), seconds since the epoch.
  std::vector<double> preempted_ends;
};

inline constexpr char kSacctExportCommand[] = "sacct -P -X -D -o JobIDRaw,Submit,Start,End,State,AllocTRES,Timelimit,Account,Flags";

StatusOr<std::vector<SacctJob>> ParseSacctExport(const std::string& text, const std::string& origin);

}  // namespace gpulaunch
