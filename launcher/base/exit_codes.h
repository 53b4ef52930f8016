// gpulaunch's exit codes (documented in docs/launch.md "Exit codes").
#pragma once

#include "common/status.h"

namespace gpulaunch {

inline constexpr int kExitOk = 0;
// Usage errors and bad input: nothing was started.
inline constexpr int kExitUsage = 2;
// The launcher or the engine failed (mpirun could not start any rank, a rank's
// exec shim refused its slot): the job itself never ran or was not trusted.
inline constexpr int kExitTimeout = 124;  // --timeout expired (as timeout(1))
inline constexpr int kExitLaunchFailure = 125;
// A rank's program could not be executed (permission) / was not found.
inline constexpr int kExitCannotExecute = 126;
inline constexpr int kExitNotFound = 127;

// Status of the job from the engine's wait status: the exit code of the first
// failing rank as the engine reports it, or 128+N for death by signal N.
// `any_rank_started` separates engine failures (no rank ever checked in)
// from job failures.
int JobExitCode(int engine_wait_status, bool any_rank_started);

// The one mapping from an expected failure to an exit code, for every
// subcommand: the user's to fix (bad input, a missing file, host or program, a
// request that can never fit, the environment not as required) exits 2;
// gpulaunch or the engine being broken or not able to now exits 125.
int ExitCodeFor(StatusCode code);

// Prints "gpulaunch: <message>" on stderr and returns ExitCodeFor(its code).
int Fail(const Status& status);

}  // namespace gpulaunch
