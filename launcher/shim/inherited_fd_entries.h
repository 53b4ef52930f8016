// Drops the kernel's cached /proc entries for descriptors this process
// inherited and no longer holds.
//
// Why: Open MPI's daemon (orted, or mpirun for its own host) lists
// /proc/self/fd in every child before the exec, to close what the child
// inherited. The kernel keeps a dentry for each entry listed, tied to the
// child's pid, until that pid is reaped; the daemon holds a few descriptors
// per rank it started, so the n-th rank of a host carries a few times n of
// them. At 512 ranks a host that is about 1,500 a rank and 3 million over the
// 2,048 ranks of docs/benchmarks.md, all freed in the teardown, when the
// daemons reap the ranks' shims at once: seconds of kernel time exactly when
// every rank must die within --kill-grace. Looking each name up again once
// its descriptor is closed drops the entry at once; the shim does it once its
// rank has run a second (SuperviseOptions::once_settled), so the work is
// spread over the job and a launch of short ranks never pays it.
#pragma once

#include <sys/types.h>

namespace gpulaunch {

// Looks up /proc/self/fd/N for every N that the parent process `parent` holds
// open now (a superset of what it held when it forked us, but for descriptors
// it closed since) and this process does not. Returns how many names were
// looked up; 0 when the parent's list cannot be read (another user's
// process). Costs about a microsecond a name and allocates nothing per name.
int ForgetInheritedFdEntries(pid_t parent);

}  // namespace gpulaunch
