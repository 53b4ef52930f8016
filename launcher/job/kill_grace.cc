#include "launcher/job/kill_grace.h"

#include <iostream>

#include "launcher/base/process.h"
#include "launcher/engine/engine.h"
#include "slurm/kill_wait.h"

namespace gpulaunch {
namespace {

// KillWait of the cluster this allocation runs on, or nullopt when
// scontrol does not answer.
std::optional<int> SlurmKillWaitSeconds() {
  const CapturedRun config = RunCaptured({"scontrol", "show", "config"}, EnvironmentWith({}), 5000);
  if (!config.Succeeded()) return std::nullopt;
  return ParseKillWaitSeconds(config.out);
}

}  // namespace

int LaunchKillGraceMs(std::optional<int> asked_s, int engine_default_s) {
  if (asked_s) return *asked_s * 1000;
  const int grace_ms = engine_default_s * 1000;
  if (!InSlurmAllocation()) return grace_ms;
  const std::optional<int> kill_wait = SlurmKillWaitSeconds();
  if (!kill_wait) return grace_ms;
  const int fitted = KillGraceWithinKillWait(grace_ms, *kill_wait);
  if (fitted < grace_ms) {
    std::cerr << "gpulaunch: note: Slurm's KillWait is " << *kill_wait << " s: the kill grace is " << fitted / 1000
              << " s instead of " << grace_ms / 1000 << " s, so that a stop ends before Slurm's SIGKILL\n";
  }
  return fitted;
}

}  // namespace gpulaunch
