// From what the engine and the ranks reported to what one launch says: its
// exit code and stop reason, the root cause, the hosts a restart leaves out,
// and the summary (docs/launch.md, "When a job fails"). The steps
// LaunchPlannedJob takes after its engine ended, in that order.
#pragma once

#include <cstddef>
#include <map>

#include "launcher/base/control_server.h"
#include "launcher/base/process.h"
#include "launcher/job/job_launch.h"
#include "launcher/job/job_monitor.h"
#include "launcher/job/job_summary.h"

namespace gpulaunch {

// The launch's exit code and stop reason from the engine's result and the
// watchdog's verdict, recorded in `job` for the summary.
LaunchOutcome StopOutcome(const JobRunResult& result, const MonitorVerdict& verdict, int checked_in,
                          const RunSettings& o, JobOutcome& job);

// Every one of the `world` ranks reported that it ended with code 0.
bool EveryRankSucceeded(const std::map<int, RankRecord>& records, size_t world);

// The root cause, the exit code it implies, the hosts to leave out of a
// restart, and whether a restart may help.
void Blame(const std::map<int, RankRecord>& records, int checked_in, JobOutcome& job, LaunchOutcome& out);

// gpulaunch-summary.json (0600: it holds the ranks' stderr tails), then the
// root-cause block on stderr.
void Report(const RunSettings& o, const JobOutcome& job, const std::map<int, RankRecord>& records,
            const LaunchOutcome& out);

}  // namespace gpulaunch
