// The open-file limit (RLIMIT_NOFILE) of gpulaunch, of the engine it starts,
// and of the job.
//
// A job holds descriptors in two places on the launching host: gpulaunch's
// control server (a socket a rank) and the engine (mpirun keeps pipes and a
// PMIx socket for every rank it starts there). Many systems start processes
// with a soft limit of 1,024 under a far higher hard one (systemd's default),
// where Open MPI's mpirun cannot start 300 local ranks and hangs. So gpulaunch
// raises its soft limit, which the engine inherits, as far as the job needs
// and the hard limit allows, and each rank's shim puts the job's back to what
// it was (programs that use select() or close every descriptor up to the
// limit expect it): the environment variable kJobFileLimitEnv says how.
#pragma once

#include <sys/resource.h>

#include <string>

#include "common/status.h"

namespace gpulaunch {

// "RAISED ORIGINAL": gpulaunch raised the soft limit from ORIGINAL to RAISED.
inline constexpr const char* kJobFileLimitEnv = "GPULAUNCH_NOFILE";

// On other hosts the engine's daemons (Open MPI's orted, started over ssh)
// run under those hosts' own limits, so they start through the shim:
// `gpulaunch-shim --raise-open-files N DAEMON ARGS` raises the soft limit to
// N (failing with the limit and the fix when the hard one is lower), sets
// kJobFileLimitEnv for the ranks the daemon starts, and execs DAEMON.
inline constexpr const char* kRaiseOpenFilesFlag = "--raise-open-files";

// What an engine's own process holds besides its ranks' descriptors
// (Engine::OpenFilesPerLocalRank).
inline constexpr rlim_t kEngineOwnOpenFiles = 128;

struct FileLimitChange {
  rlim_t before = 0;  // the soft limit as it was
  rlim_t after = 0;   // as it is now (== before when nothing was raised)
};

// Raises this process's soft limit to `need` when it is lower (never past the
// hard limit). When even the hard limit is lower, fails (FailedPrecondition)
// with `what_needs_them` (what needs the descriptors, as a clause), the limit
// and the fix. "Unlimited" counts as enough.
StatusOr<FileLimitChange> RaiseOpenFileLimit(rlim_t need, const std::string& what_needs_them);

// kJobFileLimitEnv's value for a change, empty when nothing was raised.
std::string JobFileLimitSetting(const FileLimitChange& change);

// In a rank's shim, before the job starts: when kJobFileLimitEnv is set and
// the soft limit is still the one gpulaunch raised it to, puts back the one it
// had (a host whose own limit differs keeps its own); removes the variable.
void RestoreJobFileLimit();

// In a rank's shim: removes the launch agent gpulaunch gave Open MPI
// (OMPI_MCA_orte_launch_agent naming kRaiseOpenFilesFlag), which Open MPI
// passes on to the ranks on other hosts; a user's own agent stays.
void DropDaemonLaunchAgent();

}  // namespace gpulaunch
