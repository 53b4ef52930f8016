// An independent audit of the scheduler's hard rules, run by the simulator
// after every scheduling pass: it looks only at what is running where, never
// at how the scheduler decided, so a rule broken by any code path is caught.
// Each count is of distinct jobs (or job pairs), not of passes.
//   gpus_held_twice        a GPU in two running jobs' allocations
//   user_class_conflicts   a user's jobs of two priority classes on one host
//   constraint_breaks      a job on hosts that fail its template: GPU memory,
//                          link speed, one leaf switch, or spread over N leaves
//   reservation_intrusions another team's job placed (started or moved) on a
//                          reserved host during the reservation's window
//   unhealthy_placements   a job started or moved onto a host that is not
//                          healthy (suspect or bad) at that moment
//   quota_breaks           a team holding more than its nominal quota plus its
//                          borrow limit, or a quota book that disagrees with
//                          the running jobs (counted per team)
#pragma once

#include <map>
#include <set>
#include <utility>

#include "policies/pool/scheduler.h"

namespace gpulaunch::pool {

struct RuleCounts {
  int gpus_held_twice = 0;
  int user_class_conflicts = 0;
  int constraint_breaks = 0;
  int reservation_intrusions = 0;
  int quota_breaks = 0;
  int unhealthy_placements = 0;
  int total() const {
    return gpus_held_twice + user_class_conflicts + constraint_breaks + reservation_intrusions + quota_breaks +
           unhealthy_placements;
  }
};

class RuleAudit {
 public:
  void Check(const Scheduler& scheduler, double now) {
    Check(scheduler.pool(), scheduler.running(), scheduler.reservations(), scheduler.quotas(), now);
  }
  void Check(const GpuPool& pool, const std::map<int, RunningJob>& running,
             const std::vector<PoolReservation>& reservations, const QuotaBook& quotas, double now);
  // A decision of the pass just taken, against the hosts' health in it.
  void CheckPlacement(const Decision& d, const GpuPool& pool);
  const RuleCounts& counts() const { return counts_; }

 private:
  RuleCounts counts_;
  std::set<int> twice_, broken_, intruded_, over_quota_teams_, unhealthy_;
  std::set<std::pair<int, int>> conflicts_;
};

}  // namespace gpulaunch::pool
