// What a simulation measures beside the scheduler's decisions (simulator.h):
// the guarantee episodes after each pass, and the report's job figures from
// the jobs' outcomes at the end.
#pragma once

#include <map>
#include <vector>

#include "common/status.h"
#include "policies/pool/scheduler.h"
#include "policies/pool/simulator.h"

namespace gpulaunch::pool {

// A team that wants GPUs within its guarantee while other teams hold
// borrowed GPUs must get them within the grace period plus a minute (for
// the reclaim itself); each episode longer than that is one violation.
class GuaranteeWatch {
 public:
  // After a pass at `now`: adds the episodes that just ran over to `violations`.
  void Observe(const Scheduler& scheduler, double now, double grace_s, int& violations);

 private:
  std::map<int, double> owed_since_;  // team -> since when its guarantee is owed (-1: counted)
};

// The report's job figures (JCT and waits with their p95, hosts and leaves
// over the minimum, GPU-hours lost, makespan from `first`) from every job's
// outcome, appended to report.outcomes. A job that never ended is counted as
// never started when it is still in `queue` (it can never fit); otherwise the
// simulation lost it: an internal error.
Status SummarizeOutcomes(const std::map<int, JobOutcome>& outcomes, const std::vector<PoolJob>& queue, double first,
                         SimReport& report);

}  // namespace gpulaunch::pool
