#include "policies/pool/sim_measures.h"

#include <algorithm>
#include <numeric>

#include "common/stats.h"

namespace gpulaunch::pool {

void GuaranteeWatch::Observe(const Scheduler& scheduler, double now, double grace_s, int& violations) {
  const QuotaBook& q = scheduler.quotas();
  if (!q.enabled()) return;
  bool someone_borrows = false;
  for (int t = 0; t < q.teams(); ++t) someone_borrows = someone_borrows || q.used(t) > q.quota(t).nominal;
  for (int t = 0; t < q.teams(); ++t) {
    bool wants = false;
    for (const PoolJob& job : scheduler.queue())
      wants = wants || (job.team == t && q.used(t) + job.gpus <= q.quota(t).guarantee);
    auto it = owed_since_.find(t);
    if (wants && someone_borrows) {
      if (it == owed_since_.end()) {
        owed_since_[t] = now;
      } else if (it->second >= 0 && now - it->second > grace_s + 60) {
        ++violations;
        it->second = -1;  // counted; the episode goes on until it is over
      }
    } else if (it != owed_since_.end()) {
      owed_since_.erase(it);
    }
  }
}

Status SummarizeOutcomes(const std::map<int, JobOutcome>& outcomes, const std::vector<PoolJob>& queue, double first,
                         SimReport& report) {
  std::vector<double> jct, wait;
  double hosts_ratio = 0, leaves_ratio = 0, last_end = first;
  for (const auto& [id, o] : outcomes) {
    report.outcomes.push_back(o);
    if (o.timed_out) continue;
    if (o.end < 0) {
      bool queued = false;
      for (const PoolJob& q : queue) queued = queued || q.id == id;
      if (!queued) return Internal("job " + std::to_string(id) + " never finished: the simulation lost it");
      // Still waiting when nothing else will happen: it can never fit (a
      // host it needs is gone, or its quota can never allow it).
      ++report.never_started;
      continue;
    }
    jct.push_back(o.end - o.submit);
    wait.push_back(o.start - o.submit);
    hosts_ratio += static_cast<double>(o.hosts) / std::max(1, o.min_hosts);
    leaves_ratio += static_cast<double>(o.leaves) / std::max(1, o.min_leaves);
    report.jobs_over_min_leaves += o.leaves > o.min_leaves ? 1 : 0;
    report.gpu_hours_lost += o.gpu_seconds_lost / 3600;
    last_end = std::max(last_end, o.end);
  }
  const double n = std::max<size_t>(1, jct.size());
  report.avg_jct_s = std::accumulate(jct.begin(), jct.end(), 0.0) / n;
  report.p95_jct_s = Quantile(jct, 0.95);
  report.avg_wait_s = std::accumulate(wait.begin(), wait.end(), 0.0) / n;
  report.p95_wait_s = Quantile(wait, 0.95);
  report.max_wait_s = wait.empty() ? 0 : *std::max_element(wait.begin(), wait.end());
  report.avg_hosts_over_min = hosts_ratio / n;
  report.avg_leaves_over_min = leaves_ratio / n;
  report.makespan_s = last_end - first;  // passes for a reservation's end may come later
  return Status::Ok();
}

}  // namespace gpulaunch::pool
