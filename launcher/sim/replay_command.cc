#include "launcher/sim/replay_command.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <set>
#include <thread>

#include "common/cluster_spec.h"
#include "common/file_write.h"
#include "common/strings.h"
#include "launcher/base/exit_codes.h"
#include "launcher/base/process.h"
#include "launcher/core/subcommand_parser.h"
#include "policies/pool/replay_compare.h"
#include "policies/pool/simulator.h"
#include "slurm/policy_slurm_side.h"
#include "slurm/sacct_export.h"

namespace po = boost::program_options;

namespace gpulaunch {
namespace {

using namespace gpulaunch::pool;

struct ReplayOptions {
  std::string trace, sacct, cluster, policy = "fifo-first-fit", quota, save;
  double time_scale = 1, reclaim_delay_s = -1, start_latency_s = 0, backfill_interval_s = -1;
  bool help = false;
};

const SubcommandParser& Parser() {
  static const SubcommandParser* parser = [] {
    auto* p = new SubcommandParser(
        "sim --replay",
        "(--trace FILE [--time-scale X] [--save FILE] | --sacct FILE) --cluster SPEC\n"
        "                     [--policy NAME] [--quota QUOTAS] [--reclaim-delay S] [--start-latency S]\n"
        "                     [--backfill-interval S]",
        "Checks the simulator against Slurm. With --trace, submits the trace's jobs to the running cluster at\n"
        "their arrival times as sleep jobs of their GPUs and run time (both divided by --time-scale; a job\n"
        "larger than a host takes whole hosts), waits for them, and reads what sacct recorded (--save keeps\n"
        "that export). With --sacct, reads an existing export instead (" +
            std::string(kSacctExportCommand) +
            ").\n"
            "Then simulates the same jobs (their recorded submissions, GPUs and run times, and time limits where\n"
            "recorded) on --cluster SPEC under --policy (default fifo-first-fit, the closest to Slurm's FIFO with\n"
            "a backfill pass every 30 s: docs/sim.md) and reports the mean and max |start difference|, the average JCT error and the\n"
            "jobs that differ most, with the reason where known. The simulator backfills only every\n"
            "--backfill-interval seconds (default: the cluster's bf_interval, else 30 s) and a preempting job waits\n"
            "--reclaim-delay (default: from gl-borrowed's GraceTime when the cluster has it, else 0).");
    p->Add()
      ("replay", "check the simulator against Slurm (this command)")
      ("trace", po::value<std::string>()->value_name("FILE"), "a job trace to submit")
      ("sacct", po::value<std::string>()->value_name("FILE"), "an existing sacct -P export")
      ("cluster", po::value<std::string>()->value_name("SPEC"), "the cluster's shape, e.g. \"leaf:2 node:2 gpu:4\"")
      ("policy", po::value<std::string>()->value_name("NAME"), "the simulator's policy (default fifo-first-fit)")
      ("quota", po::value<std::string>()->value_name("QUOTAS"), "per-team quotas, as for sim")
      ("time-scale", po::value<double>()->value_name("X"), "trace seconds per wall second (default 1)")
      ("reclaim-delay", po::value<double>()->value_name("S"), "seconds a preempting job waits, as for sim")
      ("start-latency", po::value<double>()->value_name("S"), "seconds from a start decision to the job running, as for sim")
      ("backfill-interval", po::value<double>()->value_name("S"), "how often Slurm's backfill runs")
      ("save", po::value<std::string>()->value_name("FILE"), "keep the sacct export of the submitted jobs");
    return p;
  }();
  return *parser;
}

StatusOr<ReplayOptions> Parse(const std::vector<std::string>& args) {
  const SubcommandParser& p = Parser();
  GL_ASSIGN_OR_RETURN(po::variables_map vm, p.Parse(args));
  ReplayOptions o;
  if (SubcommandParser::WantsHelp(vm)) {
    o.help = true;
    return o;
  }
  if (vm.count("trace")) o.trace = vm["trace"].as<std::string>();
  if (vm.count("sacct")) o.sacct = vm["sacct"].as<std::string>();
  if (o.trace.empty() == o.sacct.empty()) return p.Error("give --trace FILE (to submit) or --sacct FILE (recorded), one of them");
  if (!vm.count("cluster")) return p.Error("needs --cluster SPEC, the cluster's shape (e.g. \"leaf:2 node:2 gpu:4\")");
  o.cluster = vm["cluster"].as<std::string>();
  if (vm.count("policy")) o.policy = vm["policy"].as<std::string>();
  if (vm.count("quota")) o.quota = vm["quota"].as<std::string>();
  if (vm.count("save")) o.save = vm["save"].as<std::string>();
  if (vm.count("time-scale")) o.time_scale = vm["time-scale"].as<double>();
  if (!(o.time_scale > 0 && o.time_scale <= 1e6)) return p.Error("--time-scale must be above 0");
  if (vm.count("reclaim-delay")) o.reclaim_delay_s = vm["reclaim-delay"].as<double>();
  if (vm.count("backfill-interval")) o.backfill_interval_s = vm["backfill-interval"].as<double>();
  if (vm.count("start-latency")) o.start_latency_s = vm["start-latency"].as<double>();
  if (o.start_latency_s < 0 || o.start_latency_s > 1e6) return p.Error("--start-latency: seconds, 0 or more");
  if (vm.count("reclaim-delay") && (o.reclaim_delay_s < 0 || o.reclaim_delay_s > 1e6)) {
    return p.Error("--reclaim-delay: seconds, 0 or more");
  }
  if (!o.save.empty() && o.trace.empty()) return p.Error("--save keeps the export of submitted jobs: it needs --trace");
  return o;
}

// Slurm's bf_interval (SchedulerParameters), else its default 30 s.
double ClusterBackfillInterval() {
  const CapturedRun config = RunCaptured({"scontrol", "show", "config"}, EnvironmentWith({}), 10000);
  if (!config.Succeeded()) return 30;
  for (const std::string& line : Split(config.out, '\n')) {
    if (!StartsWith(line, "SchedulerParameters")) continue;
    const size_t at = line.find("bf_interval=");
    if (at == std::string::npos) break;
    const auto n = ParseInt(line.substr(at + 12, line.find_first_of(", ", at + 12) - at - 12));
    if (n && *n > 0) return static_cast<double>(*n);
  }
  return 30;
}

// The mean reclaim delay of the cluster's borrowed tier (gl-borrowed, as
// slurm-config --policy writes it), or -1 when it has none.
double ClusterReclaimDelay() {
  const CapturedRun p = RunCaptured({"scontrol", "-o", "show", "partition", "gl-borrowed"}, EnvironmentWith({}), 10000);
  const size_t at = p.out.find(" GraceTime=");
  if (!p.Succeeded() || at == std::string::npos) return -1;
  const auto grace = ParseInt(p.out.substr(at + 11, p.out.find(' ', at + 11) - at - 11));
  return grace && *grace >= 0 ? SlurmMeanReclaimDelayForGraceTime(static_cast<int>(*grace)) : -1;
}

// The trace's jobs submitted at their (scaled) arrival times; returns
// their sacct export once all have ended.
StatusOr<std::string> SubmitAndRecord(const std::vector<TraceJob>& trace, const ReplayOptions& o, int gpus_per_host) {
  std::vector<std::string> ids;
  auto cancel = [&ids] {
    if (!ids.empty()) {
      std::vector<std::string> argv = {"scancel"};
      argv.insert(argv.end(), ids.begin(), ids.end());
      RunCaptured(argv, EnvironmentWith({}), 30000);
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  double last_end = 0;
  for (const TraceJob& j : trace) {
    const double at = j.submit / o.time_scale, run = std::max(1.0, j.duration / o.time_scale);
    last_end = std::max(last_end, at) + run;
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                           std::chrono::duration<double>(at)));
    const int hosts = j.gpus <= gpus_per_host ? 1 : (j.gpus + gpus_per_host - 1) / gpus_per_host;
    if (hosts > 1 && j.gpus % gpus_per_host != 0) {
      cancel();
      return InvalidArgument("trace job " + std::to_string(j.id) + " (line " + std::to_string(j.line) + ") has " +
                             std::to_string(j.gpus) + " GPUs: more than a host's " + std::to_string(gpus_per_host) +
                             " and not whole hosts");
    }
    char sleep[64];
    std::snprintf(sleep, sizeof sleep, "exec sleep %.1f", run);
    const int limit_min = static_cast<int>(std::ceil((run + 30) / 60));  // a minute's grain, with slack
    const CapturedRun r = RunCaptured(
        {"sbatch", "--parsable", "-J", "gl-replay-" + std::to_string(j.id), "-o", "/dev/null", "-e", "/dev/null",
         "--time", std::to_string(limit_min), "-N", std::to_string(hosts),
         "--gres=gpu:" + std::to_string(hosts > 1 ? gpus_per_host : j.gpus), "--wrap", sleep},
        EnvironmentWith({}), 30000);
    const std::string id(Trim(Split(r.out, ';')[0]));
    if (!r.Succeeded() || !ParseInt(id)) {
      cancel();
      return FailedPrecondition("sbatch refused trace job " + std::to_string(j.id) + ": " + Excerpt(Trim(r.err), 200));
    }
    ids.push_back(id);
  }
  const std::string list = Join(ids, ",");
  const std::set<std::string> submitted(ids.begin(), ids.end());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(600 + static_cast<int>(4 * last_end));
  for (;;) {
    // This user's queue, not `squeue -j ids`: slurmctld forgets ended jobs
    // after MinJobAge, and asking for one it forgot is an error.
    const CapturedRun q = RunCaptured({"squeue", "-h", "-o", "%i", "--me"}, EnvironmentWith({}), 30000);
    bool waiting = !q.Succeeded();
    for (const std::string& id : Split(q.out, '\n')) waiting |= submitted.count(std::string(Trim(id))) > 0;
    if (!waiting) break;
    if (std::chrono::steady_clock::now() > deadline) {
      cancel();
      return FailedPrecondition("the replayed jobs did not all end in time; cancelled them");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  // slurmdbd records the ends a moment after slurmctld: until every job has one.
  std::string export_text;
  for (int attempt = 0; attempt < 60; ++attempt) {
    const CapturedRun a = RunCaptured({"sacct", "-P", "-X", "-D", "-o", "JobIDRaw,Submit,Start,End,State,AllocTRES,Timelimit",
                                       "-j", list},
                                      EnvironmentWith({}), 30000);
    if (!a.Succeeded()) return FailedPrecondition("sacct failed: " + Excerpt(Trim(a.err), 200));
    export_text = a.out;
    auto jobs = ParseSacctExport(export_text, "sacct");
    if (jobs.ok() && jobs->size() == ids.size() &&
        std::all_of(jobs->begin(), jobs->end(), [](const SacctJob& s) { return s.end >= 0; })) {
      return export_text;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return FailedPrecondition("sacct did not record every replayed job's end within 30 s");
}

struct Recorded {
  std::vector<TraceJob> trace;
  std::vector<ObservedRun> observed;
  int skipped = 0;  // never started, or no GPUs
};

// The export as a trace (recorded submissions, GPUs, last run's length and
// time limit) and as what happened, on the clock of the first submission.
Recorded FromExport(std::vector<SacctJob> jobs) {
  Recorded out;
  std::stable_sort(jobs.begin(), jobs.end(), [](const SacctJob& a, const SacctJob& b) { return a.submit < b.submit; });
  const double t0 = jobs.empty() ? 0 : jobs.front().submit;
  for (const SacctJob& s : jobs) {
    if (s.gpus <= 0 || s.start < 0 || s.end < 0) {
      ++out.skipped;
      continue;
    }
    TraceJob j;
    j.id = static_cast<int>(out.trace.size());
    j.submit = s.submit - t0;
    j.duration = std::max(1.0, s.last_run_s);
    j.gpus = s.gpus;
    j.limit = s.limit_s;
    j.line = s.line;
    out.trace.push_back(j);
    out.observed.push_back(ObservedRun{j.id, s.id, s.submit - t0, s.start - t0, s.end - t0, s.runs > 1});
  }
  return out;
}

int GpusPerHost(const GpuPool& pool) {
  int g = 0;
  for (const PoolHost& h : pool.hosts()) g = std::max(g, h.gpus);
  return g;
}

}  // namespace

bool WantsReplay(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--replay") != args.end();
}

int RunSimReplay(const std::vector<std::string>& args) {
  auto parsed = Parse(args);
  if (!parsed.ok()) return Fail(parsed.status());
  const ReplayOptions& o = *parsed;
  if (o.help) {
    std::cout << Parser().Help();
    return kExitOk;
  }
  auto spec = ParseClusterSpec(o.cluster);
  if (!spec.ok()) return Fail(InvalidArgument("sim --replay: --cluster: " + spec.status().message()));
  auto pool = GpuPool::FromSpec(*spec);
  if (!pool.ok()) return Fail(InvalidArgument("sim --replay: --cluster: " + pool.status().message()));
  QuotaBook quotas;
  if (!o.quota.empty()) {
    auto q = QuotaBook::Parse(o.quota);
    if (!q.ok()) return Fail(InvalidArgument("sim --replay: --quota: " + q.status().message()));
    quotas = *q;
  }
  auto config = PolicyConfig(o.policy, quotas);
  if (!config.ok()) return Fail(InvalidArgument("sim --replay: " + config.status().message()));
  config->grace_s = 0;  // Slurm preempts a job however long it ran
  if (quotas.enabled()) config->preempt = true;

  std::string export_text, origin;
  double backfill = o.backfill_interval_s, reclaim = o.reclaim_delay_s;
  if (!o.sacct.empty()) {
    auto text = ReadTextFile(o.sacct, "sacct export");
    if (!text.ok()) return Fail(text.status());
    export_text = *text;
    origin = o.sacct;
    if (backfill < 0) backfill = 30;
  } else {
    auto trace = LoadTrace(o.trace);
    if (!trace.ok()) return Fail(trace.status());
    if (backfill < 0) backfill = ClusterBackfillInterval();
    if (reclaim < 0) reclaim = ClusterReclaimDelay();
    std::cerr << "gpulaunch: sim --replay: submitting " << trace->size() << " jobs over "
              << (trace->empty() ? 0 : trace->back().submit / o.time_scale) << " s\n";
    auto recorded = SubmitAndRecord(*trace, o, GpusPerHost(*pool));
    if (!recorded.ok()) return Fail(recorded.status());
    export_text = *recorded;
    origin = "sacct";
    if (!o.save.empty()) {
      if (Status s = WriteFileAtomically(o.save, export_text, 0644); !s.ok()) return Fail(s);
    }
  }
  auto jobs = ParseSacctExport(export_text, origin);
  if (!jobs.ok()) return Fail(jobs.status());
  const Recorded rec = FromExport(*jobs);
  if (rec.trace.empty()) return Fail(InvalidArgument("sim --replay: " + origin + " holds no job that ran on GPUs"));
  SimSetup setup;
  const bool limits = std::all_of(rec.trace.begin(), rec.trace.end(), [](const TraceJob& j) { return j.limit > 0; });
  setup.estimates = limits ? EstimateMode::kUser : EstimateMode::kPerfect;
  setup.reclaim_delay_s = std::max(0.0, reclaim);
  setup.start_latency_s = o.start_latency_s;
  config->backfill_interval_s = backfill;  // Slurm backfills on a timer
  auto sim = Simulate(*pool, rec.trace, *config, o.policy, setup);
  if (!sim.ok()) return Fail(sim.status());
  const ReplayComparison c = CompareReplay(rec.observed, sim->outcomes, backfill);
  std::cout << "replay: " << origin << " against sim --policy " << o.policy << " on " << o.cluster << " ("
            << (limits ? "the jobs' time limits" : "exact run times") << "; start latency " << o.start_latency_s
            << " s, reclaim delay " << setup.reclaim_delay_s << " s, backfill interval " << backfill << " s)\n";
  if (rec.skipped > 0) std::cout << "skipped: " << rec.skipped << " jobs that never ran or had no GPUs\n";
  std::cout << ReplayComparisonText(c);
  return kExitOk;
}

}  // namespace gpulaunch
