#include "policies/pool/scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpulaunch::pool {

double RunningJob::ExpectedEnd() const {
  return job.estimate > 0 ? start + job.estimate + delay : std::numeric_limits<double>::infinity();
}

Scheduler::Scheduler(GpuPool pool, SchedulerConfig config) : pool_(std::move(pool)), config_(std::move(config)) {
  config_.quotas.SetPoolGpus(pool_.total_gpus());
  last_backfill_ = config_.backfill_last_pass_s;
}

void Scheduler::Submit(const PoolJob& job) { queue_.push_back(job); }

Status Scheduler::SetEstimate(int job, double estimate) {
  for (PoolJob& q : queue_) {
    if (q.id != job) continue;
    q.estimate = estimate;
    return Status::Ok();
  }
  // Requeued and started again in the same pass (elsewhere).
  auto it = running_.find(job);
  if (it == running_.end()) return NotFound("job " + std::to_string(job) + " is neither queued nor running");
  it->second.job.estimate = estimate;
  RunningChanged();
  return Status::Ok();
}

Status Scheduler::Finish(int job) {
  auto it = running_.find(job);
  if (it == running_.end()) return NotFound("job " + std::to_string(job) + " is not running");
  GL_RETURN_IF_ERROR(pool_.Give(it->second.allocation));
  config_.quotas.Remove(it->second.job.team, it->second.job.gpus, it->second.borrowed, it->second.job.tier_units);
  running_.erase(it);
  RunningChanged();
  return Status::Ok();
}

Status Scheduler::Withdraw(int job) {
  if (std::erase_if(queue_, [&](const PoolJob& q) { return q.id == job; }) == 0) {
    return NotFound("job " + std::to_string(job) + " is not queued");
  }
  return Status::Ok();
}

const char* QueueOrderName(QueueOrder o) {
  switch (o) {
    case QueueOrder::kFifo: return "fifo";
    case QueueOrder::kPriorityAging: return "priority-aging";
    case QueueOrder::kShortestFirst: return "shortest-first";
    case QueueOrder::kLeastAttained: return "least-attained";
    case QueueOrder::kSlurmMultifactor: return "slurm-multifactor";
  }
  return "?";
}

int Scheduler::ServiceLevel(double gpu_s) const {
  const auto& bounds = config_.service_levels_gpu_s;
  return static_cast<int>(std::upper_bound(bounds.begin(), bounds.end(), gpu_s) - bounds.begin());
}

// Higher first. Priority classes always come first: a class is worth more
// than any size, service or age term (each stays below 1e6).
double Scheduler::EffectivePriority(const PoolJob& j, double now) const {
  // Time waited: since its submission, less the time it ran (earlier runs,
  // and for a running job the current one: RunningPriority).
  const double waited = std::max(0.0, now - j.submit - j.attained_gpu_s / std::max(1, j.gpus));
  const double cls = 1e6 * j.priority;
  switch (config_.order) {
    case QueueOrder::kFifo:
      return 0;  // submit order only, whatever the class
    case QueueOrder::kPriorityAging: {
      const bool known = j.estimate > 0 && (config_.uninformative_limit_s <= 0 || j.limit <= 0 ||
                                            j.limit < config_.uninformative_limit_s);
      const double run = known ? j.estimate : std::max(config_.unknown_run_s, 2 * j.attained_gpu_s / j.gpus);
      const double amount = j.gpus * std::max(1.0, run);
      const double size =
          config_.size_reference > 0 ? std::max(0.0, std::floor(std::log2(config_.size_reference / amount))) : 0;
      return j.priority + size + std::floor(waited / config_.aging_s);
    }
    case QueueOrder::kShortestFirst:
      return cls - std::min(1e5, j.gpus * j.estimate / 3600);  // GPU-hours; no estimate: as the shortest
    case QueueOrder::kLeastAttained:
      return cls - ServiceLevel(j.attained_gpu_s);
    case QueueOrder::kSlurmMultifactor: {
      const SlurmPriorityWeights& w = config_.slurm;
      return cls + w.age_weight * std::min(1.0, waited / w.max_age_s) +
             w.size_weight * j.gpus / std::max(1, pool_.total_gpus());
    }
  }
  return cls;
}

double Scheduler::NextServiceLevelChange(double now) const {
  double next = std::numeric_limits<double>::infinity();
  if (config_.order != QueueOrder::kLeastAttained) return next;
  for (const auto& [id, r] : running_) {
    const double attained = r.job.attained_gpu_s + r.job.gpus * (now - r.start);
    const int level = ServiceLevel(attained);
    if (level >= static_cast<int>(config_.service_levels_gpu_s.size())) continue;
    const double bound = config_.service_levels_gpu_s[static_cast<size_t>(level)];
    next = std::min(next, now + (bound - attained) / r.job.gpus);
  }
  return next;
}


std::vector<PoolJob> Scheduler::Ordered(double now) const {
  std::vector<std::pair<double, const PoolJob*>> keyed;
  keyed.reserve(queue_.size());
  for (const PoolJob& j : queue_) keyed.emplace_back(EffectivePriority(j, now), &j);
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    if (a.second->submit != b.second->submit) return a.second->submit < b.second->submit;
    return a.second->id < b.second->id;
  });
  std::vector<PoolJob> q;
  q.reserve(keyed.size());
  for (const auto& [priority, job] : keyed) q.push_back(*job);
  return q;
}

Status Scheduler::Commit(const PoolJob& job, const Allocation& a, bool borrowed, double now) {
  GL_RETURN_IF_ERROR(pool_.Take(a));
  config_.quotas.Add(job.team, job.gpus, borrowed, job.tier_units);
  running_[job.id] = RunningJob{job, a, now, borrowed};
  RunningChanged();
  std::erase_if(queue_, [&](const PoolJob& q) { return q.id == job.id; });
  return Status::Ok();
}

const std::vector<double>& Scheduler::BusyUntil() const {
  if (busy_until_.size() != pool_.hosts().size()) {
    busy_until_.assign(pool_.hosts().size(), -std::numeric_limits<double>::infinity());
    for (const auto& [id, r] : running_) {
      for (const HostShare& s : r.allocation.shares)
        busy_until_[static_cast<size_t>(s.host)] = std::max(busy_until_[static_cast<size_t>(s.host)], r.ExpectedEnd());
    }
  }
  return busy_until_;
}

GangConstraints Scheduler::ConstraintsFor(const PoolJob& job, double now) const {
  GangConstraints c;
  c.min_leaves = job.min_leaves;
  c.one_leaf = job.one_leaf;
  if (job.min_gpu_memory_gib > 0 || job.min_link_gbps > 0) {
    c.avoid.assign(pool_.hosts().size(), false);
    for (size_t h = 0; h < pool_.hosts().size(); ++h) {
      const PoolHost& host = pool_.hosts()[h];
      c.avoid[h] = host.gpu_memory_gib < job.min_gpu_memory_gib || host.link_gbps < job.min_link_gbps;
    }
  }
  for (const PoolReservation& r : reservations_) {
    if (now >= r.end) continue;
    const bool owner_inside = job.team == r.team && now >= r.start;
    const bool done_before = job.estimate > 0 && now + job.estimate <= r.start;
    if (owner_inside || done_before) continue;
    if (c.avoid.empty()) c.avoid.assign(pool_.hosts().size(), false);
    for (int h : r.hosts) c.avoid[static_cast<size_t>(h)] = true;
  }
  for (int h = 0; h < static_cast<int>(pool_.hosts().size()); ++h) {
    if (pool_.cpu_free(h)) continue;  // (PoolHost::cpus)
    if (c.avoid.empty()) c.avoid.assign(pool_.hosts().size(), false);
    c.avoid[static_cast<size_t>(h)] = true;
  }
  if (job.user >= 0) {
    for (const auto& [id, r] : running_) {
      if (r.job.user != job.user || r.job.priority == job.priority) continue;
      if (c.avoid.empty()) c.avoid.assign(pool_.hosts().size(), false);
      for (const HostShare& s : r.allocation.shares) c.avoid[static_cast<size_t>(s.host)] = true;
    }
  }
  if (job.estimate > 0 && config_.style == PlacementStyle::kTopology && config_.align_ends) {
    c.ends_at = now + job.estimate;
    c.now = now;
    c.host_busy_until = &BusyUntil();
  }
  auto mark = [&](const std::vector<int>& hosts, std::vector<bool>& out) {
    if (hosts.empty()) return;
    out.assign(pool_.hosts().size(), false);
    for (int h : hosts)
      if (h >= 0 && h < static_cast<int>(pool_.hosts().size())) out[static_cast<size_t>(h)] = true;
  };
  mark(job.data_hosts, c.preferred);
  if (job.dataset >= 0 && data_caches_ && job.dataset < static_cast<int>(data_caches_->size())) {
    mark((*data_caches_)[static_cast<size_t>(job.dataset)], c.cached);
  }
  return c;
}

std::optional<Decision> Scheduler::TryStart(const PoolJob& job, double now) {
  const QuotaVerdict v = config_.quotas.Check(job.team, job.gpus, job.tier_units);
  if (v != QuotaVerdict::kWithinNominal && v != QuotaVerdict::kBorrowed) return std::nullopt;
  auto a = PlaceGang(pool_, job.gpus, config_.style, ConstraintsFor(job, now));
  if (!a) return std::nullopt;
  const bool borrowed = v == QuotaVerdict::kBorrowed;
  if (!Commit(job, *a, borrowed, now).ok()) return std::nullopt;
  Decision d;
  d.job = job.id;
  d.allocation = *a;
  d.borrowed = borrowed;
  return d;
}

double Scheduler::ShadowTime(const PoolJob& head, double now, int* extra) const {
  std::vector<std::pair<double, int>> ends;
  for (const auto& [id, r] : running_) ends.emplace_back(r.ExpectedEnd(), r.job.gpus);
  std::sort(ends.begin(), ends.end());
  int free = pool_.free_gpus();
  for (const auto& [end, gpus] : ends) {
    if (free >= head.gpus) break;
    free += gpus;
    if (free >= head.gpus) {
      *extra = free - head.gpus;
      return std::max(end, now);
    }
  }
  // Enough GPUs are free already (the head is blocked by their shape, not
  // their number): what it leaves over may be used now.
  if (free >= head.gpus) {
    *extra = free - head.gpus;
    return now;
  }
  *extra = 0;
  return std::numeric_limits<double>::infinity();
}

double Scheduler::NextBackfillPass(double now) const {
  const double every = config_.backfill_interval_s;
  if (!config_.backfill || every <= 0 || queue_.empty()) return std::numeric_limits<double>::infinity();
  return std::max(now, last_backfill_ + every);
}

StatusOr<std::vector<Decision>> Scheduler::Schedule(double now) {
  GL_RETURN_IF_ERROR(ReleaseHeldUntil(now));
  std::vector<Decision> out = ExpireOverdue(now);
  const double every = config_.backfill_interval_s;
  const bool may_backfill = config_.backfill && (every <= 0 || now >= last_backfill_ + every - 1e-6);
  if (may_backfill) last_backfill_ = now;
  backfill_pass_ = may_backfill;
  if (config_.slurm_tiers && config_.quotas.enabled()) {
    GL_RETURN_IF_ERROR(ScheduleTiers(now, may_backfill, out));
    if (config_.preempt) GL_RETURN_IF_ERROR(ReclaimNominalQuotas(now, out));
    return out;
  }
  bool blocked = false;
  BackfillWindow window;
  for (const PoolJob& job : Ordered(now)) {
    if (job.begin > now) continue;  // held after a requeue: blocks no one
    if (blocked) {
      if (auto d = TryBackfill(job, now, window)) out.push_back(*d);
      continue;
    }
    GL_ASSIGN_OR_RETURN(std::vector<Decision> started, StartInOrder(job, now));
    if (!started.empty()) {
      out.insert(out.end(), started.begin(), started.end());
      continue;
    }
    if (config_.skip_blocked) continue;
    blocked = true;
    if (!may_backfill) break;
    window.shadow = ShadowTime(job, now, &window.extra);
    if (std::isinf(window.shadow)) break;  // its start cannot be predicted: nothing may jump ahead of it
  }
  if (config_.preempt && config_.quotas.enabled()) GL_RETURN_IF_ERROR(ReclaimNominalQuotas(now, out));
  return out;
}

std::vector<Decision> Scheduler::ExpireOverdue(double now) {
  std::vector<Decision> out;
  std::erase_if(queue_, [&](const PoolJob& j) {
    if (j.max_wait_s <= 0 || now - j.submit < j.max_wait_s) return false;
    Decision d;
    d.kind = Decision::Kind::kExpire;
    d.job = j.id;
    out.push_back(d);
    return true;
  });
  return out;
}

StatusOr<std::vector<Decision>> Scheduler::StartInOrder(const PoolJob& job, double now) {
  if (auto d = TryStart(job, now)) return std::vector<Decision>{*d};
  if (config_.defragment) {
    GL_ASSIGN_OR_RETURN(std::vector<Decision> m, TryDefragment(job, now));
    if (!m.empty()) return m;
  }
  if (config_.preempt_by_service) {
    GL_ASSIGN_OR_RETURN(std::vector<Decision> p, TryPreemptByService(job, now));
    if (!p.empty()) return p;
  }
  if (config_.preempt) return TryPreempt(job, now);
  return std::vector<Decision>{};
}

std::optional<Decision> Scheduler::TryBackfill(const PoolJob& job, double now, BackfillWindow& window) {
  // A job within its team's guarantee is owed its GPUs: the first blocked
  // job's reservation does not hold it back.
  if (config_.quotas.enabled() &&
      config_.quotas.used(job.team) + job.gpus <= config_.quotas.quota(job.team).guarantee) {
    return TryStart(job, now);
  }
  if (job.estimate <= 0) return std::nullopt;
  const bool done_before = now + job.estimate <= window.shadow;
  if (!done_before && job.gpus > window.extra) return std::nullopt;
  auto d = TryStart(job, now);
  if (!d) return std::nullopt;
  d->backfilled = true;
  if (!done_before) window.extra -= job.gpus;
  return d;
}

// Reclaim for every job still waiting within its team's nominal quota, not
// only the first one: a team owed its quota must not wait behind a
// borrowing team's job at the head of the queue.
Status Scheduler::ReclaimNominalQuotas(double now, std::vector<Decision>& out) {
  for (const PoolJob& job : Ordered(now)) {
    if (job.begin > now) continue;
    if (config_.quotas.Check(job.team, job.gpus, job.tier_units) != QuotaVerdict::kWithinNominal) continue;
    if (PlaceGang(pool_, job.gpus, config_.style, ConstraintsFor(job, now))) continue;  // it fits: backfill's rules decide
    GL_ASSIGN_OR_RETURN(std::vector<Decision> p, TryPreempt(job, now));
    out.insert(out.end(), p.begin(), p.end());
  }
  return Status::Ok();
}

std::vector<WaitReason> Scheduler::Waiting(double now) const {
  std::vector<WaitReason> out;
  int largest_host = 0, whole_hosts = 0;
  for (int h = 0; h < static_cast<int>(pool_.hosts().size()); ++h) {
    if (!pool_.usable(h)) continue;
    largest_host = std::max(largest_host, pool_.free_on(h));
    whole_hosts += pool_.free_on(h) == pool_.hosts()[h].gpus ? 1 : 0;
  }
  const int per = pool_.hosts().empty() ? 0 : pool_.hosts().front().gpus;
  int first = -1;
  for (const PoolJob& job : Ordered(now)) {
    WaitReason w;
    w.job = job.id;
    const QuotaVerdict v = config_.quotas.Check(job.team, job.gpus, job.tier_units);
    if (job.begin > now) {
      w.constraint = "hold";
      w.detail = "requeued after a preemption: held until t=" + std::to_string(static_cast<long long>(job.begin)) +
                 " s (Slurm's BeginTime, the credential lifetime)";
      out.push_back(w);
      continue;
    }
    if (v != QuotaVerdict::kWithinNominal && v != QuotaVerdict::kBorrowed) {
      const TeamQuota& q = config_.quotas.quota(job.team);
      w.constraint = "quota";
      w.detail = "team " + q.team + " holds " + std::to_string(config_.quotas.used(job.team)) + " GPUs of nominal " +
                 std::to_string(q.nominal) + " (borrow limit " + std::to_string(q.borrow_limit) + "); " +
                 std::to_string(job.gpus) + " more would be " + QuotaVerdictName(v);
    } else if (!PlaceGang(pool_, job.gpus, config_.style, ConstraintsFor(job, now))) {
      w.constraint = "placement";
      w.detail = "needs " + std::to_string(job.gpus) + " GPUs " +
                 (job.gpus <= per ? std::string("on one host")
                                  : "on " + std::to_string(job.gpus / per) + " whole hosts" +
                                        (job.gpus % per ? " and " + std::to_string(job.gpus % per) + " more" : "")) +
                 "; " + std::to_string(pool_.free_gpus()) + " free in the pool, at most " +
                 std::to_string(largest_host) + " on one host, " + std::to_string(whole_hosts) + " whole hosts free" +
                 (job.min_leaves > 1 ? ", spread over " + std::to_string(job.min_leaves) + " leaf switches" : "") +
                 (job.user >= 0 ? "; not beside this user's jobs of another priority class" : "") +
                 (reservations_.empty() ? "" : "; reserved hosts excluded unless it ends before their window");
    } else {
      w.constraint = "queue";
      w.detail = first >= 0 ? "behind job " + std::to_string(first) + ", which comes first in the queue order"
                            : "starts at the next scheduling pass";
    }
    if (first < 0) first = job.id;
    out.push_back(w);
  }
  return out;
}

}  // namespace gpulaunch::pool
