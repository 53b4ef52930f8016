#include "policies/pool/scheduler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace gpulaunch::pool {

double RunningJob::ExpectedEnd() const {
  return job.estimate > 0 ? start + job.estimate + delay : std::numeric_limits<double>::infinity();
}

Scheduler::Scheduler(GpuPool pool, SchedulerConfig config) : pool_(std::move(pool)), config_(std::move(config)) {}

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
  busy_until_.clear();
  return Status::Ok();
}

Status Scheduler::Finish(int job) {
  auto it = running_.find(job);
  if (it == running_.end()) return NotFound("job " + std::to_string(job) + " is not running");
  GL_RETURN_IF_ERROR(pool_.Give(it->second.allocation));
  config_.quotas.Remove(it->second.job.team, it->second.job.gpus);
  running_.erase(it);
  busy_until_.clear();
  return Status::Ok();
}

double Scheduler::EffectivePriority(const PoolJob& j, double now) const {
  if (config_.order == QueueOrder::kFifo) return 0;
  const double amount = j.gpus * std::max(1.0, j.estimate);
  const double size =
      config_.size_reference > 0 ? std::max(0.0, std::floor(std::log2(config_.size_reference / amount))) : 0;
  return j.priority + size + std::floor(std::max(0.0, now - j.submit) / config_.aging_s);
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
  config_.quotas.Add(job.team, job.gpus);
  running_[job.id] = RunningJob{job, a, now, borrowed};
  busy_until_.clear();
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
  if (job.user >= 0) {
    for (const auto& [id, r] : running_) {
      if (r.job.user != job.user || r.job.priority == job.priority) continue;
      if (c.avoid.empty()) c.avoid.assign(pool_.hosts().size(), false);
      for (const HostShare& s : r.allocation.shares) c.avoid[static_cast<size_t>(s.host)] = true;
    }
  }
  if (job.estimate > 0 && config_.style == PlacementStyle::kTopology) {
    c.ends_at = now + job.estimate;
    c.now = now;
    c.host_busy_until = &BusyUntil();
  }
  if (!job.data_hosts.empty()) {
    c.preferred.assign(pool_.hosts().size(), false);
    for (int h : job.data_hosts)
      if (h >= 0 && h < static_cast<int>(pool_.hosts().size())) c.preferred[static_cast<size_t>(h)] = true;
  }
  return c;
}

std::optional<Decision> Scheduler::TryStart(const PoolJob& job, double now) {
  const QuotaVerdict v = config_.quotas.Check(job.team, job.gpus);
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

StatusOr<std::vector<Decision>> Scheduler::TryPreempt(const PoolJob& job, double now) {
  std::vector<Decision> out;
  const QuotaVerdict v = config_.quotas.Check(job.team, job.gpus);
  if (v != QuotaVerdict::kWithinNominal && v != QuotaVerdict::kBorrowed) return out;
  const bool reclaims = config_.quotas.enabled() && v == QuotaVerdict::kWithinNominal;
  // Victims of a lower class only: borrowed jobs of other teams (reclaim),
  // or jobs of a lower priority class. A borrowed job goes whole, even when
  // its team then holds less than its guarantee (part of it was within the
  // team's nominal): a gang cannot give back only its borrowed part, and a
  // guarantee that a borrower could block would be no guarantee. That team
  // is then owed its guarantee in turn.
  std::vector<const RunningJob*> candidates;
  for (const auto& [id, r] : running_) {
    if (now - r.start < config_.grace_s || now - r.moved_at < config_.grace_s) continue;
    const bool reclaim = reclaims && r.borrowed && r.job.team != job.team;
    const bool lower = r.job.priority < job.priority;
    if (reclaim || lower) candidates.push_back(&r);
  }
  if (candidates.empty()) return out;
  // Cheapest first: jobs whose team keeps its guarantee without them, then
  // by the GPU time their restart loses.
  auto below = [&](const RunningJob* r) {
    return config_.quotas.enabled() &&
           config_.quotas.used(r->job.team) - r->job.gpus < config_.quotas.quota(r->job.team).guarantee;
  };
  auto cost = [&](const RunningJob* r) { return r->job.gpus * (now - r->start); };
  std::stable_sort(candidates.begin(), candidates.end(), [&](const RunningJob* a, const RunningJob* b) {
    if (below(a) != below(b)) return !below(a);
    return cost(a) != cost(b) ? cost(a) < cost(b) : a->job.id < b->job.id;
  });
  GpuPool trial = pool_;
  std::vector<const RunningJob*> victims;
  for (const RunningJob* c : candidates) {
    GL_RETURN_IF_ERROR(trial.Give(c->allocation));
    victims.push_back(c);
    if (PlaceGang(trial, job.gpus, config_.style, ConstraintsFor(job, now))) break;
  }
  if (!PlaceGang(trial, job.gpus, config_.style, ConstraintsFor(job, now))) return out;
  // Keep only the victims it really needs, dearest first.
  for (size_t i = victims.size(); i-- > 0;) {
    GL_RETURN_IF_ERROR(trial.Take(victims[i]->allocation));
    if (PlaceGang(trial, job.gpus, config_.style, ConstraintsFor(job, now))) {
      victims.erase(victims.begin() + static_cast<long>(i));
    } else {
      GL_RETURN_IF_ERROR(trial.Give(victims[i]->allocation));
    }
  }
  for (const RunningJob* victim : victims) {
    Decision d;
    d.kind = Decision::Kind::kPreempt;
    d.job = victim->job.id;
    d.allocation = victim->allocation;
    d.preempted_by = job.id;
    PoolJob requeue = victim->job;
    requeue.max_wait_s = 0;  // it ran: it waits to run again however long it takes
    GL_RETURN_IF_ERROR(Finish(victim->job.id));
    queue_.push_back(requeue);  // it keeps its submit time, so its age
    out.push_back(d);
  }
  auto started = TryStart(job, now);
  if (!started) return Internal("job " + std::to_string(job.id) + " did not fit after its victims were preempted");
  out.push_back(*started);
  return out;
}

StatusOr<std::vector<Decision>> Scheduler::TryDefragment(const PoolJob& job, double now) {
  std::vector<Decision> out;
  const QuotaVerdict v = config_.quotas.Check(job.team, job.gpus);
  if (v != QuotaVerdict::kWithinNominal && v != QuotaVerdict::kBorrowed) return out;
  if (pool_.free_gpus() < job.gpus) return out;  // blocked by number, not by shape
  const int per = pool_.hosts().front().gpus;
  const int n_hosts = static_cast<int>(pool_.hosts().size());
  const GangConstraints wanted = ConstraintsFor(job, now);
  auto allowed = [&](int h) { return pool_.usable(h) && (wanted.avoid.empty() || !wanted.avoid[static_cast<size_t>(h)]); };
  // Jobs on each host that may move: single-host, smaller than a host, not
  // moved within the grace period.
  std::vector<std::vector<const RunningJob*>> on_host(static_cast<size_t>(n_hosts));
  std::vector<int> pinned(static_cast<size_t>(n_hosts), 0);  // GPUs held by jobs that may not move
  for (const auto& [id, r] : running_) {
    const bool movable = r.allocation.hosts() == 1 && r.job.gpus < per && now - r.moved_at >= config_.grace_s;
    for (const HostShare& share : r.allocation.shares) {
      if (movable) on_host[static_cast<size_t>(share.host)].push_back(&r);
      else pinned[static_cast<size_t>(share.host)] += std::popcount(share.gpus);
    }
  }
  GpuPool trial = pool_;
  std::vector<bool> cleared(static_cast<size_t>(n_hosts), false);
  std::map<int, Allocation> moved;  // job -> its new GPUs in `trial`
  // Each round frees one host's GPUs enough for one whole host of the job
  // (or, for the rest of it, its remainder), moving the fewest GPUs.
  const int rounds = MinHosts(pool_, job.gpus);
  for (int round = 0; round < rounds && !PlaceGang(trial, job.gpus, config_.style, wanted); ++round) {
    int whole = 0;
    for (int h = 0; h < n_hosts; ++h) whole += allowed(h) && trial.free_on(h) == per ? 1 : 0;
    const int need = job.gpus <= per ? job.gpus : (whole < job.gpus / per ? per : job.gpus % per);
    if (need == 0) break;
    std::vector<std::pair<int, int>> candidates;  // (GPUs to move, host)
    for (int h = 0; h < n_hosts; ++h) {
      if (!allowed(h) || cleared[static_cast<size_t>(h)] || trial.free_on(h) >= need) continue;
      if (per - pinned[static_cast<size_t>(h)] < need) continue;
      candidates.emplace_back(need - trial.free_on(h), h);
    }
    // The few cheapest hosts only: a pass must stay well under a
    // millisecond at 1,024 hosts.
    constexpr size_t kTries = 8;
    std::sort(candidates.begin(), candidates.end());
    if (candidates.size() > kTries) candidates.resize(kTries);
    bool done = false;
    for (const auto& [to_move, h] : candidates) {
      // Smallest jobs first, until enough is free on h.
      std::vector<const RunningJob*> jobs = on_host[static_cast<size_t>(h)];
      std::erase_if(jobs, [&](const RunningJob* r) { return moved.count(r->job.id) > 0; });
      std::stable_sort(jobs.begin(), jobs.end(),
                       [](const RunningJob* a, const RunningJob* b) { return a->job.gpus < b->job.gpus; });
      GpuPool attempt = trial;
      std::map<int, Allocation> attempt_moves;
      int freed = 0;
      bool placed_all = true;
      for (const RunningJob* r : jobs) {
        if (freed >= to_move) break;
        GangConstraints c = ConstraintsFor(r->job, now);
        if (c.avoid.empty()) c.avoid.assign(static_cast<size_t>(n_hosts), false);
        // Only into other partly used hosts: never onto a whole free host
        // (that would fragment it) nor back onto a host being cleared.
        for (int x = 0; x < n_hosts; ++x) {
          if (x == h || cleared[static_cast<size_t>(x)] || attempt.free_on(x) == per) c.avoid[static_cast<size_t>(x)] = true;
        }
        auto to = PlaceGang(attempt, r->job.gpus, config_.style, c);
        if (!to) {
          placed_all = false;
          break;
        }
        GL_RETURN_IF_ERROR(attempt.Give(r->allocation));
        GL_RETURN_IF_ERROR(attempt.Take(*to));
        attempt_moves[r->job.id] = *to;
        freed += r->job.gpus;
      }
      if (!placed_all || freed < to_move) continue;
      trial = std::move(attempt);
      moved.insert(attempt_moves.begin(), attempt_moves.end());
      cleared[static_cast<size_t>(h)] = true;
      done = true;
      break;
    }
    if (!done) break;
  }
  if (moved.empty() || !PlaceGang(trial, job.gpus, config_.style, wanted)) return out;
  // Commit: every move at once (old GPUs back first, then the new ones).
  for (const auto& [id, to] : moved) GL_RETURN_IF_ERROR(pool_.Give(running_.at(id).allocation));
  for (const auto& [id, to] : moved) {
    GL_RETURN_IF_ERROR(pool_.Take(to));
    RunningJob& r = running_.at(id);
    Decision d;
    d.kind = Decision::Kind::kMigrate;
    d.job = id;
    d.previous = r.allocation;
    d.allocation = to;
    d.preempted_by = job.id;
    r.allocation = to;
    r.delay += config_.migration_cost_s;
    busy_until_.clear();
    r.moved_at = now;
    out.push_back(d);
  }
  auto started = TryStart(job, now);
  if (!started) return Internal("job " + std::to_string(job.id) + " did not fit after migrations made room for it");
  out.push_back(*started);
  return out;
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

StatusOr<std::vector<Decision>> Scheduler::Schedule(double now) {
  std::vector<Decision> out;
  std::erase_if(queue_, [&](const PoolJob& j) {
    if (j.max_wait_s <= 0 || now - j.submit < j.max_wait_s) return false;
    Decision d;
    d.kind = Decision::Kind::kExpire;
    d.job = j.id;
    out.push_back(d);
    return true;
  });
  bool blocked = false;
  double shadow = 0;
  int extra = 0;
  for (const PoolJob& job : Ordered(now)) {
    if (!blocked) {
      if (auto d = TryStart(job, now)) {
        out.push_back(*d);
        continue;
      }
      if (config_.defragment) {
        GL_ASSIGN_OR_RETURN(std::vector<Decision> m, TryDefragment(job, now));
        if (!m.empty()) {
          out.insert(out.end(), m.begin(), m.end());
          continue;
        }
      }
      if (config_.preempt) {
        GL_ASSIGN_OR_RETURN(std::vector<Decision> p, TryPreempt(job, now));
        if (!p.empty()) {
          out.insert(out.end(), p.begin(), p.end());
          continue;
        }
      }
      blocked = true;
      if (!config_.backfill) break;
      shadow = ShadowTime(job, now, &extra);
      if (std::isinf(shadow)) break;  // its start cannot be predicted: nothing may jump ahead of it
      continue;
    }
    // A job within its team's guarantee is owed its GPUs: the first blocked
    // job's reservation does not hold it back.
    if (config_.quotas.enabled() &&
        config_.quotas.used(job.team) + job.gpus <= config_.quotas.quota(job.team).guarantee) {
      if (auto d = TryStart(job, now)) out.push_back(*d);
      continue;
    }
    if (job.estimate <= 0) continue;
    const bool done_before = now + job.estimate <= shadow;
    if (!done_before && job.gpus > extra) continue;
    if (auto d = TryStart(job, now)) {
      d->backfilled = true;
      if (!done_before) extra -= job.gpus;
      out.push_back(*d);
    }
  }
  // Reclaim for every job still waiting within its team's nominal quota, not
  // only the first one: a team owed its quota must not wait behind a
  // borrowing team's job at the head of the queue.
  if (config_.preempt && config_.quotas.enabled()) {
    for (const PoolJob& job : Ordered(now)) {
      if (config_.quotas.Check(job.team, job.gpus) != QuotaVerdict::kWithinNominal) continue;
      if (PlaceGang(pool_, job.gpus, config_.style, ConstraintsFor(job, now))) continue;  // it fits: backfill's rules decide
      GL_ASSIGN_OR_RETURN(std::vector<Decision> p, TryPreempt(job, now));
      out.insert(out.end(), p.begin(), p.end());
    }
  }
  return out;
}

StatusOr<PoolReservation> Scheduler::Reserve(const std::string& name, int team, int hosts, double start,
                                              double end) {
  if (hosts < 1 || hosts > static_cast<int>(pool_.hosts().size()) || !(end > start)) {
    return InvalidArgument("reservation " + name + ": needs 1 to " + std::to_string(pool_.hosts().size()) +
                           " hosts and an end after its start");
  }
  // The shape on an empty pool of the same hosts, minus hosts other
  // reservations hold over an overlapping window.
  std::vector<PoolHost> all = pool_.hosts();
  GpuPool empty(all);
  GangConstraints c;
  c.avoid.assign(all.size(), false);
  for (const PoolReservation& other : reservations_) {
    if (other.start < end && start < other.end)
      for (int h : other.hosts) c.avoid[static_cast<size_t>(h)] = true;
  }
  const int per = all.front().gpus;
  auto a = PlaceGang(empty, hosts * per, PlacementStyle::kTopology, c);
  if (!a) {
    return Infeasible("reservation " + name + ": " + std::to_string(hosts) +
                      " whole hosts are not free of other reservations in that window");
  }
  PoolReservation r{name, team, {}, start, end};
  for (const HostShare& s : a->shares) r.hosts.push_back(s.host);
  reservations_.push_back(r);
  return r;
}

StatusOr<std::vector<int>> Scheduler::ApplyHealth(const NodeHealth& health, double now) {
  std::vector<bool> bad(pool_.hosts().size(), false);
  for (int h = 0; h < static_cast<int>(pool_.hosts().size()); ++h) {
    const NodeState state = health.State(h, now);
    pool_.set_usable(h, state == NodeState::kHealthy);
    bad[static_cast<size_t>(h)] = state == NodeState::kBad;
  }
  // Expired leases: those GPUs are free again (the host's old work is gone).
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (now >= it->expiry) {
      GL_RETURN_IF_ERROR(pool_.Give(Allocation{{it->share}}));
      it = leases_.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<int> lost;
  for (const auto& [id, r] : running_) {
    for (const HostShare& s : r.allocation.shares)
      if (bad[static_cast<size_t>(s.host)]) {
        lost.push_back(id);
        break;
      }
  }
  for (int id : lost) {
    const RunningJob r = running_.at(id);
    Allocation healthy_part;
    for (const HostShare& s : r.allocation.shares) {
      if (bad[static_cast<size_t>(s.host)]) {
        leases_.push_back(Lease{s, health.LeaseExpiry(s.host)});
      } else {
        healthy_part.shares.push_back(s);
      }
    }
    GL_RETURN_IF_ERROR(pool_.Give(healthy_part));
    config_.quotas.Remove(r.job.team, r.job.gpus);
    running_.erase(id);
    busy_until_.clear();
  }
  return lost;
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
    const QuotaVerdict v = config_.quotas.Check(job.team, job.gpus);
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
