// Reclaim as Slurm times it (ReclaimTiming): a preempted job holds the GPUs
// its preemptor did not take until it is killed, and while a team's job
// waits for its victims the team's other jobs pick none. See scheduler.h.
#include "policies/pool/scheduler.h"

namespace gpulaunch::pool {

Status Scheduler::HoldUntilKill(const std::vector<Decision>& preempted, const Allocation& started, double now) {
  const double kill = config_.reclaim.KilledAt(now);
  if (kill <= now) return Status::Ok();
  for (const Decision& d : preempted) {
    if (d.kind != Decision::Kind::kPreempt) continue;
    Allocation rest;  // the victim's GPUs that the preemptor did not take
    for (const HostShare& s : d.allocation.shares) {
      uint64_t taken = 0;
      for (const HostShare& t : started.shares)
        if (t.host == s.host) taken = t.gpus;
      if (const uint64_t left = s.gpus & ~taken) rest.shares.push_back(HostShare{s.host, left});
    }
    if (rest.empty()) continue;
    GL_RETURN_IF_ERROR(pool_.Take(rest));
    held_.push_back(HeldUntilKill{d.job, rest, kill});
  }
  return Status::Ok();
}

Status Scheduler::ReleaseHeldUntil(double now) {
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->until > now) {
      ++it;
      continue;
    }
    GL_RETURN_IF_ERROR(pool_.Give(it->gpus));
    it = held_.erase(it);
    RunningChanged();
  }
  return Status::Ok();
}

void Scheduler::ReleaseHeld(int victim) {
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->victim != victim) {
      ++it;
      continue;
    }
    (void)pool_.Give(it->gpus);
    it = held_.erase(it);
  }
  RunningChanged();
}

bool Scheduler::ReclaimHeldBack(int team, double now) const {
  const ReclaimTiming& r = config_.reclaim;
  if (!r.passes() || !r.one_at_a_time || backfill_pass_) return false;
  // Reclaims decided in an earlier pass: jobs that wait together get their
  // victims in one pass (measured: two owner jobs waiting for a first one's
  // reclaim start together, one pass after it).
  for (const auto& [id, running] : running_)
    if (running.job.team == team && running.reclaim_until > now && running.start < now) return true;
  return false;
}

}  // namespace gpulaunch::pool
