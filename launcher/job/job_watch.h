// What gpulaunch watches while a job runs (RunJob's watchdog, about every
// 200 ms): the monitor's verdict (start-up, stalls, a failed rank), the
// teardown after the first failure (SIGTERM to every rank at once through
// the shims, SIGKILL a kill grace later, whatever the engine does
// meanwhile), when the job is over for certain, and the --profile files.
#pragma once

#include <chrono>
#include <optional>

#include "launcher/base/control_server.h"
#include "launcher/base/process.h"
#include "launcher/core/plan.h"
#include "launcher/job/job_launch.h"
#include "launcher/job/job_monitor.h"
#include "launcher/job/job_summary.h"
#include "launcher/job/run_report.h"

namespace gpulaunch {

class JobWatch {
 public:
  JobWatch(const LaunchPlan& plan, const RunSettings& o, ControlServer& control, const JobOutcome& job,
           int kill_grace_ms);

  // True to stop the job (the watchdog's contract).
  bool Poll();

  // Once the job is over for certain, how long the engine may stay idle
  // before it is stopped, and how (JobRunOptions::job_over); nullopt while
  // it is not.
  // - After a failure, once every rank has ended (or refused, or was lost):
  //   2 s, since Open MPI sleeps its kill grace twice even for ranks that are
  //   already gone; then SIGKILL (it would hear SIGTERM only after those sleeps). A rank on a host that lost a connection, still silent
  //   after the whole stop sequence (SIGTERM, SIGKILL, then a second for its
  //   report), vanished with its host: its own connection would be seen lost
  //   only kVanishedPeerSeconds after the stop signal gpulaunch wrote to it
  //   (unacknowledged data restarts TCP's clock), and waiting for that only
  //   delays the end.
  // - Once every rank has ended by itself (as of the latest Poll, which reads
  //   the records anyway): kEngineExitGrace. The engine has
  //   only its ranks' last output and its daemons' exit left; Open MPI
  //   4.1.4's mpirun sometimes never exits then (asleep in its event loop
  //   with every rank and daemon gone), and gpulaunch must not hang with it.
  //   Then SIGTERM first, which such an mpirun handles and cleans up after.
  std::optional<EngineLinger> Over() const;

  // The metrics files; `final` also prints the run report.
  void WriteProfile(bool final);

  const MonitorVerdict& verdict() const { return verdict_; }

 private:
  const RunSettings& o_;
  ControlServer& control_;
  const JobOutcome& job_;
  const std::chrono::milliseconds kill_grace_;
  const MonitorSettings monitor_;
  const size_t ranks_;
  MonitorVerdict verdict_;
  bool every_rank_ended_ = false;  // as of the latest Poll
  std::optional<ControlClock::time_point> teardown_since_;
  bool teardown_killed_ = false;
  RunProfile profile_;
  ControlClock::time_point profile_written_ = ControlClock::now();
};

}  // namespace gpulaunch
