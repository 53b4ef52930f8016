// The shim runs the job as its child and stays beside it until it ends, so
// that gpulaunch learns how every rank ended (exit code or signal), the last
// lines of its stderr, its progress heartbeats and, on request, its stacks.
//
// Contracts:
// - The job process starts as job_start.h says: it dies with the shim, and
//   it runs only after its check-in was sent. A check-in it could not send
//   closes the control connection: the rank runs without reporting, as one
//   that could not reach gpulaunch at all.
// - SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGCONT sent to the
//   shim are passed to the child as the same signal when `forward_signals`.
//   Then the child runs in its own process group: Open MPI signals the
//   process group of what it started (kill(-pgid)), and the child must get
//   each signal once, from the shim (an engine's SIGKILL to the shim reaches
//   the child through PR_SET_PDEATHSIG). Under srun, slurmstepd signals
//   every process of the step itself, so the shim does not forward, the
//   child stays in the shim's group, and the shim only survives the signals.
// - The child's stderr passes through a pipe, unchanged, as it arrives.
// - When the control connection closes while the child runs (gpulaunch was
//   killed, or its host became unreachable), nobody would stop the rank any
//   more: the shim sends it SIGTERM, and SIGKILL 10 s later.
// - The exit report says `stopped` when a stop signal reached the child
//   through the shim first (SIGINT, SIGTERM, SIGHUP or SIGQUIT caught by the
//   shim, gpulaunch's `signal` request, or the stop above): gpulaunch then
//   knows the rank ended because it was told to (control_protocol.h).
// - GPULAUNCH_HEARTBEAT_FD in the child's environment is a non-blocking pipe:
//   each byte written there is progress (runtime/heartbeat.h); the shim
//   passes it on at most once per second. A job may close its end: the
//   shim then stops watching it, and sleeps until something else happens.
// - With GPULAUNCH_PROFILE=1, GPULAUNCH_METRICS_FD is a blocking pipe: every
//   line written there (a step record, common/step_metrics.h) goes to
//   gpulaunch whole, as a `metric` message; what is left in the pipe when the
//   child exits is sent before the exit report.
// - Nothing the rank started outlives it (the shim is their subreaper,
//   descendants.h): when the main process ends, every other descendant gets
//   SIGTERM and, kill_grace later, SIGKILL; a stop signal reaching the rank
//   reaches them at once, with SIGKILL due at three quarters of the grace,
//   before an engine's own SIGKILL to the shim. Each is reported to
//   gpulaunch (`helper`) before the exit report, and the shim waits for them
//   (the stderr pipe they may hold closes with them).
// - With `wait_for_every_start`, a rank whose main process ended on its own
//   with code 0 keeps its shim, the process the engine waits for, until
//   gpulaunch says that every rank has started (`started`,
//   control_protocol.h), and no longer than `start_wait_limit`; a stop signal
//   (caught, or gpulaunch's `signal` request) or the loss of gpulaunch ends
//   the wait at once. The exit report goes out before the wait. This is for
//   Open MPI 4.1: its daemon reports a rank that ended before the daemon had
//   started every rank of its host twice, and mpirun, counting that rank's
//   end twice, takes the job for over while ranks still run: it kills them,
//   and may fail on its way down (exit 1).
// - `once_settled`, when set, runs once in the shim when the child has run
//   for `settle_after` and no stop has reached it: work that must not slow
//   the start of every rank (a launch of short ranks never pays it) and is
//   pointless once the rank is stopping.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "launcher/shim/control_client.h"
#include "launcher/shim/job_start.h"

namespace gpulaunch {

struct SuperviseOptions {
  int rank = 0;
  bool forward_signals = true;
  ControlClient* control = nullptr;        // may be unconnected
  CheckInLine check_in;
  std::function<void()> once_settled;
  std::chrono::milliseconds settle_after{1000};
  // From SIGTERM to SIGKILL for the processes the rank leaves behind
  // (descendants.h): gpulaunch's kill grace, GPULAUNCH_KILL_GRACE_MS.
  std::chrono::milliseconds kill_grace{2000};
  bool wait_for_every_start = false;
  std::chrono::milliseconds start_wait_limit{60000};
  long* wakeups = nullptr;                   // when set, counts the supervision loop's turns (tests)
};

// Runs argv[0] with argv (null-terminated) and returns its wait status.
int SuperviseRank(char** argv, const SuperviseOptions& options);

// Ends this process the way `wait_status` says the child ended: the same
// exit code, or death by the same signal (without a second core dump).
[[noreturn]] void ExitLike(int wait_status);

}  // namespace gpulaunch
