// Proof that a process is one gpulaunch started: it descends from
// gpulaunch (or another given ancestor) in the process tree. A pid that a
// peer reports is only ever signalled through a pidfd taken while that proof
// held, so a process that ended and whose pid was reused is never hit.
#pragma once

#include <sys/types.h>

namespace gpulaunch {

// The parent of `pid` as /proc says (-1 when it is gone or unreadable).
pid_t ParentOf(pid_t pid);

// A pidfd (close-on-exec) for `pid` when that process exists and descends
// from `ancestor` (a child, grandchild, ...; never `ancestor` itself), else
// -1. The ancestry is read after the pidfd is opened and the process is
// checked to be alive after that, so the pidfd names the process whose
// ancestry was read.
int PidfdIfDescendant(pid_t pid, pid_t ancestor);

// pidfd_send_signal(2); false when the process is gone.
bool SignalPidfd(int pidfd, int sig);
// True once the process behind `pidfd` has ended.
bool PidfdEnded(int pidfd);

}  // namespace gpulaunch
