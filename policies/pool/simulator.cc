#include "policies/pool/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <queue>
#include <tuple>

#include "common/stats.h"

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

}  // namespace

StatusOr<SchedulerConfig> PolicyConfig(const std::string& name, const QuotaBook& quotas) {
  SchedulerConfig c;
  c.quotas = quotas;
  if (name == "topology") {
    c.style = PlacementStyle::kTopology;
    c.order = QueueOrder::kPriorityAging;
    c.size_reference = 64.0 * 7 * 86400;  // a week on 64 GPUs: level 0
    c.aging_s = 86400;                    // a level per day waited
    c.backfill = true;
    c.preempt = true;
    c.defragment = true;
  } else if (name == "fifo-first-fit") {
    c.style = PlacementStyle::kFirstFit;
    c.order = QueueOrder::kFifo;
    c.backfill = false;
    c.preempt = false;
  } else if (name == "best-fit") {
    c.style = PlacementStyle::kBestFit;
    c.order = QueueOrder::kFifo;
    c.backfill = true;
    c.preempt = false;
  } else {
    return InvalidArgument("unknown policy '" + name + "': choose topology, fifo-first-fit or best-fit");
  }
  return c;
}

namespace {

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
    }
    report_.jobs = static_cast<int>(by_id_.size());
    first_ = last_ = jobs.empty() ? 0 : jobs.front().submit;
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
      const auto t0 = std::chrono::steady_clock::now();
      GL_ASSIGN_OR_RETURN(std::vector<Decision> decisions, scheduler_.Schedule(now));
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      decision_total_us_ += us;
      report_.decision_us_max = std::max(report_.decision_us_max, us);
      ++report_.passes;
      for (const Decision& d : decisions) {
        audit_.CheckPlacement(d, scheduler_.pool());
        GL_RETURN_IF_ERROR(Apply(d, now));
      }
      Measure(now);
    }
    return Summarize();
  }

 private:
  // A job finishes (unless preempted or moved since), or arrives.
  Status Handle(const Event& e, double now) {
    if (e.kind == 0) {
      if (e.generation != generation_[e.job]) return Status::Ok();  // preempted or moved since
      GL_RETURN_IF_ERROR(scheduler_.Finish(e.job));
      outcome_[e.job].end = now;
    } else if (e.kind == 1) {
      scheduler_.Submit(PoolJobOf(*by_id_[e.job]));
      if (setup_.max_wait_s > 0) events_.push(Event{now + setup_.max_wait_s, 2, e.job, 0});  // a pass when it expires
    }
    return Status::Ok();
  }

  PoolJob PoolJobOf(const TraceJob& j) const {
    PoolJob job{j.id, j.team, j.gpus, j.priority, j.submit, j.duration};
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
      EndRun(id, now);
      PoolJob again = PoolJobOf(*by_id_[id]);
      again.estimate = remaining_[id];
      again.max_wait_s = 0;  // it ran: it waits to run again however long it takes
      scheduler_.Submit(again);
    }
    return Status::Ok();
  }

  // A run ends before its work is done (preempted, or its host went bad):
  // what a checkpoint kept stays done, the rest is lost and redone.
  void EndRun(int id, double now) {
    JobOutcome& o = outcome_[id];
    ++generation_[id];
    const double ran = now - run_start_[id];
    const double progress = std::clamp(ran - run_delay_[id], 0.0, remaining_[id]);
    const double every = setup_.checkpoint_interval_s;
    const double kept = every > 0 ? std::floor(progress / every) * every : 0;
    const double restart = every > 0 ? config_.migration_cost_s : 0;
    remaining_[id] += restart - kept;
    // The run's migrations were counted as lost when they happened.
    o.gpu_seconds_lost += (ran - run_delay_[id] - kept + restart) * o.gpus;
  }

  Status Apply(const Decision& d, double now) {
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
        EndRun(d.job, now);
        return scheduler_.SetEstimate(d.job, remaining_[d.job]);
      case Decision::Kind::kStart:
        break;
    }
    if (o.start < 0) o.start = now;
    run_start_[d.job] = now;
    o.hosts = d.allocation.hosts();
    o.leaves = LeavesOf(pool_, d.allocation);
    o.min_hosts = MinHosts(pool_, o.gpus);
    o.min_leaves = MinLeaves(pool_, o.gpus);
    run_end_[d.job] = now + remaining_[d.job];
    run_delay_[d.job] = 0;
    events_.push(Event{run_end_[d.job], 0, d.job, generation_[d.job]});
    if (config_.preempt) events_.push(Event{now + config_.grace_s, 2, d.job, generation_[d.job]});
    return Status::Ok();
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
      const QuotaVerdict v = scheduler_.quotas().Check(q.team, q.gpus);
      if ((v == QuotaVerdict::kWithinNominal || v == QuotaVerdict::kBorrowed) && q.gpus <= free &&
          !PlaceGang(pool, q.gpus, config_.style)) {
        stranded_now_ = free;
        break;
      }
    }
    // Guarantees: a team that wants GPUs within its guarantee while other
    // teams hold borrowed GPUs must get them within the grace period (plus
    // a minute for the reclaim itself); each episode longer than that is
    // one violation.
    const QuotaBook& q = scheduler_.quotas();
    if (!q.enabled()) return;
    bool someone_borrows = false;
    for (int t = 0; t < q.teams(); ++t) someone_borrows = someone_borrows || q.used(t) > q.quota(t).nominal;
    for (int t = 0; t < q.teams(); ++t) {
      bool wants = false;
      for (const PoolJob& job : scheduler_.queue())
        wants = wants || (job.team == t && q.used(t) + job.gpus <= q.quota(t).guarantee);
      auto it = owed_since_.find(t);
      if (wants && someone_borrows) {
        if (it == owed_since_.end()) {
          owed_since_[t] = now;
        } else if (it->second >= 0 && now - it->second > config_.grace_s + 60) {
          ++report_.guarantee_violations;
          it->second = -1;  // counted; the episode goes on until it is over
        }
      } else if (it != owed_since_.end()) {
        owed_since_.erase(it);
      }
    }
  }

  StatusOr<SimReport> Summarize() {
    report_.rules = audit_.counts();
    std::vector<double> jct, wait;
    double hosts_ratio = 0, leaves_ratio = 0, last_end = first_;
    for (auto& [id, o] : outcome_) {
      report_.outcomes.push_back(o);
      if (o.timed_out) continue;
      if (o.end < 0) {
        bool queued = false;
        for (const PoolJob& q : scheduler_.queue()) queued = queued || q.id == id;
        if (!queued) return Internal("job " + std::to_string(id) + " never finished: the simulation lost it");
        // Still waiting when nothing else will happen: it can never fit (a
        // host it needs is gone, or its quota can never allow it).
        ++report_.never_started;
        continue;
      }
      jct.push_back(o.end - o.submit);
      wait.push_back(o.start - o.submit);
      hosts_ratio += static_cast<double>(o.hosts) / std::max(1, o.min_hosts);
      leaves_ratio += static_cast<double>(o.leaves) / std::max(1, o.min_leaves);
      report_.jobs_over_min_leaves += o.leaves > o.min_leaves ? 1 : 0;
      report_.gpu_hours_lost += o.gpu_seconds_lost / 3600;
      last_end = std::max(last_end, o.end);
    }
    const double n = std::max<size_t>(1, jct.size());
    report_.avg_jct_s = std::accumulate(jct.begin(), jct.end(), 0.0) / n;
    report_.p95_jct_s = Quantile(jct, 0.95);
    report_.avg_wait_s = std::accumulate(wait.begin(), wait.end(), 0.0) / n;
    report_.p95_wait_s = Quantile(wait, 0.95);
    report_.max_wait_s = wait.empty() ? 0 : *std::max_element(wait.begin(), wait.end());
    report_.avg_hosts_over_min = hosts_ratio / n;
    report_.avg_leaves_over_min = leaves_ratio / n;
    report_.makespan_s = last_end - first_;  // passes for a reservation's end may come later
    report_.utilization = report_.makespan_s > 0 ? busy_area_ / (pool_.total_gpus() * report_.makespan_s) : 0;
    report_.stranded_gpus = report_.makespan_s > 0 ? stranded_area_ / report_.makespan_s : 0;
    report_.decision_us_avg = report_.passes ? decision_total_us_ / report_.passes : 0;
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
  std::map<int, double> run_delay_;   // migration time in its current run (no progress)
  std::map<int, double> remaining_;   // work left at the start of its current run
  std::map<int, double> owed_since_;  // team -> since when its guarantee is owed (-1: counted)
  double first_ = 0, last_ = 0, busy_area_ = 0, stranded_area_ = 0, decision_total_us_ = 0;
  int busy_now_ = 0, stranded_now_ = 0;
};

}  // namespace

StatusOr<SimReport> Simulate(const GpuPool& pool, const std::vector<TraceJob>& jobs, const SchedulerConfig& config,
                             const std::string& policy_name, const SimSetup& setup) {
  return Simulation(pool, jobs, config, policy_name, setup).Run();
}

}  // namespace gpulaunch::pool
