// Progress heartbeats for gpulaunch's --stall-timeout. A rank started by
// gpulaunch finds GPULAUNCH_HEARTBEAT_FD in its environment: a non-blocking
// pipe to its exec shim, which tells gpulaunch at most once per second that
// the rank made progress. gpulaunch declares a rank stalled when it has not
// heard from it for the stall timeout, and collects its stacks.
//
// The runtime reports progress itself after every completed MPI operation and
// every pipeline action; a job with long phases of its own (a big local
// computation, I/O) calls ReportProgress() there. Outside gpulaunch, or
// without the variable, it does nothing. Cost: one clock read per call, and
// one write() at most every 100 ms. Thread-safe.
#pragma once

namespace gpulaunch::rt {

void ReportProgress();

// Tells gpulaunch (through the shim) that MPI made this rank a world of its
// own where the environment says the engine started more: gpulaunch names
// the mismatch when every rank says so. Outside gpulaunch it does nothing.
void ReportMpiSingleton();

}  // namespace gpulaunch::rt
