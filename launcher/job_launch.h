// One launch of a planned job: the job directory, the control server, the
// engine (mpirun or srun) in the foreground with gpulaunch's watchdog, the
// teardown of anything left behind, the summary file and the root cause.
// main.cc decides what to plan and whether to launch again (--on-failure).
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>

#include "launcher/job_summary.h"
#include "launcher/options.h"
#include "launcher/plan.h"

namespace gpulaunch {

struct LaunchContext {
  const LaunchOptions* options = nullptr;
  bool use_srun = false;
  std::string layout;  // the resolved layout (dp×tp×pp) for the slot table
  int restart = 0;     // GPULAUNCH_RESTART_COUNT of this launch
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
};

LaunchOutcome LaunchPlannedJob(const LaunchPlan& plan, EngineSettings engine, const LaunchContext& context);

}  // namespace gpulaunch
