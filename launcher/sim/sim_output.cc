#include "launcher/sim/sim_output.h"

#include <cstdio>

namespace gpulaunch {
namespace {

using pool::SimReport;

std::string Hours(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s >= 3600 ? "%.2f h" : "%.0f s", s >= 3600 ? s / 3600 : s);
  return buf;
}

// The job --explain tells of: its number, trace line, size, run time and limit.
std::string ExplainedJob(const SimRunInfo& info, const SimReport& r) {
  if (!info.jobs) return "?";
  for (const pool::TraceJob& j : *info.jobs) {
    if (r.explain.empty() || j.id != info.explain) continue;
    return std::to_string(j.id) + " (trace line " + std::to_string(j.line) + ", " + std::to_string(j.gpus) +
           " GPUs, runs " + Hours(j.duration) + (r.estimates == "user" ? ", limit " + Hours(j.limit) : "") + ")";
  }
  return "?";
}

Json RulesJson(const pool::RuleCounts& r) {
  Json j = Json::Object();
  j.Set("gpus_held_twice", r.gpus_held_twice);
  j.Set("user_class_conflicts", r.user_class_conflicts);
  j.Set("constraint_breaks", r.constraint_breaks);
  j.Set("reservation_intrusions", r.reservation_intrusions);
  j.Set("quota_breaks", r.quota_breaks);
  j.Set("unhealthy_placements", r.unhealthy_placements);
  return j;
}

Json ReportJson(const SimReport& r) {
  Json j = Json::Object();
  j.Set("policy", r.policy);
  j.Set("estimates", r.estimates);
  j.Set("jobs", r.jobs);
  j.Set("dropped", r.dropped);
  j.Set("timed_out", r.timed_out);
  j.Set("never_started", r.never_started);
  j.Set("avg_jct_s", r.avg_jct_s);
  j.Set("p95_jct_s", r.p95_jct_s);
  j.Set("avg_wait_s", r.avg_wait_s);
  j.Set("p95_wait_s", r.p95_wait_s);
  j.Set("max_wait_s", r.max_wait_s);
  j.Set("utilization", r.utilization);
  j.Set("stranded_gpus", r.stranded_gpus);
  j.Set("makespan_s", r.makespan_s);
  j.Set("avg_hosts_over_min", r.avg_hosts_over_min);
  j.Set("avg_leaves_over_min", r.avg_leaves_over_min);
  j.Set("jobs_over_min_leaves", r.jobs_over_min_leaves);
  j.Set("reached_limit", r.reached_limit);
  j.Set("gpu_hours_cut", r.gpu_hours_cut);
  j.Set("preemptions", r.preemptions);
  j.Set("checkpointed_preemptions", r.checkpointed_preemptions);
  j.Set("migrations", r.migrations);
  j.Set("jobs_lost_to_failures", r.jobs_lost_to_failures);
  j.Set("gpu_hours_lost", r.gpu_hours_lost);
  j.Set("guarantee_violations", r.guarantee_violations);
  j.Set("rules", RulesJson(r.rules));
  j.Set("decision_us_avg", r.decision_us_avg);
  j.Set("decision_us_max", r.decision_us_max);
  j.Set("passes", r.passes);
  if (r.cache_hits + r.cache_misses > 0) {
    j.Set("cache_hits", static_cast<double>(r.cache_hits));
    j.Set("cache_misses", static_cast<double>(r.cache_misses));
    j.Set("cache_hit_rate", static_cast<double>(r.cache_hits) / static_cast<double>(r.cache_hits + r.cache_misses));
    j.Set("staging_hours", r.staging_hours);
  }
  if (!r.explain.empty()) {
    Json lines = Json::Array();
    for (const std::string& l : r.explain) lines.Push(l);
    j.Set("explain", lines);
  }
  // At most ~500 points of the busy-GPU curve, and every job's JCT.
  Json busy = Json::Array();
  const size_t step = std::max<size_t>(1, r.busy.size() / 500);
  for (size_t i = 0; i < r.busy.size(); i += step) {
    Json p = Json::Array();
    p.Push(r.busy[i].first);
    p.Push(r.busy[i].second);
    busy.Push(p);
  }
  j.Set("busy", busy);
  Json jct = Json::Array();
  for (const pool::JobOutcome& o : r.outcomes)
    if (!o.timed_out) jct.Push(o.end - o.submit);
  j.Set("jct_s", jct);
  return j;
}

}  // namespace

const char* const kUserLimitModel =
    "the trace's limit column, else drawn per job (seed 1): 10% ran until their limit (limit = run time), 20% ask "
    "the site maximum of 7 days, the rest run time x log-uniform [1, 4] rounded up to 15/30 min, 1-12 h, 1-5 days, 7 "
    "days (Tsafrir, Etsion and Feitelson, JSSPP 2005; Mu'alem and Feitelson, IEEE TPDS 2001)";

Json SimJson(const SimRunInfo& info, int teams, const std::vector<SimReport>& reports) {
  Json root = Json::Object();
  root.Set("format", "gpulaunch-sim/v1");
  root.Set("trace", info.source);
  root.Set("cluster", info.cluster);
  root.Set("gpus", info.gpus);
  root.Set("teams", teams);
  root.Set("quota", info.quota);
  root.Set("checkpoint_s", info.checkpoint_s);
  root.Set("max_wait_s", info.max_wait_s);
  root.Set("reservations", info.reservations);
  root.Set("failures", info.failures);
  root.Set("data_cache", info.data_cache);
  root.Set("user_limit_model", kUserLimitModel);
  Json list = Json::Array();
  for (const SimReport& r : reports) list.Push(ReportJson(r));
  root.Set("policies", list);
  return root;
}

void PrintSimTable(const SimRunInfo& info, const std::vector<SimReport>& reports) {
  bool user = false;
  for (const SimReport& r : reports) user = user || r.estimates == "user";
  std::printf("DECISION us: mean/max wall time of one scheduling pass. STRANDED: time-average free GPUs while a\n"
              "queued job that fits by count cannot be placed. RULES: hard rules found broken by the audit after\n"
              "every pass (GPUs held twice, a user's priority classes sharing a host, template constraints,\n"
              "reservations, quota limits, placements on unhealthy hosts). ESTIM: what the policy knew of run times:\n"
              "perfect (the trace's), user (time limits), none. LIMIT: runs ended by their time limit.\n");
  if (user) std::printf("User time limits: %s.\n", kUserLimitModel);
  const std::string resume = info.checkpoint_s > 0 ? "preempted jobs resume from a checkpoint every " +
                                                         std::to_string(static_cast<long>(info.checkpoint_s)) + " s"
                                                   : "preempted jobs start over";
  // Suspensions by rank (2D-LAS, size) checkpoint at that moment whatever --checkpoint says.
  bool suspends = false;
  for (const SimReport& r : reports) suspends = suspends || r.checkpointed_preemptions > 0;
  std::printf("gpulaunch sim: %s (%d jobs), cluster \"%s\" (%d GPUs), %s; %s%s%s%s\n", info.source.c_str(),
              reports.front().jobs, info.cluster.c_str(), info.gpus, info.teams.c_str(), resume.c_str(),
              suspends ? " (jobs suspended for higher-ranked ones keep their work)" : "",
              info.reservations.empty() ? "" : ("; reservations " + info.reservations).c_str(),
              info.failures.empty() ? "" : ("; host failures " + info.failures).c_str());
  std::printf("%-24s %-7s %9s %9s %9s %9s %9s %6s %9s %10s %11s %8s %8s %6s %10s %6s %6s %12s\n", "POLICY", "ESTIM", "AVG JCT",
              "P95 JCT", "AVG WAIT", "P95 WAIT", "MAX WAIT", "UTIL", "STRANDED", "HOSTS/MIN", "LEAVES/MIN", "PREEMPT",
              "MIGRATE", "LIMIT", "GPU-H LOST", "VIOL", "RULES", "DECISION us");
  for (const SimReport& r : reports) {
    std::printf("%-24s %-7s %9s %9s %9s %9s %9s %5.1f%% %9.2f %10.3f %11.3f %8d %8d %6d %10.1f %6d %6d %6.1f/%-5.0f\n",
                r.policy.c_str(), r.estimates.c_str(), Hours(r.avg_jct_s).c_str(), Hours(r.p95_jct_s).c_str(), Hours(r.avg_wait_s).c_str(),
                Hours(r.p95_wait_s).c_str(), Hours(r.max_wait_s).c_str(), r.utilization * 100, r.stranded_gpus,
                r.avg_hosts_over_min, r.avg_leaves_over_min, r.preemptions, r.migrations, r.reached_limit, r.gpu_hours_lost,
                r.guarantee_violations, r.rules.total(), r.decision_us_avg, r.decision_us_max);
  }
  if (reports.front().dropped) {
    std::printf("%d jobs need more GPUs than the cluster has and were left out\n", reports.front().dropped);
  }
  for (const SimReport& r : reports) {
    if (r.never_started) {
      std::printf("%s: %d jobs were still waiting at the end and can never start (hosts gone, or quotas)\n",
                  r.policy.c_str(), r.never_started);
    }
    if (r.jobs_lost_to_failures) {
      std::printf("%s: %d runs ended by a bad host and were requeued\n", r.policy.c_str(), r.jobs_lost_to_failures);
    }
    if (r.timed_out) std::printf("%s: %d jobs timed out in the queue (not in the JCT and wait figures)\n", r.policy.c_str(), r.timed_out);
    if (r.cache_hits + r.cache_misses > 0) {
      std::printf("%s (%s): dataset cache hit rate %.1f%% (%ld of %ld host placements), %.1f h spent copying datasets\n",
                  r.policy.c_str(), r.estimates.c_str(),
                  100.0 * static_cast<double>(r.cache_hits) / static_cast<double>(r.cache_hits + r.cache_misses),
                  r.cache_hits, r.cache_hits + r.cache_misses, r.staging_hours);
    }
  }
  for (const SimReport& r : reports) {
    if (r.explain.empty()) continue;
    std::printf("\nWhy job %s: %s, estimates %s (hours since the first submission)\n", ExplainedJob(info, r).c_str(),
                r.policy.c_str(), r.estimates.c_str());
    for (const std::string& line : r.explain) std::printf("  %s\n", line.c_str());
  }
}

}  // namespace gpulaunch
