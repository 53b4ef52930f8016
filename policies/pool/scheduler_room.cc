// The two ways the scheduler makes room for a job that does not fit:
// preemption (reclaim of borrowed GPUs, of lower priority classes, or, under
// 2D-LAS, suspension of jobs that attained more service) and defragmentation by migration. Both commit everything they decide, and
// start the job in the same decision. See scheduler.h for the rules.
#include <algorithm>
#include <bit>
#include <limits>
#include <map>

#include "policies/pool/scheduler.h"

namespace gpulaunch::pool {

StatusOr<std::vector<Decision>> Scheduler::TryPreempt(const PoolJob& job, double now) {
  std::vector<Decision> out;
  const QuotaVerdict v = config_.quotas.Check(job.team, job.gpus, job.tier_units);
  if (v != QuotaVerdict::kWithinNominal && v != QuotaVerdict::kBorrowed) return out;
  const bool reclaims = config_.quotas.enabled() && v == QuotaVerdict::kWithinNominal;
  if (!reclaims && LowestRunningClass() >= job.priority) return out;  // no one it may preempt
  if (ReclaimHeldBack(job.team, now)) return out;
  const RunningJobs candidates = PreemptionCandidates(job, reclaims, now);
  if (candidates.empty()) return out;
  GL_ASSIGN_OR_RETURN(auto victims, FewestVictims(job, candidates, now));
  if (!victims) return out;
  return PreemptFor(job, *victims, false, now);
}

StatusOr<std::vector<Decision>> Scheduler::TryPreemptByService(const PoolJob& job, double now) {
  const QuotaVerdict v = config_.quotas.Check(job.team, job.gpus, job.tier_units);
  if (v != QuotaVerdict::kWithinNominal && v != QuotaVerdict::kBorrowed) return std::vector<Decision>{};
  // Victims: running jobs that the queue order now puts at least a level
  // below the job (under 2D-LAS, a later service level; by size, at least
  // twice its expected remaining GPU time), having run the grace period;
  // the lowest first, then the most served.
  const double key = EffectivePriority(job, now);
  const auto& ranked = RankedRunning(now);
  if (ranked.empty() || ranked.front().first + 1 > key) return std::vector<Decision>{};  // no one ranks low enough
  // With quotas, only jobs of its own team, or borrowed jobs of others when
  // it is within its nominal quota: suspending another team's job within
  // that team's quota would leave the team owed it, and its reclaim would
  // undo the suspension (jobs would thrash between teams).
  const bool within_nominal = v == QuotaVerdict::kWithinNominal;
  RunningJobs candidates;
  int freed = pool_.free_gpus();
  for (const auto& [victim_key, r] : ranked) {
    if (victim_key + 1 > key) break;
    if (now - r->start < config_.grace_s || now - r->moved_at < config_.grace_s) continue;
    if (config_.quotas.enabled() && r->job.team != job.team && !(r->borrowed && within_nominal)) continue;
    candidates.push_back(r);
    freed += r->job.gpus;
  }
  if (freed < job.gpus) return std::vector<Decision>{};  // not even all of them would make room
  if (candidates.empty()) return std::vector<Decision>{};
  GL_ASSIGN_OR_RETURN(auto victims, FewestVictims(job, candidates, now));
  if (!victims) return std::vector<Decision>{};
  return PreemptFor(job, *victims, true, now);
}

int Scheduler::LowestRunningClass() const {
  if (!lowest_running_class_) {
    int lowest = std::numeric_limits<int>::max();
    for (const auto& [id, r] : running_) lowest = std::min(lowest, r.job.priority);
    lowest_running_class_ = lowest;
  }
  return *lowest_running_class_;
}

const std::vector<std::pair<double, const RunningJob*>>& Scheduler::RankedRunning(double now) const {
  if (ranked_running_valid_ && ranked_running_at_ == now) return ranked_running_;
  ranked_running_.clear();
  for (const auto& [id, r] : running_) ranked_running_.emplace_back(RunningPriority(r, now), &r);
  // Lowest first; among equals the most served, then by id.
  auto attained = [&](const RunningJob* r) { return r->job.attained_gpu_s + r->job.gpus * (now - r->start); };
  std::stable_sort(ranked_running_.begin(), ranked_running_.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return attained(a.second) != attained(b.second) ? attained(a.second) > attained(b.second)
                                                    : a.second->job.id < b.second->job.id;
  });
  ranked_running_at_ = now;
  ranked_running_valid_ = true;
  return ranked_running_;
}

double Scheduler::RunningPriority(const RunningJob& r, double now) const {
  PoolJob as_queued = r.job;
  const double ran = now - r.start;
  as_queued.attained_gpu_s += r.job.gpus * ran;
  if (as_queued.estimate > 0) as_queued.estimate = std::max(1.0, as_queued.estimate - std::max(0.0, ran - r.delay));
  return EffectivePriority(as_queued, now);
}

StatusOr<std::vector<Decision>> Scheduler::PreemptFor(const PoolJob& job, const RunningJobs& victims,
                                                      bool checkpointed, double now) {
  std::vector<Decision> out;
  for (const RunningJob* victim : victims) {
    Decision d;
    d.kind = Decision::Kind::kPreempt;
    d.job = victim->job.id;
    d.allocation = victim->allocation;
    d.preempted_by = job.id;
    d.checkpointed = checkpointed;
    PoolJob requeue = victim->job;
    requeue.max_wait_s = 0;  // it ran: it waits to run again however long it takes
    requeue.attained_gpu_s += requeue.gpus * (now - victim->start);
    if (!checkpointed) requeue.begin = config_.reclaim.KilledAt(now) + config_.requeue_hold_s;
    GL_RETURN_IF_ERROR(Finish(victim->job.id));
    queue_.push_back(requeue);  // it keeps its submit time, so its age
    out.push_back(d);
  }
  auto started = TryStart(job, now);
  if (!started) return Internal("job " + std::to_string(job.id) + " did not fit after its victims were preempted");
  running_.at(job.id).reclaim_until = config_.reclaim.FreedAt(now);
  GL_RETURN_IF_ERROR(HoldUntilKill(out, started->allocation, now));
  out.push_back(*started);
  return out;
}

Scheduler::RunningJobs Scheduler::PreemptionCandidates(const PoolJob& job, bool reclaims, double now) const {
  // Victims of a lower class only: borrowed jobs of other teams (reclaim;
  // under Slurm's tiers its own too: a partition of a higher tier preempts
  // the borrowed tier's jobs whoever's they are), or jobs of a lower
  // priority class (with quotas, of its own team or borrowed). A borrowed job goes whole, even when
  // its team then holds less than its guarantee (part of it was within the
  // team's nominal): a gang cannot give back only its borrowed part, and a
  // guarantee that a borrower could block would be no guarantee. That team
  // is then owed its guarantee in turn.
  std::vector<const RunningJob*> candidates;
  for (const auto& [id, r] : running_) {
    if (now - r.start < config_.grace_s || now - r.moved_at < config_.grace_s) continue;
    const bool reclaim = reclaims && r.borrowed && (r.job.team != job.team || config_.slurm_tiers);
    // With quotas, a lower class yields only within its team, or where it
    // borrows: another team's job within its nominal is owed its GPUs, and
    // its reclaim would undo the preemption (jobs would thrash).
    const bool lower = r.job.priority < job.priority &&
                       (!config_.quotas.enabled() || r.job.team == job.team || r.borrowed);
    if (reclaim || lower) candidates.push_back(&r);
  }
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
  return candidates;
}

StatusOr<std::optional<Scheduler::RunningJobs>> Scheduler::FewestVictims(const PoolJob& job,
                                                                        const RunningJobs& candidates,
                                                                        double now) const {
  GpuPool trial = pool_;
  std::vector<const RunningJob*> victims;
  for (const RunningJob* c : candidates) {
    GL_RETURN_IF_ERROR(trial.Give(c->allocation));
    victims.push_back(c);
    if (PlaceGang(trial, job.gpus, config_.style, ConstraintsFor(job, now))) break;
  }
  if (!PlaceGang(trial, job.gpus, config_.style, ConstraintsFor(job, now))) return std::optional<RunningJobs>();
  // Keep only the victims it really needs, dearest first.
  for (size_t i = victims.size(); i-- > 0;) {
    GL_RETURN_IF_ERROR(trial.Take(victims[i]->allocation));
    if (PlaceGang(trial, job.gpus, config_.style, ConstraintsFor(job, now))) {
      victims.erase(victims.begin() + static_cast<long>(i));
    } else {
      GL_RETURN_IF_ERROR(trial.Give(victims[i]->allocation));
    }
  }
  return std::optional<RunningJobs>(std::move(victims));
}

StatusOr<bool> Scheduler::TryClearHost(int h, int to_move, std::vector<const RunningJob*> jobs,
                                       const std::vector<bool>& cleared, double now, GpuPool& trial,
                                       std::map<int, Allocation>& moved) const {
  const int per = pool_.hosts().front().gpus;
  const int n_hosts = static_cast<int>(pool_.hosts().size());
  std::erase_if(jobs, [&](const RunningJob* r) { return moved.count(r->job.id) > 0; });
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const RunningJob* a, const RunningJob* b) { return a->job.gpus < b->job.gpus; });
  GpuPool attempt = trial;
  std::map<int, Allocation> attempt_moves;
  int freed = 0;
  for (const RunningJob* r : jobs) {
    if (freed >= to_move) break;
    GangConstraints c = ConstraintsFor(r->job, now);
    if (c.avoid.empty()) c.avoid.assign(static_cast<size_t>(n_hosts), false);
    // Only into other partly used hosts: never onto a whole free host (that
    // would fragment it) nor back onto a host being cleared.
    for (int x = 0; x < n_hosts; ++x) {
      if (x == h || cleared[static_cast<size_t>(x)] || attempt.free_on(x) == per) c.avoid[static_cast<size_t>(x)] = true;
    }
    auto to = PlaceGang(attempt, r->job.gpus, config_.style, c);
    if (!to) return false;
    GL_RETURN_IF_ERROR(attempt.Give(r->allocation));
    GL_RETURN_IF_ERROR(attempt.Take(*to));
    attempt_moves[r->job.id] = *to;
    freed += r->job.gpus;
  }
  if (freed < to_move) return false;
  trial = std::move(attempt);
  moved.insert(attempt_moves.begin(), attempt_moves.end());
  return true;
}

StatusOr<std::vector<Decision>> Scheduler::CommitMigrations(const PoolJob& job, const std::map<int, Allocation>& moved,
                                                            double now) {
  std::vector<Decision> out;
  // Every move at once: old GPUs back first, then the new ones.
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
    RunningChanged();
    r.moved_at = now;
    out.push_back(d);
  }
  auto started = TryStart(job, now);
  if (!started) return Internal("job " + std::to_string(job.id) + " did not fit after migrations made room for it");
  out.push_back(*started);
  return out;
}

StatusOr<std::vector<Decision>> Scheduler::TryDefragment(const PoolJob& job, double now) {
  const QuotaVerdict v = config_.quotas.Check(job.team, job.gpus, job.tier_units);
  if (v != QuotaVerdict::kWithinNominal && v != QuotaVerdict::kBorrowed) return std::vector<Decision>{};
  if (pool_.free_gpus() < job.gpus) return std::vector<Decision>{};  // blocked by number, not by shape
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
      GL_ASSIGN_OR_RETURN(done, TryClearHost(h, to_move, on_host[static_cast<size_t>(h)], cleared, now, trial, moved));
      if (!done) continue;
      cleared[static_cast<size_t>(h)] = true;
      break;
    }
    if (!done) break;
  }
  if (moved.empty() || !PlaceGang(trial, job.gpus, config_.style, wanted)) return std::vector<Decision>{};
  return CommitMigrations(job, moved, now);
}

}  // namespace gpulaunch::pool
