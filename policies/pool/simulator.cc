#include "policies/pool/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <tuple>

#include "policies/pool/job_story.h"
#include "policies/pool/sim_measures.h"

namespace gpulaunch::pool {
namespace {

struct Event {
  double time;
  int kind;  // 0 finish, 1 arrival, 2 wake-up: the order at one time
  int job;
  int generation;  // a finish of an earlier run (before a preemption) is stale
  bool operator>(const Event& o) const {
    return std::tie(time, kind, job, generation) > std::tie(o.time, o.kind, o.job, o.generation);
  }
};

// One simulation: the event queue, each job's runs, and the running
// measures. Run() is the loop; each other method is one step of it.
class Simulation {
 public:
  Simulation(const GpuPool& pool, const std::vector<TraceJob>& jobs, const SchedulerConfig& config,
             const std::string& policy_name, const SimSetup& setup)
      : pool_(pool),
        config_(config),
        setup_(setup),
        scheduler_(pool, config),
        health_(static_cast<int>(pool.hosts().size()), setup.health, jobs.empty() ? 0 : jobs.front().submit) {
    report_.policy = policy_name;
    for (const TraceJob& j : jobs) {
      if (j.gpus > pool.total_gpus()) {
        ++report_.dropped;
        continue;
      }
      by_id_[j.id] = &j;
      events_.push(Event{j.submit, 1, j.id, 0});
      outcome_[j.id] = JobOutcome{j.id, j.gpus, j.team, j.submit};
      remaining_[j.id] = j.duration;
      limit_left_[j.id] = j.limit;
    }
    report_.estimates = EstimateModeName(setup.estimates);
    if (setup.locality.cache_gb > 0) {
      cache_.emplace(static_cast<int>(pool.hosts().size()), setup.datasets, setup.locality.cache_gb);
      if (setup.locality.prefer) scheduler_.SetDataCaches(&cache_->holders());
    }
    report_.jobs = static_cast<int>(by_id_.size());
    first_ = last_ = jobs.empty() ? 0 : jobs.front().submit;
    if (auto it = by_id_.find(setup.explain_job); it != by_id_.end()) story_.emplace(*it->second, first_);
  }

  StatusOr<SimReport> Run() {
    for (const SimReservation& r : setup_.reservations) {
      GL_RETURN_IF_ERROR(scheduler_.Reserve(r.name, r.team, r.hosts, r.start, r.end).status());
      events_.push(Event{r.start, 2, -1, 0});  // passes when it begins and ends
      events_.push(Event{r.end, 2, -1, 0});
    }
    for (const SimFailure& f : setup_.failures) {
      if (f.host < 0 || f.host >= static_cast<int>(pool_.hosts().size())) {
        return InvalidArgument("host failure: no host " + std::to_string(f.host));
      }
      // Passes when the host goes silent, turns suspect and bad, when its
      // lease runs out, and when it is back.
      const HealthConfig& h = setup_.health;
      for (double t : {0.0, h.missed_for_suspect * h.heartbeat_s, h.bad_after_s, h.lease_s})
        events_.push(Event{f.at + t, 2, -1, 0});
      if (f.back >= 0) events_.push(Event{f.back, 2, -1, 0});
    }
    while (!events_.empty()) {
      const double now = events_.top().time;
      busy_area_ += busy_now_ * (now - last_);
      stranded_area_ += stranded_now_ * (now - last_);
      last_ = now;
      while (!events_.empty() && events_.top().time == now) {
        const Event e = events_.top();
        events_.pop();
        GL_RETURN_IF_ERROR(Handle(e, now));
      }
      if (!setup_.failures.empty()) GL_RETURN_IF_ERROR(Heartbeats(now));
      if (story_) story_->BeforePass(scheduler_.pool());
      const auto t0 = std::chrono::steady_clock::now();
      GL_ASSIGN_OR_RETURN(std::vector<Decision> decisions, scheduler_.Schedule(now));
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      decision_total_us_ += us;
      report_.decision_us_max = std::max(report_.decision_us_max, us);
      ++report_.passes;
      GL_ASSIGN_OR_RETURN(const auto reclaim_waits, ReclaimWaits(decisions, now));
      for (const Decision& d : decisions) {
        audit_.CheckPlacement(d, scheduler_.pool());
        if (d.kind == Decision::Kind::kPreempt && ends_on_its_own_.count(d.job)) continue;  // not preempted after all
        // (With Slurm's passes the owner starts in the kill's own second: the
        // start latency runs while it waits.)
        const auto waits = reclaim_waits.find(d.job);
        const double reclaim = waits == reclaim_waits.end() ? 0 : waits->second;
        GL_RETURN_IF_ERROR(Apply(d, now, config_.reclaim.passes() && reclaim > 0
                                             ? std::max(setup_.start_latency_s, reclaim)
                                             : setup_.start_latency_s + reclaim));
        if (story_ && d.job == story_->job()) {
          story_->Decided(d, now, scheduler_, cache_ ? &*cache_ : nullptr, run_delay_[d.job]);
        }
      }
      // A pass when a requeued job's hold ends (it runs from the kill).
      if (const double hold = config_.requeue_hold_s; hold > 0) {
        const double ends = config_.reclaim.KilledAt(now) + hold;
        for (const Decision& d : decisions) {
          if (d.kind == Decision::Kind::kPreempt && !d.checkpointed && !ends_on_its_own_.count(d.job) &&
              reviews_.insert(ends).second) {
            events_.push(Event{ends, 2, -1, 0});
          }
        }
      }
      if (story_) story_->Waits(scheduler_, now);
      // A pass at the next backfill tick (backfill on a timer, as Slurm's).
      // (Only while jobs run: with none running, nothing a tick could backfill
      // behind the first job differs from now.)
      if (const double tick = scheduler_.NextBackfillPass(now);
          std::isfinite(tick) && !scheduler_.running().empty() && reviews_.insert(tick).second) {
        events_.push(Event{tick, 2, -1, 0});
      }
      // 2D-LAS: a pass when a running job's service reaches the next level.
      const double review = scheduler_.NextServiceLevelChange(now);
      if (std::isfinite(review) && reviews_.insert(std::max(review, now + 1e-3)).second) {
        events_.push(Event{std::max(review, now + 1e-3), 2, -1, 0});
      }
      Measure(now);
    }
    return Summarize();
  }

 private:
  // How long each job that preempted in this pass waits for its victims'
  // GPUs (config_.reclaim). A victim whose run ends on its own before it
  // would be killed (Slurm: within its GraceTime) is not preempted: it
  // leaves the scheduler's queue again, ends when its work does, and its
  // preemptor starts then. With Slurm's passes, a pass when the GPUs come
  // free (the team's next reclaim may come then: ReclaimTiming).
  StatusOr<std::map<int, double>> ReclaimWaits(const std::vector<Decision>& decisions, double now) {
    std::map<int, double> freed;  // preemptor -> when its victims' GPUs are free
    const double kill = config_.reclaim.KilledAt(now);
    for (const Decision& d : decisions) {
      if (d.kind != Decision::Kind::kPreempt || d.preempted_by < 0) continue;
      double gone = kill;
      if (!d.checkpointed && run_end_[d.job] <= kill) {
        gone = run_end_[d.job];
        ends_on_its_own_.insert(d.job);
        GL_RETURN_IF_ERROR(scheduler_.Withdraw(d.job));
      }
      const auto [it, fresh] = freed.emplace(d.preempted_by, gone);
      if (!fresh) it->second = std::max(it->second, gone);
    }
    std::map<int, double> waits;
    for (const auto& [job, at] : freed) {
      const double free = std::max(now, at + config_.reclaim.delay_s);
      waits[job] = free - now;
      if (config_.reclaim.passes() && reviews_.insert(free).second) events_.push(Event{free, 2, -1, 0});
    }
    return waits;
  }

  // A job finishes (unless preempted or moved since), or arrives.
  Status Handle(const Event& e, double now) {
    if (e.kind == 0) {
      if (e.generation != generation_[e.job]) return Status::Ok();  // preempted or moved since
      // A victim that ended on its own within its grace left the scheduler already.
      if (ends_on_its_own_.erase(e.job) == 0) {
        GL_RETURN_IF_ERROR(scheduler_.Finish(e.job));
      } else {
        scheduler_.ReleaseHeld(e.job);
      }
      JobOutcome& o = outcome_[e.job];
      o.end = now;
      if (limited_[e.job]) {  // its limit ended it, as Slurm would
        o.reached_limit = true;
        ++report_.reached_limit;
        report_.gpu_hours_cut += (remaining_[e.job] - limit_left_[e.job]) * o.gpus / 3600;
      }
      if (story_ && e.job == story_->job()) story_->Ended(now, limited_[e.job], remaining_[e.job] - limit_left_[e.job]);
    } else if (e.kind == 1) {
      scheduler_.Submit(PoolJobOf(*by_id_[e.job]));
      if (setup_.max_wait_s > 0) events_.push(Event{now + setup_.max_wait_s, 2, e.job, 0});  // a pass when it expires
    }
    return Status::Ok();
  }

  // What the policy may know of the job's run time now (SimSetup::estimates).
  double EstimateFor(int id) const {
    switch (setup_.estimates) {
      case EstimateMode::kPerfect: return remaining_.at(id);
      case EstimateMode::kUser: return limit_left_.at(id);
      case EstimateMode::kNone: return 0;
    }
    return 0;
  }

  PoolJob PoolJobOf(const TraceJob& j) const {
    PoolJob job{j.id, j.team, j.gpus, j.priority, j.submit, EstimateFor(j.id)};
    if (setup_.tier_cpu_billing > 0 && j.cpus > 0) {
      job.tier_units = std::max(j.gpus, static_cast<int>(std::ceil(j.cpus * setup_.tier_cpu_billing - 1e-9)));
    }
    job.limit = setup_.estimates == EstimateMode::kUser ? j.limit : 0;
    job.dataset = j.dataset;
    job.user = j.user;
    job.min_gpu_memory_gib = j.min_gpu_memory_gib;
    job.min_link_gbps = j.min_link_gbps;
    job.one_leaf = j.one_leaf;
    job.min_leaves = j.min_leaves;
    job.max_wait_s = setup_.max_wait_s;
    return job;
  }

  bool Down(int host, double now) const {
    for (const SimFailure& f : setup_.failures)
      if (f.host == host && f.at <= now && (f.back < 0 || now < f.back)) return true;
    return false;
  }

  // Every live host heartbeats; the scheduler applies the hosts' health, and
  // the jobs a bad host ended go back to the queue with the work they keep.
  Status Heartbeats(double now) {
    for (int h = 0; h < static_cast<int>(pool_.hosts().size()); ++h)
      if (!Down(h, now)) health_.Heartbeat(h, now);
    GL_ASSIGN_OR_RETURN(std::vector<int> lost, scheduler_.ApplyHealth(health_, now));
    for (int id : lost) {
      JobOutcome& o = outcome_[id];
      ++o.lost_to_failures;
      ++report_.jobs_lost_to_failures;
      EndRun(id, now, false);
      PoolJob again = PoolJobOf(*by_id_[id]);
      again.max_wait_s = 0;  // it ran: it waits to run again however long it takes
      scheduler_.Submit(again);
    }
    return Status::Ok();
  }

  // A run ends before its work is done (preempted, or its host went bad):
  // what a checkpoint kept stays done, the rest is lost and redone. A job
  // suspended with a checkpoint (`checkpointed`) keeps all its work, and
  // what it ran counts against its time limit; a requeued one gets its whole
  // limit again.
  void EndRun(int id, double now, bool checkpointed) {
    JobOutcome& o = outcome_[id];
    ++generation_[id];
    const double ran = now - run_start_[id];
    const double progress = std::clamp(ran - run_delay_[id], 0.0, remaining_[id]);
    const double every = setup_.checkpoint_interval_s;
    const double kept = checkpointed ? progress : every > 0 ? std::floor(progress / every) * every : 0;
    const double restart = checkpointed || every > 0 ? config_.migration_cost_s : 0;
    remaining_[id] += restart - kept;
    if (limit_left_[id] > 0) {  // 0: no limit, none to count down
      limit_left_[id] = checkpointed ? std::max(0.0, limit_left_[id] - progress) + restart : by_id_[id]->limit;
    }
    // The run's migrations were counted as lost when they happened.
    o.gpu_seconds_lost += (ran - run_delay_[id] - kept + restart) * o.gpus;
  }

  // `wait`: seconds a started job waits for the GPUs its victims free and
  // for the scheduler to start it.
  Status Apply(const Decision& d, double now, double wait) {
    JobOutcome& o = outcome_[d.job];
    switch (d.kind) {
      case Decision::Kind::kExpire:
        o.timed_out = true;
        ++report_.timed_out;
        return Status::Ok();
      case Decision::Kind::kMigrate: {
        // It goes on elsewhere after its checkpoint and restart: the same
        // work left, later by the migration cost.
        run_end_[d.job] += config_.migration_cost_s;
        run_delay_[d.job] += config_.migration_cost_s;
        ++generation_[d.job];
        ++o.migrations;
        ++report_.migrations;
        o.gpu_seconds_lost += config_.migration_cost_s * o.gpus;
        o.hosts = d.allocation.hosts();
        o.leaves = LeavesOf(pool_, d.allocation);
        events_.push(Event{run_end_[d.job], 0, d.job, generation_[d.job]});
        return Status::Ok();
      }
      case Decision::Kind::kPreempt:
        ++o.preemptions;
        ++report_.preemptions;
        report_.checkpointed_preemptions += d.checkpointed ? 1 : 0;
        EndRun(d.job, now, d.checkpointed);
        return scheduler_.SetEstimate(d.job, EstimateFor(d.job));
      case Decision::Kind::kStart:
        break;
    }
    if (o.start < 0) o.start = now + wait;
    run_start_[d.job] = now;
    // GPUs held while its victims end (their last, lost, seconds) and while
    // the scheduler starts it.
    o.gpu_seconds_lost += wait * o.gpus;
    o.hosts = d.allocation.hosts();
    o.leaves = LeavesOf(pool_, d.allocation);
    o.min_hosts = MinHosts(pool_, o.gpus);
    o.min_leaves = MinLeaves(pool_, o.gpus);
    // It first copies its dataset where missing, then runs until its work
    // is done or (user estimates) its time limit ends it.
    run_delay_[d.job] = wait + Stage(d.job, d.allocation);
    double run = remaining_[d.job];
    limited_[d.job] = setup_.estimates == EstimateMode::kUser && limit_left_[d.job] > 0 && limit_left_[d.job] <= run;
    if (limited_[d.job]) run = limit_left_[d.job];
    run_end_[d.job] = now + run_delay_[d.job] + run;
    events_.push(Event{run_end_[d.job], 0, d.job, generation_[d.job]});
    if (config_.preempt || config_.preempt_by_service) {
      events_.push(Event{now + config_.grace_s, 2, d.job, generation_[d.job]});
    }
    return Status::Ok();
  }

  // Seconds job `id` spends copying its dataset to the hosts of `a` whose
  // cache lacks it (0 without the locality model).
  double Stage(int id, const Allocation& a) {
    const TraceJob& j = *by_id_[id];
    if (!cache_ || j.dataset < 0) return 0;
    std::vector<int> hosts;
    for (const HostShare& s : a.shares) hosts.push_back(s.host);
    if (!cache_->Use(j.dataset, j.dataset_gb, hosts)) return 0;
    const double s = j.dataset_gb / setup_.locality.bandwidth_gb_s;
    report_.staging_hours += s / 3600;
    return s;
  }

  // After a pass: the audit, busy and stranded GPUs until the next event,
  // and the guarantees.
  void Measure(double now) {
    audit_.Check(scheduler_, now);
    const GpuPool& pool = scheduler_.pool();
    // Busy: GPUs of running jobs (not those a bad host's lease still holds).
    busy_now_ = 0;
    for (const auto& [id, r] : scheduler_.running()) busy_now_ += r.job.gpus;
    report_.busy.emplace_back(now, busy_now_);
    // Stranded: free GPUs (on healthy hosts) while a queued job that fits by
    // count (and by quota) cannot be placed.
    int free = pool.free_gpus();
    if (!setup_.failures.empty()) {
      for (int h = 0; h < static_cast<int>(pool.hosts().size()); ++h) free -= pool.usable(h) ? 0 : pool.free_on(h);
    }
    stranded_now_ = 0;
    for (const PoolJob& q : scheduler_.queue()) {
      const QuotaVerdict v = scheduler_.quotas().Check(q.team, q.gpus, q.tier_units);
      if ((v == QuotaVerdict::kWithinNominal || v == QuotaVerdict::kBorrowed) && q.gpus <= free &&
          !PlaceGang(pool, q.gpus, config_.style)) {
        stranded_now_ = free;
        break;
      }
    }
    guarantees_.Observe(scheduler_, now, config_.grace_s, report_.guarantee_violations);
  }

  StatusOr<SimReport> Summarize() {
    report_.rules = audit_.counts();
    GL_RETURN_IF_ERROR(SummarizeOutcomes(outcome_, scheduler_.queue(), first_, report_));
    report_.utilization = report_.makespan_s > 0 ? busy_area_ / (pool_.total_gpus() * report_.makespan_s) : 0;
    report_.stranded_gpus = report_.makespan_s > 0 ? stranded_area_ / report_.makespan_s : 0;
    report_.decision_us_avg = report_.passes ? decision_total_us_ / report_.passes : 0;
    if (story_) report_.explain = story_->lines();
    if (cache_) {
      report_.cache_hits = cache_->hits();
      report_.cache_misses = cache_->misses();
    }
    return std::move(report_);
  }

  const GpuPool& pool_;
  const SchedulerConfig& config_;
  const SimSetup& setup_;
  Scheduler scheduler_;
  NodeHealth health_;
  RuleAudit audit_;
  SimReport report_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::map<int, const TraceJob*> by_id_;
  std::map<int, JobOutcome> outcome_;
  std::map<int, int> generation_;     // of each job's finish event: older ones are stale
  std::map<int, double> run_start_;   // of its current run
  std::map<int, double> run_end_;     // when its current run will end
  std::set<int> ends_on_its_own_;     // victims whose work ends before their kill (ReclaimWaits)
  std::map<int, double> run_delay_;   // migration time in its current run (no progress)
  std::map<int, double> remaining_;   // work left at the start of its current run
  GuaranteeWatch guarantees_;
  std::map<int, double> limit_left_;  // run time its time limit still allows (0: no limit)
  std::map<int, bool> limited_;       // its current run ends at its limit, not when done
  std::set<double> reviews_;          // passes already due for service level changes
  std::optional<DataCache> cache_;
  std::optional<JobStory> story_;     // SetUp::explain_job's (--explain)
  double first_ = 0, last_ = 0, busy_area_ = 0, stranded_area_ = 0, decision_total_us_ = 0;
  int busy_now_ = 0, stranded_now_ = 0;
};

}  // namespace

StatusOr<SimReport> Simulate(const GpuPool& pool, const std::vector<TraceJob>& jobs, const SchedulerConfig& config,
                             const std::string& policy_name, const SimSetup& setup) {
  return Simulation(pool, jobs, config, policy_name, setup).Run();
}

}  // namespace gpulaunch::pool
