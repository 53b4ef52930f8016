// What a rank writes to GPULAUNCH_HEARTBEAT_FD, the pipe its exec shim reads
// (runtime/heartbeat.h writes, launcher/shim/rank_supervisor.cc reads): any
// byte means progress, and one byte value means more.
#pragma once

namespace gpulaunch {

// The rank's MPI_Init gave it a world of 1 where its environment says the
// engine started more: it is an MPI singleton (the program links an MPI the
// engine does not start). The shim tells gpulaunch once.
inline constexpr char kHeartbeatSingletonByte = 'S';

}  // namespace gpulaunch
