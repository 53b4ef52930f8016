#include "policies/pool/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <queue>
#include <set>

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

StatusOr<SimReport> Simulate(const GpuPool& pool, const std::vector<TraceJob>& jobs, const SchedulerConfig& config,
                             const std::string& policy_name, const SimSetup& setup) {
  SimReport report;
  report.policy = policy_name;
  Scheduler scheduler(pool, config);
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  for (const SimReservation& r : setup.reservations) {
    GL_RETURN_IF_ERROR(scheduler.Reserve(r.name, r.team, r.hosts, r.start, r.end).status());
    events.push(Event{r.start, 2, -1, 0});  // passes when it begins and ends
    events.push(Event{r.end, 2, -1, 0});
  }
  RuleAudit audit;
  std::map<int, JobOutcome> outcome;
  std::map<int, int> generation;
  std::map<int, double> run_start;  // of the current run
  std::map<int, double> run_end;    // when the current run will end
  std::map<int, double> run_delay;  // migration time in the current run (no progress)
  std::map<int, double> remaining;  // work left at the start of the current run
  std::map<int, const TraceJob*> by_id;
  for (const TraceJob& j : jobs) {
    if (j.gpus > pool.total_gpus()) {
      ++report.dropped;
      continue;
    }
    by_id[j.id] = &j;
    events.push(Event{j.submit, 1, j.id, 0});
    outcome[j.id] = JobOutcome{j.id, j.gpus, j.team, j.submit};
    remaining[j.id] = j.duration;
  }
  report.jobs = static_cast<int>(by_id.size());
  std::map<int, double> below_since;  // team -> since when its guarantee is owed (-1: counted)
  int violations = 0;
  double last = jobs.empty() ? 0 : jobs.front().submit, busy_area = 0, stranded_area = 0, first = last;
  int busy_now = 0, stranded_now = 0;
  double decision_total_us = 0;
  while (!events.empty()) {
    const double now = events.top().time;
    busy_area += busy_now * (now - last);
    stranded_area += stranded_now * (now - last);
    last = now;
    while (!events.empty() && events.top().time == now) {
      const Event e = events.top();
      events.pop();
      if (e.kind == 0) {
        if (e.generation != generation[e.job]) continue;  // preempted since
        GL_RETURN_IF_ERROR(scheduler.Finish(e.job));
        outcome[e.job].end = now;
      } else if (e.kind == 1) {
        const TraceJob& j = *by_id[e.job];
        PoolJob job{j.id, j.team, j.gpus, j.priority, j.submit, j.duration};
        job.user = j.user;
        job.min_gpu_memory_gib = j.min_gpu_memory_gib;
        job.min_link_gbps = j.min_link_gbps;
        job.one_leaf = j.one_leaf;
        job.min_leaves = j.min_leaves;
        job.max_wait_s = setup.max_wait_s;
        scheduler.Submit(job);
        if (setup.max_wait_s > 0) events.push(Event{now + setup.max_wait_s, 2, j.id, 0});  // a pass when it expires
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    GL_ASSIGN_OR_RETURN(std::vector<Decision> decisions, scheduler.Schedule(now));
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    decision_total_us += us;
    report.decision_us_max = std::max(report.decision_us_max, us);
    ++report.passes;
    for (const Decision& d : decisions) {
      JobOutcome& o = outcome[d.job];
      if (d.kind == Decision::Kind::kExpire) {
        o.timed_out = true;
        ++report.timed_out;
        continue;
      }
      if (d.kind == Decision::Kind::kMigrate) {
        // It goes on elsewhere after its checkpoint and restart: the same
        // work left, later by the migration cost.
        const double left = run_end[d.job] - now;
        run_end[d.job] = now + left + config.migration_cost_s;
        run_delay[d.job] += config.migration_cost_s;
        ++generation[d.job];
        ++o.migrations;
        ++report.migrations;
        o.gpu_seconds_lost += config.migration_cost_s * o.gpus;
        o.hosts = d.allocation.hosts();
        o.leaves = LeavesOf(pool, d.allocation);
        events.push(Event{run_end[d.job], 0, d.job, generation[d.job]});
        continue;
      }
      if (d.kind == Decision::Kind::kPreempt) {
        ++generation[d.job];
        ++o.preemptions;
        ++report.preemptions;
        // Work done in this run, and what of it a checkpoint kept.
        const double ran = now - run_start[d.job];
        const double progress = std::clamp(ran - run_delay[d.job], 0.0, remaining[d.job]);
        const double kept = setup.checkpoint_interval_s > 0
                                ? std::floor(progress / setup.checkpoint_interval_s) * setup.checkpoint_interval_s
                                : 0;
        remaining[d.job] -= kept;
        const double restart = setup.checkpoint_interval_s > 0 ? config.migration_cost_s : 0;
        remaining[d.job] += restart;
        o.gpu_seconds_lost += (ran - kept + restart) * o.gpus;
        GL_RETURN_IF_ERROR(scheduler.SetEstimate(d.job, remaining[d.job]));
        continue;
      }
      if (o.start < 0) o.start = now;
      run_start[d.job] = now;
      o.hosts = d.allocation.hosts();
      o.leaves = LeavesOf(pool, d.allocation);
      o.min_hosts = MinHosts(pool, o.gpus);
      o.min_leaves = MinLeaves(pool, o.gpus);
      run_end[d.job] = now + remaining[d.job];
      run_delay[d.job] = 0;
      events.push(Event{run_end[d.job], 0, d.job, generation[d.job]});
      if (config.preempt) events.push(Event{now + config.grace_s, 2, d.job, generation[d.job]});
    }
    audit.Check(scheduler, now);
    busy_now = pool.total_gpus() - scheduler.pool().free_gpus();
    report.busy.emplace_back(now, busy_now);
    // Stranded: free GPUs while a queued job that fits by count (and by
    // quota) cannot be placed.
    stranded_now = 0;
    for (const PoolJob& q : scheduler.queue()) {
      const QuotaVerdict v = scheduler.quotas().Check(q.team, q.gpus);
      if ((v == QuotaVerdict::kWithinNominal || v == QuotaVerdict::kBorrowed) &&
          q.gpus <= scheduler.pool().free_gpus() && !PlaceGang(scheduler.pool(), q.gpus, config.style)) {
        stranded_now = scheduler.pool().free_gpus();
        break;
      }
    }
    // Guarantees: a team that wants GPUs within its guarantee while other
    // teams hold borrowed GPUs must get them within the grace period (plus
    // a minute for the reclaim itself); each episode longer than that is
    // one violation.
    if (scheduler.quotas().enabled()) {
      const QuotaBook& q = scheduler.quotas();
      bool someone_borrows = false;
      for (int t = 0; t < q.teams(); ++t) someone_borrows = someone_borrows || q.used(t) > q.quota(t).nominal;
      for (int t = 0; t < q.teams(); ++t) {
        bool wants = false;
        for (const PoolJob& job : scheduler.queue())
          wants = wants || (job.team == t && q.used(t) + job.gpus <= q.quota(t).guarantee);
        auto it = below_since.find(t);
        if (wants && someone_borrows) {
          if (it == below_since.end()) {
            below_since[t] = now;
          } else if (it->second >= 0 && now - it->second > config.grace_s + 60) {
            ++violations;
            it->second = -1;  // counted; the episode goes on until it is over
          }
        } else if (it != below_since.end()) {
          below_since.erase(it);
        }
      }
    }
  }
  report.guarantee_violations = violations;
  report.rules = audit.counts();
  std::vector<double> jct, wait;
  double hosts_ratio = 0, leaves_ratio = 0;
  for (auto& [id, o] : outcome) {
    report.outcomes.push_back(o);
    if (o.timed_out) continue;
    if (o.end < 0) return Internal("job " + std::to_string(id) + " never finished: the simulation lost it");
    jct.push_back(o.end - o.submit);
    wait.push_back(o.start - o.submit);
    hosts_ratio += static_cast<double>(o.hosts) / std::max(1, o.min_hosts);
    leaves_ratio += static_cast<double>(o.leaves) / std::max(1, o.min_leaves);
    report.jobs_over_min_leaves += o.leaves > o.min_leaves ? 1 : 0;
    report.gpu_hours_lost += o.gpu_seconds_lost / 3600;
  }
  const double n = std::max<size_t>(1, jct.size());
  report.avg_jct_s = std::accumulate(jct.begin(), jct.end(), 0.0) / n;
  report.p95_jct_s = Quantile(jct, 0.95);
  report.avg_wait_s = std::accumulate(wait.begin(), wait.end(), 0.0) / n;
  report.p95_wait_s = Quantile(wait, 0.95);
  report.max_wait_s = wait.empty() ? 0 : *std::max_element(wait.begin(), wait.end());
  report.avg_hosts_over_min = hosts_ratio / n;
  report.avg_leaves_over_min = leaves_ratio / n;
  double last_end = first;
  for (const auto& [id, o] : outcome) last_end = std::max(last_end, o.end);
  report.makespan_s = last_end - first;  // passes for a reservation's end may come later
  report.utilization = report.makespan_s > 0 ? busy_area / (pool.total_gpus() * report.makespan_s) : 0;
  report.stranded_gpus = report.makespan_s > 0 ? stranded_area / report.makespan_s : 0;
  report.decision_us_avg = report.passes ? decision_total_us / report.passes : 0;
  return report;
}

}  // namespace gpulaunch::pool
