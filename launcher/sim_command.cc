#include "launcher/sim_command.h"

#include <cstdio>
#include <iostream>

#include "common/file_write.h"
#include "common/json.h"
#include "common/strings.h"
#include "launcher/exit_codes.h"
#include "policies/pool/simulator.h"

namespace gpulaunch {
namespace {

using namespace gpulaunch::pool;

constexpr char kHelp[] =
    "usage: gpulaunch sim --trace FILE --cluster SPEC [--policy topology|fifo-first-fit|best-fit|all]\n"
    "                     [--teams N --quota TEAM:GUARANTEE/NOMINAL/BORROW[/LEND],...] [--grace S]\n"
    "                     [--checkpoint S]\n"
    "                     [--format table|json] [--out FILE]\n"
    "Replays a job trace (Tiresias, ElasticFlow or id,submit,duration,gpus[,team,priority] CSV) on a\n"
    "simulated pool (SPEC e.g. \"leaf:2 node:8 gpu:8\") under gpulaunch's policy (topology) and the baselines\n"
    "(fifo-first-fit; best-fit, Slurm-like without topology), all by default, in one run. --teams N deals the\n"
    "jobs round-robin to N teams (public traces have none); --quota gives the teams' quotas in that order.\n"
    "Preempted jobs start over, or with --checkpoint S resume from their last checkpoint (one every S seconds\n"
    "of work). Moving or resuming a job costs 120 s.\n";

struct SimOptions {
  std::string trace, cluster, policy = "all", format = "table", quota;
  std::optional<std::string> out;
  int teams = 0;
  double grace_s = 300;
  double checkpoint_s = 0;
  bool help = false;
};

StatusOr<SimOptions> Parse(const std::vector<std::string>& args) {
  SimOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> StatusOr<std::string> {
      if (i + 1 >= args.size()) return InvalidArgument("sim: " + a + " needs a value");
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      o.help = true;
    } else if (a == "--trace") {
      GL_ASSIGN_OR_RETURN(o.trace, value());
    } else if (a == "--cluster") {
      GL_ASSIGN_OR_RETURN(o.cluster, value());
    } else if (a == "--policy") {
      GL_ASSIGN_OR_RETURN(o.policy, value());
    } else if (a == "--format") {
      GL_ASSIGN_OR_RETURN(o.format, value());
      if (o.format != "table" && o.format != "json") return InvalidArgument("sim: --format " + o.format + ": table or json");
    } else if (a == "--out") {
      GL_ASSIGN_OR_RETURN(std::string v, value());
      o.out = v;
    } else if (a == "--quota") {
      GL_ASSIGN_OR_RETURN(o.quota, value());
    } else if (a == "--teams" || a == "--grace" || a == "--checkpoint") {
      GL_ASSIGN_OR_RETURN(std::string v, value());
      const auto n = ParseInt(v);
      if (!n || *n < 0 || *n > 100000) return InvalidArgument("sim: " + a + " " + v + ": give a whole number");
      if (a == "--teams") o.teams = static_cast<int>(*n);
      else if (a == "--grace") o.grace_s = static_cast<double>(*n);
      else o.checkpoint_s = static_cast<double>(*n);
    } else {
      return InvalidArgument("sim: unknown option '" + a + "'; see 'gpulaunch sim --help'");
    }
  }
  if (o.help) return o;
  if (o.trace.empty() || o.cluster.empty()) return InvalidArgument("sim needs --trace FILE and --cluster SPEC");
  if (!o.quota.empty() && o.teams == 0) return InvalidArgument("sim: --quota needs --teams N (which team is which)");
  return o;
}

std::string Hours(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s >= 3600 ? "%.2f h" : "%.0f s", s >= 3600 ? s / 3600 : s);
  return buf;
}

Json ReportJson(const SimReport& r) {
  Json j = Json::Object();
  j.Set("policy", r.policy);
  j.Set("jobs", r.jobs);
  j.Set("dropped", r.dropped);
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
  j.Set("preemptions", r.preemptions);
  j.Set("migrations", r.migrations);
  j.Set("gpu_hours_lost", r.gpu_hours_lost);
  j.Set("guarantee_violations", r.guarantee_violations);
  j.Set("decision_us_avg", r.decision_us_avg);
  j.Set("decision_us_max", r.decision_us_max);
  j.Set("passes", r.passes);
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
  for (const JobOutcome& o : r.outcomes) jct.Push(o.end - o.submit);
  j.Set("jct_s", jct);
  return j;
}

}  // namespace

int RunSimCommand(const std::vector<std::string>& args) {
  auto parsed = Parse(args);
  if (!parsed.ok()) {
    std::cerr << "gpulaunch: " << parsed.status().message() << "\n";
    return kExitUsage;
  }
  const SimOptions& o = *parsed;
  if (o.help) {
    std::cout << kHelp;
    return kExitOk;
  }
  auto pool = GpuPool::FromSpec(o.cluster);
  auto jobs = LoadTrace(o.trace);
  auto quotas = o.quota.empty() ? StatusOr<QuotaBook>(QuotaBook()) : QuotaBook::Parse(o.quota);
  for (const Status& s : {pool.status(), jobs.status(), quotas.status()}) {
    if (!s.ok()) {
      std::cerr << "gpulaunch: sim: " << s.message() << "\n";
      return kExitUsage;
    }
  }
  if (quotas->enabled() && quotas->teams() != o.teams) {
    std::cerr << "gpulaunch: sim: --quota names " << quotas->teams() << " teams, --teams says " << o.teams << "\n";
    return kExitUsage;
  }
  if (o.teams > 0) AssignTeams(*jobs, o.teams);
  const std::vector<std::string> names =
      o.policy == "all" ? std::vector<std::string>{"topology", "fifo-first-fit", "best-fit"} : Split(o.policy, ',');
  std::vector<SimReport> reports;
  for (const std::string& name : names) {
    auto config = PolicyConfig(name, *quotas);
    if (!config.ok()) {
      std::cerr << "gpulaunch: sim: " << config.status().message() << "\n";
      return kExitUsage;
    }
    config->grace_s = o.grace_s;
    SimJobModel model;
    model.checkpoint_interval_s = o.checkpoint_s;
    auto r = Simulate(*pool, *jobs, *config, name, model);
    if (!r.ok()) {
      std::cerr << "gpulaunch: sim: " << r.status().message() << "\n";
      return 1;
    }
    reports.push_back(std::move(r).value());
  }
  Json root = Json::Object();
  root.Set("format", "gpulaunch-sim/v1");
  root.Set("trace", o.trace);
  root.Set("cluster", o.cluster);
  root.Set("gpus", pool->total_gpus());
  root.Set("teams", o.teams);
  root.Set("quota", o.quota);
  root.Set("checkpoint_s", o.checkpoint_s);
  Json list = Json::Array();
  for (const SimReport& r : reports) list.Push(ReportJson(r));
  root.Set("policies", list);
  const std::string json = root.Write() + "\n";
  if (o.out) {
    if (Status s = WriteFileAtomically(*o.out, json); !s.ok()) {
      std::cerr << "gpulaunch: sim: " << s.message() << "\n";
      return 1;
    }
  }
  if (o.format == "json") {
    std::cout << json;
    return kExitOk;
  }
  std::printf("DECISION us: mean/max wall time of one scheduling pass. STRANDED: time-average free GPUs while a\n"
              "queued job that fits by count cannot be placed. The simulator uses each job's trace duration as its\n"
              "run-time estimate (a perfect user time limit), for backfill and for the topology policy's order.\n");
  const std::string teams =
      o.teams ? "teams: " + std::to_string(o.teams) + " round-robin" + (o.quota.empty() ? "" : ", quotas " + o.quota)
              : "no teams";
  const std::string resume = o.checkpoint_s > 0 ? "preempted jobs resume from a checkpoint every " +
                                                      std::to_string(static_cast<long>(o.checkpoint_s)) + " s"
                                                : "preempted jobs start over";
  std::printf("gpulaunch sim: %s (%d jobs), cluster \"%s\" (%d GPUs), %s; %s\n", o.trace.c_str(),
              reports.front().jobs, o.cluster.c_str(), pool->total_gpus(), teams.c_str(), resume.c_str());
  std::printf("%-15s %9s %9s %9s %9s %9s %6s %9s %10s %11s %8s %8s %10s %6s %12s\n", "POLICY", "AVG JCT", "P95 JCT",
              "AVG WAIT", "P95 WAIT", "MAX WAIT", "UTIL", "STRANDED", "HOSTS/MIN", "LEAVES/MIN", "PREEMPT", "MIGRATE",
              "GPU-H LOST", "VIOL", "DECISION us");
  for (const SimReport& r : reports) {
    std::printf("%-15s %9s %9s %9s %9s %9s %5.1f%% %9.2f %10.3f %11.3f %8d %8d %10.1f %6d %6.1f/%-5.0f\n",
                r.policy.c_str(), Hours(r.avg_jct_s).c_str(), Hours(r.p95_jct_s).c_str(), Hours(r.avg_wait_s).c_str(),
                Hours(r.p95_wait_s).c_str(), Hours(r.max_wait_s).c_str(), r.utilization * 100, r.stranded_gpus, r.avg_hosts_over_min,
                r.avg_leaves_over_min, r.preemptions, r.migrations, r.gpu_hours_lost, r.guarantee_violations, r.decision_us_avg,
                r.decision_us_max);
  }
  if (reports.front().dropped) {
    std::printf("%d jobs need more GPUs than the cluster has and were left out\n", reports.front().dropped);
  }
  return kExitOk;
}

}  // namespace gpulaunch
