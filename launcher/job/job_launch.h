// One launch of a planned job: the job directory, the control server, the
// engine (launcher/engine/engine.h) in the foreground with gpulaunch's watchdog, the
// teardown of anything left behind, the summary file and the root cause.
// launch_command.cc decides what to plan and whether to launch again
// (--on-failure); this file never sees the command line.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "launcher/engine/engine.h"
#include "launcher/job/job_summary.h"
#include "launcher/core/plan.h"

namespace gpulaunch {

// How one launch is watched and reported: everything besides the plan and the
// engine's own settings.
struct RunSettings {
  int restart = 0;                   // GPULAUNCH_RESTART_COUNT of this launch
  bool tag = false;                  // label output lines by rank (when the engine does not)
  std::optional<int> timeout_s;      // the job's wall-clock limit
  std::optional<int> kill_grace_s;   // stop signal -> SIGKILL; unset: the engine's default
  int startup_timeout_s = 0;         // every rank checks in within this; 0: not watched
  int stall_timeout_s = 0;           // no progress for this long is a stall; 0: not watched
  std::string summary_path;          // gpulaunch-summary.json; empty: none
  bool profile = false;              // step metrics and a run report
  // Hosts whose topology the plan took from the cache, with the fingerprint
  // each must still show before any rank runs (control_server.h, HostCheck).
  std::map<std::string, std::string> cached_fingerprints;
  std::string profile_dir;           // where the metrics files go
};

struct LaunchOutcome {
  int exit_code = 0;
  StopReason stop = StopReason::kNone;
  std::optional<RootCause> cause;
  // Hosts to leave out of a restart: the blamed rank's and those of ranks
  // that vanished.
  std::set<std::string> failed_hosts;
  // A failure of the job itself, after it started (not a usage error, a
  // refusal, an engine that never started it, or a stop the user asked for).
  bool restartable = false;
  // Cached hosts that no longer matched their fingerprint: no rank ran, and
  // the job is to be planned again on a fresh discovery of them.
  std::set<std::string> changed_hosts;
};

LaunchOutcome LaunchPlannedJob(const LaunchPlan& plan, const Engine& engine, const EngineSettings& engine_settings,
                               const RunSettings& settings);

}  // namespace gpulaunch
