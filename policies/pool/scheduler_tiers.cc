// Scheduling as Slurm does it for the pool's partitions (slurm-config
// --policy, docs/slurm.md): each team's own partition holds its jobs within
// nominal and ranks above the shared borrowed partition; a job blocked for
// GPUs holds back only the later jobs of its own lane. See scheduler.h.
#include <cmath>
#include <map>

#include "policies/pool/scheduler.h"

namespace gpulaunch::pool {

Status Scheduler::ScheduleTiers(double now, bool may_backfill, std::vector<Decision>& out) {
  // Lanes: a team's own partition (its number), or the borrowed tier.
  constexpr int kBorrowedLane = -1;
  std::map<int, BackfillWindow> blocked;  // lane -> the window its first blocked job left
  for (const bool own_tier : {true, false}) {
    for (const PoolJob& job : Ordered(now)) {
      if (job.begin > now) continue;  // held after a requeue
      const QuotaVerdict v = config_.quotas.Check(job.team, job.gpus, job.tier_units);
      if (v == QuotaVerdict::kOverBorrowLimit) continue;  // the account's limit: waits, blocks no one
      if (own_tier != (v == QuotaVerdict::kWithinNominal)) continue;
      const int lane = own_tier ? job.team : kBorrowedLane;
      if (const auto it = blocked.find(lane); it != blocked.end()) {
        if (!may_backfill || std::isinf(it->second.shadow)) continue;
        if (auto d = TryBackfill(job, now, it->second)) out.push_back(*d);
        continue;
      }
      // Only a job within nominal may reclaim: a higher tier preempts a lower one.
      std::vector<Decision> started;
      if (own_tier) {
        GL_ASSIGN_OR_RETURN(started, StartInOrder(job, now));
      } else if (auto d = TryStart(job, now)) {
        started.push_back(*d);
      }
      if (!started.empty()) {
        out.insert(out.end(), started.begin(), started.end());
        continue;
      }
      BackfillWindow& window = blocked[lane];
      window.shadow = may_backfill ? ShadowTime(job, now, &window.extra) : 0;
    }
  }
  return Status::Ok();
}

}  // namespace gpulaunch::pool
