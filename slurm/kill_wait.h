// Slurm's KillWait: how long slurmstepd waits between the SIGTERM it sends
// every process of a step (scancel, the time limit, a preemption) and its
// SIGKILL. gpulaunch's own stop sequence inside an allocation must end
// before it, or the batch step is killed mid-teardown and no summary is
// written (docs/launch.md, "Stopped by Slurm").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpulaunch {

// KillWait in seconds from `scontrol show config` ("KillWait = 30 sec");
// nullopt when the text does not say.
std::optional<int> ParseKillWaitSeconds(std::string_view scontrol_show_config);

// ProctrackType from the same text ("proctrack/cgroup"); "" when not said.
// Under proctrack/linuxproc Slurm finds a step's processes by parentage
// alone: a helper that escaped its rank (setsid, a double fork) and whose
// shim was SIGKILLed with the step is lost to it (docs/launch.md).
std::string ParseProctrackType(std::string_view scontrol_show_config);

// The kill grace (ms) that fits inside `kill_wait_s`: the grace must leave
// gpulaunch time after it to stop the engine and write its summary
// (kStopMarginS), and is at least 1 s; `wanted_ms` when it already fits.
inline constexpr int kStopMarginS = 2;
int KillGraceWithinKillWait(int wanted_ms, int kill_wait_s);

}  // namespace gpulaunch
