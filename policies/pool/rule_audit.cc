#include "policies/pool/rule_audit.h"

#include <algorithm>

#include "policies/pool/gang_placement.h"

namespace gpulaunch::pool {

void RuleAudit::Check(const GpuPool& pool, const std::map<int, RunningJob>& running,
                      const std::vector<PoolReservation>& reservations, const QuotaBook& quotas, double now) {
  std::vector<uint64_t> held(pool.hosts().size(), 0);
  std::vector<std::vector<const RunningJob*>> on_host(pool.hosts().size());
  for (const auto& [id, r] : running) {
    bool bad = false;
    for (const HostShare& s : r.allocation.shares) {
      const size_t h = static_cast<size_t>(s.host);
      if (held[h] & s.gpus) twice_.insert(id);
      held[h] |= s.gpus;
      on_host[h].push_back(&r);
      const PoolHost& host = pool.hosts()[h];
      bad = bad || host.gpu_memory_gib < r.job.min_gpu_memory_gib || host.link_gbps < r.job.min_link_gbps;
    }
    const int leaves = LeavesOf(pool, r.allocation);
    bad = bad || (r.job.one_leaf && leaves > 1) || (r.job.min_leaves > 1 && leaves < r.job.min_leaves);
    if (bad) broken_.insert(id);
  }
  for (const auto& jobs : on_host) {
    for (size_t a = 0; a < jobs.size(); ++a)
      for (size_t b = a + 1; b < jobs.size(); ++b) {
        const PoolJob& x = jobs[a]->job;
        const PoolJob& y = jobs[b]->job;
        if (x.user >= 0 && x.user == y.user && x.priority != y.priority)
          conflicts_.insert({std::min(x.id, y.id), std::max(x.id, y.id)});
      }
  }
  for (const PoolReservation& res : reservations) {
    if (now < res.start || now >= res.end) continue;
    for (int h : res.hosts) {
      for (const RunningJob* r : on_host[static_cast<size_t>(h)]) {
        const double placed = std::max(r->start, r->moved_at);
        if (r->job.team != res.team && placed >= res.start) intruded_.insert(r->job.id);
      }
    }
  }
  if (quotas.enabled()) {
    std::vector<int> used(static_cast<size_t>(quotas.teams()), 0);
    for (const auto& [id, r] : running) {
      if (r.job.team >= 0 && r.job.team < quotas.teams()) used[static_cast<size_t>(r.job.team)] += r.allocation.gpus();
    }
    for (int t = 0; t < quotas.teams(); ++t) {
      const TeamQuota& q = quotas.quota(t);
      if (used[static_cast<size_t>(t)] > q.nominal + q.borrow_limit || used[static_cast<size_t>(t)] != quotas.used(t))
        over_quota_teams_.insert(t);
    }
  }
  counts_.gpus_held_twice = static_cast<int>(twice_.size());
  counts_.quota_breaks = static_cast<int>(over_quota_teams_.size());
  counts_.user_class_conflicts = static_cast<int>(conflicts_.size());
  counts_.constraint_breaks = static_cast<int>(broken_.size());
  counts_.reservation_intrusions = static_cast<int>(intruded_.size());
}

void RuleAudit::CheckPlacement(const Decision& d, const GpuPool& pool) {
  if (d.kind != Decision::Kind::kStart && d.kind != Decision::Kind::kMigrate) return;
  for (const HostShare& s : d.allocation.shares)
    if (!pool.usable(s.host)) unhealthy_.insert(d.job);
  counts_.unhealthy_placements = static_cast<int>(unhealthy_.size());
}

}  // namespace gpulaunch::pool
