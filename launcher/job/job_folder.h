// The per-job folder ($TMPDIR/gpulaunch.XXXXXX, mode 0700: the control
// socket, the engine's rankfile or hostfile, the topology it reads), and the
// clean-up of those that an earlier gpulaunch could not remove (it was
// SIGKILLed, or its machine stopped): each folder records the pid and the
// start time of the gpulaunch that made it (a file "owner": "PID START\n",
// START being /proc/PID/stat's start time), and a launch removes the
// folders of this user whose gpulaunch is gone (no such pid, or a pid
// reused by another process). A folder whose owner lives, or that has no
// owner file yet (another launch is making it), is never touched.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include "common/status.h"

namespace gpulaunch {

// A process's start time (clock ticks since boot, /proc/PID/stat field 22),
// or nullopt when there is no such process.
std::optional<unsigned long long> ProcessStartTime(pid_t pid);

// Removes, under `tmp`, every gpulaunch.* folder of this user whose owner
// is gone; returns how many.
int RemoveStaleJobFolders(const std::filesystem::path& tmp);

// Removes the stale folders, then makes this launch's folder under `tmp` with
// its owner file.
StatusOr<std::filesystem::path> MakeJobFolder(const std::filesystem::path& tmp);

}  // namespace gpulaunch
