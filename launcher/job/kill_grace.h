// The kill grace of one launch: from a stop signal to SIGKILL, for the
// ranks and for what they leave behind (docs/launch.md, "What gpulaunch
// stops").
//
// Contract: `--kill-grace` (`asked_s`) is the user's word and is taken as
// given. Without it, the engine's default applies, and inside a Slurm
// allocation it is cut to fit the cluster's KillWait (slurm/kill_wait.h;
// one `scontrol show config`, about 10 ms on the test cluster, 5 s at most),
// saying so on stderr when it was cut: slurmstepd SIGKILLs the step KillWait
// after its SIGTERM (scancel, the time limit), and the stop sequence and the
// summary must end before that.
#pragma once

#include <optional>

namespace gpulaunch {

int LaunchKillGraceMs(std::optional<int> asked_s, int engine_default_s);

}  // namespace gpulaunch
