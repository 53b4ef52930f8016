// Starting a rank's job process from the shim: vfork, the check-in, exec.
//
// Contracts:
// - The job process is started with vfork: the shim's address space is not
//   copied, and the shim resumes only once the job exec'd or could not.
//   Between vfork and exec the job process makes system calls only (no
//   allocation, no stdio, no setenv): everything it needs (the environment,
//   the descriptor numbers, room for the check-in line) is prepared first.
// - The job execs only after its check-in was sent, so a rank that runs has
//   checked in. The job process sends the line itself, its own pid written in.
//   When the line cannot be sent, the job still runs (as a rank that cannot
//   reach gpulaunch does) and `StartedJob::check_in_failed` says so.
// - The job gets its stderr, its heartbeat pipe and, with --profile, its
//   metrics pipe at descriptor numbers as low as they would be without the
//   shim (a shell script can redirect only 0 to 9), named in its
//   environment as GPULAUNCH_HEARTBEAT_FD and GPULAUNCH_METRICS_FD. Nothing
//   else of the shim's reaches it: the shim's descriptors are close-on-exec.
// - Signals: every signal is blocked across vfork, and the job resets the
//   handlers in `reset_signals` to their defaults before unblocking, so a
//   signal that came meanwhile reaches the job as it would without the shim.
// - With `own_group` the job leads its own process group. It dies with the
//   shim (PR_SET_PDEATHSIG, SIGKILL) and lets the shim trace it (stacks).
// - A program that cannot be executed: the job's stderr says why, and the job
//   process exits 127 when it was not found, 126 otherwise (as a shell does).
#pragma once

#include <sys/types.h>

#include <span>
#include <string>

#include "launcher/base/control_auth.h"

namespace gpulaunch {

// A line the job process sends before it execs, its pid written between the
// two parts in decimal (CheckinLineAround, control_protocol.h, without the
// newline), then tagged with the connection's session (control_auth.h)
// under a sequence number StartJob takes before vfork.
struct CheckInLine {
  int fd = -1;  // a connected, authenticated socket; -1: nothing to send
  ControlSession* session = nullptr;
  std::string before_pid, after_pid;
};

// The write ends of the pipes the job gets; StartJob closes them in the shim.
struct JobPipeEnds {
  int err = -1;      // becomes the job's stderr
  int beat = -1;     // GPULAUNCH_HEARTBEAT_FD
  int metrics = -1;  // GPULAUNCH_METRICS_FD; -1: none
};

struct JobStartOptions {
  int rank = 0;  // for messages
  bool own_group = true;
  const CheckInLine* check_in = nullptr;  // nullptr: nothing to send
  std::span<const int> reset_signals;     // the shim's handlers, not inherited by the job
};

struct StartedJob {
  pid_t pid = -1;                // -1: could not fork (said on stderr)
  bool check_in_failed = false;  // the line was not sent; the job runs all the same
};

// Starts argv[0] with argv (null-terminated) in the environment of this
// process, and returns once it exec'd or failed to.
StartedJob StartJob(char** argv, const JobStartOptions& options, const JobPipeEnds& ends);

}  // namespace gpulaunch
