#include "policies/pool/replay_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace gpulaunch::pool {
namespace {

// Why a job started where it did, where the runs tell: a preemption (the
// reclaim delay, and the requeued job's hold), the real scheduler's backfill
// (recorded, or seen as a start out of submission order), which runs only
// every interval.
std::string Reason(const ObservedRun& job, const JobOutcome& sim, const std::vector<ObservedRun>& all,
                   double backfill_interval_s) {
  const double diff = sim.start - job.start;
  char interval[64];
  std::snprintf(interval, sizeof interval, "the real backfill pass runs every %.0f s", backfill_interval_s);
  std::string started;  // how its (first) start came about
  if (job.backfilled) {
    started = std::string("started by the real scheduler's backfill") + (diff < -1 ? std::string(": ") + interval : "");
  } else {
    bool out_of_order = false;
    for (const ObservedRun& other : all) {
      if (other.submit < job.submit && (other.start < 0 || other.start > job.start)) out_of_order = true;
    }
    if (out_of_order) started = std::string("backfilled") + (diff < -1 ? std::string(": ") + interval : "");
  }
  std::string preempted;
  if (job.requeued && sim.preemptions > 0) {
    preempted = "preempted in both: the reclaim delay, and a requeued job starts again later";
  } else if (job.requeued) {
    preempted = "preempted by the real scheduler only: a requeued job starts again later";
  } else if (sim.preemptions > 0) {
    preempted = "preempted in the simulation only (a start before a reclaim that the real run did not make)";
  }
  if (started.empty() || preempted.empty()) return started + preempted;
  return started + "; " + preempted;
}

// Why two real runs of a job started apart, where they tell: which run's
// backfill started it, which run preempted (and held) it.
std::string RunsReason(const ObservedRun& first, const ObservedRun& second) {
  const auto which = [](bool a, bool b) {
    return a && b ? std::string("both runs") : a ? std::string("the first run only") : "the second run only";
  };
  std::string started, preempted;
  if (first.backfilled || second.backfilled) {
    started = "started by the backfill in " + which(first.backfilled, second.backfilled);
  }
  if (first.requeued || second.requeued) {
    preempted = "preempted in " + which(first.requeued, second.requeued) + ": a requeued job starts again later";
  }
  if (started.empty() || preempted.empty()) return started + preempted;
  return started + "; " + preempted;
}

// The name a side adds to the observed job's ("" for a simulation's outcome).
std::string SideName(const JobOutcome&) { return ""; }
std::string SideName(const ObservedRun& run) { return run.name; }

// Each observed job against the other side's run of it (a simulation's
// outcome or another real run, by trace id); `reason(observed job, the other
// side's run)` says why they differ.
template <typename Other, typename ReasonOf>
ReplayComparison Compare(const std::vector<ObservedRun>& observed, const std::map<int, const Other*>& other_of,
                         int show, ReasonOf reason) {
  ReplayComparison c;
  c.jobs = static_cast<int>(observed.size());
  std::vector<ReplayJobDiff> diffs;
  double sum_abs = 0, jct_obs = 0, jct_sim = 0;
  for (const ObservedRun& job : observed) {
    const auto it = other_of.find(job.id);
    if (job.start < 0 || job.end < 0 || it == other_of.end() || it->second->start < 0 || it->second->end < 0) continue;
    const Other& other = *it->second;
    const std::string other_name = SideName(other);
    ReplayJobDiff d{job.id, other_name.empty() ? job.name : job.name + "/" + other_name, job.start, other.start,
                    other.start - job.start, reason(job, other)};
    const double abs = std::fabs(d.start_diff);
    sum_abs += abs;
    c.max_abs_start_diff = std::max(c.max_abs_start_diff, abs);
    c.within_1s += abs <= 1 ? 1 : 0;
    c.within_3s += abs <= 3 ? 1 : 0;
    jct_obs += job.end - job.submit;
    jct_sim += other.end - other.submit;
    diffs.push_back(d);
  }
  c.compared = static_cast<int>(diffs.size());
  if (c.compared == 0) return c;
  c.mean_abs_start_diff = sum_abs / c.compared;
  c.avg_jct_observed = jct_obs / c.compared;
  c.avg_jct_simulated = jct_sim / c.compared;
  c.jct_error = c.avg_jct_observed > 0 ? c.avg_jct_simulated / c.avg_jct_observed - 1 : 0;
  for (const ReplayJobDiff& d : diffs) {
    const auto first = [](const ReplayJobDiff& x) { return std::min(x.observed_start, x.simulated_start); };
    if (std::fabs(d.start_diff) > 3 && (!c.first_apart || first(d) < first(*c.first_apart))) c.first_apart = d;
  }
  std::stable_sort(diffs.begin(), diffs.end(), [](const ReplayJobDiff& a, const ReplayJobDiff& b) {
    return std::fabs(a.start_diff) > std::fabs(b.start_diff);
  });
  diffs.resize(std::min<size_t>(diffs.size(), static_cast<size_t>(std::max(0, show))));
  c.worst = std::move(diffs);
  return c;
}

}  // namespace

ReplayComparison CompareReplay(const std::vector<ObservedRun>& observed, const std::vector<JobOutcome>& simulated,
                               double backfill_interval_s, int show) {
  std::map<int, const JobOutcome*> sim_of;
  for (const JobOutcome& o : simulated) sim_of[o.id] = &o;
  return Compare(observed, sim_of, show, [&](const ObservedRun& job, const JobOutcome& sim) {
    return Reason(job, sim, observed, backfill_interval_s);
  });
}

ReplayComparison CompareRuns(const std::vector<ObservedRun>& first, const std::vector<ObservedRun>& second, int show) {
  std::map<int, const ObservedRun*> second_of;
  for (const ObservedRun& o : second) second_of[o.id] = &o;
  ReplayComparison c = Compare(first, second_of, show, RunsReason);
  c.observed_label = "first run";
  c.simulated_label = "second run";
  return c;
}

std::string ReplayComparisonText(const ReplayComparison& c) {
  char line[256];
  std::string s;
  std::snprintf(line, sizeof line, "jobs: %d observed, %d started in both runs\n", c.jobs, c.compared);
  s += line;
  if (c.compared == 0) return s;
  std::snprintf(line, sizeof line,
                "start difference: mean |d| %.1f s, max %.1f s; within 1 s: %d, within 3 s: %d of %d\n",
                c.mean_abs_start_diff, c.max_abs_start_diff, c.within_1s, c.within_3s, c.compared);
  s += line;
  const char* obs = c.observed_label.c_str();
  const char* sim = c.simulated_label.c_str();
  std::snprintf(line, sizeof line, "average JCT: %s %.1f s, %s %.1f s (%+.1f %%)\n", obs, c.avg_jct_observed, sim,
                c.avg_jct_simulated, c.jct_error * 100);
  s += line;
  auto job = [&](const ReplayJobDiff& d) {
    std::snprintf(line, sizeof line, "job %d (%s): %s %.1f s, %s %.1f s, %+.1f s", d.id, d.name.c_str(), obs,
                  d.observed_start, sim, d.simulated_start, d.start_diff);
    return line + (d.reason.empty() ? std::string("\n") : "; " + d.reason + "\n");
  };
  if (!c.worst.empty()) s += "jobs that differ most (" + c.simulated_label + " - " + c.observed_label + " start):\n";
  for (const ReplayJobDiff& d : c.worst) s += "  " + job(d);
  if (c.first_apart) s += "the runs part at " + job(*c.first_apart);
  return s;
}

}  // namespace gpulaunch::pool
