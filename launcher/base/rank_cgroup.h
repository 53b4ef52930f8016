// A cgroup of the rank's own, so that nothing the rank started outlives a
// shim that is SIGKILLed. The subreaper (descendants.h) keeps every helper
// in the shim's tree while the shim lives; once the shim is gone (an
// engine's or Slurm's SIGKILL, OOM), its orphans reparent to init, where
// proctrack/linuxproc and every process-tree walk lose them. A cgroup is
// left only by a process allowed to write another cgroup's cgroup.procs:
// setsid, double forks, `env -i` and a changed argv do not leave it.
//
// Contracts:
// - ContainInOwnCgroup() creates `gpulaunch-shim.PID`, a child of the shim's
//   own cgroup in the cgroup v2 hierarchy, starts its watcher, and moves the
//   shim into it: from then on the rank and everything it starts are in it.
//   Call it before BecomeSubreaper and before starting anything else.
// - The watcher is outside that cgroup and outside the shim's process tree
//   (it is double-forked before the shim becomes a subreaper, and reparents
//   to init or to the subreaper above the shim), so a kill of the step's
//   process tree does not reach it. It reads a pipe whose only write end is
//   the shim's (close-on-exec: no rank or helper holds it). When the shim
//   dies, however (SIGKILL included), the pipe reads end-of-file: the
//   watcher writes 1 to cgroup.kill (the kernel kills every process in the
//   cgroup, those forked meanwhile included), waits for the cgroup to
//   empty (10 s at most), removes it and exits. After a normal end the
//   cgroup is already empty (the shim stopped every helper): the watcher
//   only removes it. It holds none of the shim's streams (its stdin, stdout
//   and stderr are /dev/null), so srun and the engine's I/O forwarding
//   never wait for it; it is named `gpulaunch-watch` in ps.
// - Nothing changes, and the reason comes back, where there is no cgroup v2
//   hierarchy, where the kernel lacks cgroup.kill (before Linux 5.14),
//   where this user may not create a cgroup there or move a process into it
//   (a hierarchy not delegated to the user; the step cgroups of Slurm's
//   proctrack/cgroup, which contain the step already), or where
//   GPULAUNCH_RANK_CGROUP=off: the rank then runs with the subreaper alone.
//   The reason is not an error: the caller may say it or not.
#pragma once

#include <string>

namespace gpulaunch {

struct CgroupContainment {
  bool contained = false;
  std::string why_not;  // when !contained
};

CgroupContainment ContainInOwnCgroup();

// "" when a shim of this user, started here as this process is, could
// contain its rank (a probe cgroup made and removed again); else why not.
// For `gpulaunch check`.
std::string WhyNoRankCgroup();

// The shim's cgroup v2 folder from /proc/self/cgroup and /proc/self/mountinfo
// ("" when there is no cgroup v2 hierarchy mounted here). Exposed for tests.
std::string OwnCgroup2Folder(const std::string& proc_self_cgroup, const std::string& proc_self_mountinfo);

}  // namespace gpulaunch
