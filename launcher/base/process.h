// Child processes from argv arrays (never a shell string).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

// A child's environment is built with these (EnvironmentWith and the
// engine-only settings): every caller that starts one needs them.
#include "launcher/base/child_environment.h"

namespace gpulaunch {

struct CapturedRun {
  int wait_status = 0;
  bool timed_out = false;
  std::string out;
  std::string err;
  // Ended by itself, in time, with exit code 0.
  bool Succeeded() const;
};

// Runs argv to completion (killed after `timeout_ms`), capturing its output.
CapturedRun RunCaptured(const std::vector<std::string>& argv, const std::vector<std::string>& env, int timeout_ms);

// How an engine that outlives its job is stopped (JobRunOptions::job_over).
struct EngineLinger {
  std::chrono::milliseconds idle{0};  // how long it may stay quiet first
  // SIGTERM, and SIGKILL 2 s later only if it is still there: for an engine
  // hung after a job that ended by itself (Open MPI 4.1's mpirun then still
  // handles SIGTERM, exits and removes its session directory, which SIGKILL
  // leaves behind). Otherwise SIGKILL at once: in a failure's teardown
  // mpirun sleeps through its own kill sequence and would hear SIGTERM only
  // after it, which delays the end.
  bool term_first = false;
};

struct JobRunOptions {
  std::vector<std::string> argv;
  std::vector<std::string> env;
  // --tag: the engine's tagged streams are reassembled into whole lines per
  // rank, "[rank@host]: ...", one write per line (see tag_demux.h).
  bool tag = false;
  std::function<std::string(int rank)> host_of_rank;
  // Called when the user insists (second SIGINT/SIGTERM) and again if the
  // engine has not exited shortly after: kill whatever ranks are known.
  std::function<void()> force_kill;
  // Called with SIGINT/SIGTERM/SIGHUP sent to gpulaunch (not from the
  // terminal), before the engine hears of it: signal the local ranks at once.
  // Open MPI would first send SIGCONT and sleep its kill grace, and cannot
  // forward these signals as they are.
  std::function<void(int sig)> signal_local_ranks;
  // For an engine that does not pass SIGINT/SIGTERM/SIGHUP on as they are
  // (srun ends its step with SIGKILL on SIGTERM and SIGHUP, and only prints
  // status on one SIGINT): delivers the signal to every rank another way and
  // returns true, or returns false (no rank known yet) to fall back to the
  // engine. When it delivered, the engine is left alone; ranks still running
  // `kill_grace_ms` later get SIGKILL through it, then the engine too.
  std::function<bool(int sig)> signal_all_ranks;
  // Called once, right after the first SIGINT/SIGTERM/SIGHUP from outside
  // was passed on (not for --timeout or the watchdog): the caller writes
  // what must exist even if a SIGKILL follows (Slurm's, KillWait later).
  std::function<void(int sig)> on_first_stop;
  int kill_grace_ms = 10000;
  // --timeout: after this long the job is stopped as if by SIGTERM (0: never);
  // what still runs 2 x kill_grace_ms + 3 s later is killed.
  int timeout_ms = 0;
  // Called about every 200 ms while the engine runs; returning true stops
  // the job the way timeout_ms does (--startup-timeout, --stall-timeout).
  std::function<bool()> watchdog;
  // Once the job is over for certain (every rank has ended), how long the
  // engine may go on without doing anything (no CPU, no bytes read or
  // written, gpulaunch's output not blocked: engine_activity.h) before it is
  // stopped instead of waited for, and how; nullopt while the job is not
  // over. The job's exit code then comes from the ranks' reports (see
  // JobWatch::Over for why an engine outlives its job).
  std::function<std::optional<EngineLinger>()> job_over;
};

struct JobRunResult {
  int wait_status = 0;
  int user_signal = 0;  // first SIGINT/SIGTERM/SIGHUP received, 0 if none
  bool timed_out = false;  // stopped by timeout_ms
  bool stopped_by_watchdog = false;
  bool engine_killed_after_job = false;  // stopped by job_over (SIGTERM, then SIGKILL)
};

// Runs the engine in the foreground. SIGINT/SIGTERM/SIGHUP sent to gpulaunch
// go to the local ranks (signal_local_ranks) and to the engine, which stops
// every rank (remote ones get SIGTERM from their daemon); SIGUSR1/SIGUSR2 go
// to the engine, which forwards them to every rank. A signal from the
// terminal already reached the engine (it shares our process group) and is
// not sent twice (except with signal_all_ranks). A second SIGINT/SIGTERM
// kills the job. On return SIGINT, SIGTERM and SIGHUP are ignored (the job is
// over; the caller finishes its report), the other handlers restored.
// Should this process die without stopping the engine (SIGKILL, a crash),
// the engine gets SIGTERM (PR_SET_PDEATHSIG) and stops the job as for a
// user's SIGTERM, rather than running on with nobody to report to. The
// kernel ties that to the calling thread: call RunJob from one that lives
// as long as the job (gpulaunch's main thread).
JobRunResult RunJob(const JobRunOptions& options);

}  // namespace gpulaunch
