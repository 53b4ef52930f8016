#include "launcher/sim/replay_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>

#include "common/cluster_spec.h"
#include "common/file_write.h"
#include "common/strings.h"
#include "launcher/base/exit_codes.h"
#include "launcher/core/subcommand_parser.h"
#include "launcher/sim/replay_export.h"
#include "launcher/sim/replay_submit.h"
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
  std::string against;  // a second run's export: compare the two runs, simulate nothing
  double time_scale = 1, reclaim_delay_s = -1, start_latency_s = 0, backfill_interval_s = -1, requeue_hold_s = -1;
  double grace_time_s = -1;  // gl-borrowed's GraceTime; -1: the cluster's (live), else 0
  double cpu_billing = -1;   // the teams' tiers' CPU billing weight; -1: the cluster's (live), else 0
  int show = 5;
  std::optional<double> backfill_last_s;
  std::optional<double> wait_idle_s;  // unset: two backfill intervals + 2 s
  std::optional<bool> backfill;  // the simulator's backfill; unset: the policy's
  bool help = false;
};

const SubcommandParser& ReplayParser() {
  static const SubcommandParser* parser = [] {
    auto* p = new SubcommandParser(
        "sim --replay",
        "(--trace FILE [--time-scale X] [--save FILE] | --sacct FILE) --cluster SPEC\n"
        "                     [--policy NAME] [--quota QUOTAS] [--grace-time S] [--cpu-billing W]\n"
        "                     [--reclaim-delay S] [--start-latency S]\n"
        "                     [--backfill-interval S] [--requeue-hold S] [--backfill on|off]\n"
        "                     [--backfill-last S] [--wait-idle S] [--show N]\n"
        "       gpulaunch sim --replay (--trace FILE --cluster SPEC [--quota QUOTAS] | --sacct FILE) --against FILE\n"
        "                     [--show N]",
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
            "for its victims: with gl-borrowed's GraceTime 0 (--grace-time; default: the cluster's when live, else 0)\n"
            "--reclaim-delay seconds (default: the cluster's mean, else 0); with a GraceTime, until slurmctld's\n"
            "time-limit pass (every 30 s, in the phase of the run's first kill) at least GraceTime after the\n"
            "preemption, plus --reclaim-delay (default 0). A requeued job may start again --requeue-hold seconds\n"
            "after its kill (default: the cluster's AuthInfo cred_expire, else 120). A job counts against its team's\n"
            "nominal as max(GPUs, CPUs x --cpu-billing) (the teams' partitions' TRESBillingWeights CPU weight;\n"
            "default: the cluster's when live, else 0: GPUs alone).\n"
            "With --quota (the pool's policy, as slurm-config --policy applied it), each job is of the team its\n"
            "trace's team column numbers (0 = the first team of --quota) and is submitted with --account=TEAM; an\n"
            "export's jobs are of the team their Account names. Before the first submission, --trace waits until\n"
            "the cluster's queue has been empty --wait-idle seconds (default: two backfill intervals + 2 s, after\n"
            "which Slurm's backfill timer starts at the first submission, as the simulator's does); 0 submits at\n"
            "once and takes the timer's phase from sdiag's last backfill cycle.\n"
            "--against FILE compares the run (submitted now, or --sacct) with another run of the same trace\n"
            "(an export of the same jobs: their GPUs, and submissions within 5 s) and simulates nothing: how far\n"
            "Slurm is from itself, the floor under any simulator's difference (docs/sim.md).");
    p->Add()
      ("replay", "check the simulator against Slurm (this command)")
      ("trace", po::value<std::string>()->value_name("FILE"), "a job trace to submit")
      ("sacct", po::value<std::string>()->value_name("FILE"), "an existing sacct -P export")
      ("cluster", po::value<std::string>()->value_name("SPEC"), "the cluster's shape, e.g. \"leaf:2 node:2 gpu:4\"")
      ("policy", po::value<std::string>()->value_name("NAME"), "the simulator's policy (default fifo-first-fit)")
      ("quota", po::value<std::string>()->value_name("QUOTAS"), "per-team quotas, as for sim")
      ("time-scale", po::value<double>()->value_name("X"), "trace seconds per wall second (default 1)")
      ("reclaim-delay", po::value<double>()->value_name("S"), "seconds a preempting job waits, as for sim")
      ("grace-time", po::value<double>()->value_name("S"), "gl-borrowed's GraceTime in the recorded run")
      ("cpu-billing", po::value<double>()->value_name("W"), "the teams' tiers' billing weight of a CPU in the recorded run")
      ("start-latency", po::value<double>()->value_name("S"), "seconds from a start decision to the job running, as for sim")
      ("backfill-interval", po::value<double>()->value_name("S"), "how often Slurm's backfill runs")
      ("requeue-hold", po::value<double>()->value_name("S"), "seconds a requeued job waits before it may start again")
      ("backfill", po::value<std::string>()->value_name("on|off"), "the simulator backfills (default: as the policy does)")
      ("backfill-last", po::value<double>()->value_name("S"), "when Slurm's backfill last ran, in s from the first submission")
      ("wait-idle", po::value<double>()->value_name("S"), "seconds of an empty queue to wait for before submitting")
      ("show", po::value<int>()->value_name("N"), "how many of the jobs that differ most to list (default 5)")
      ("save", po::value<std::string>()->value_name("FILE"), "keep the sacct export of the submitted jobs")
      ("against", po::value<std::string>()->value_name("FILE"), "another run's export: compare the two runs");
    return p;
  }();
  return *parser;
}

StatusOr<ReplayOptions> ParseReplayOptions(const std::vector<std::string>& args) {
  const SubcommandParser& p = ReplayParser();
  GL_ASSIGN_OR_RETURN(po::variables_map vm, p.Parse(args));
  ReplayOptions o;
  if (SubcommandParser::WantsHelp(vm)) {
    o.help = true;
    return o;
  }
  if (vm.count("trace")) o.trace = vm["trace"].as<std::string>();
  if (vm.count("sacct")) o.sacct = vm["sacct"].as<std::string>();
  if (o.trace.empty() == o.sacct.empty()) return p.Error("give --trace FILE (to submit) or --sacct FILE (recorded), one of them");
  // Comparing two exports needs no cluster: nothing is submitted or simulated.
  if (vm.count("cluster")) {
    o.cluster = vm["cluster"].as<std::string>();
  } else if (!(vm.count("against") && !o.sacct.empty())) {
    return p.Error("needs --cluster SPEC, the cluster's shape (e.g. \"leaf:2 node:2 gpu:4\")");
  }
  if (vm.count("policy")) o.policy = vm["policy"].as<std::string>();
  if (vm.count("quota")) o.quota = vm["quota"].as<std::string>();
  if (vm.count("save")) o.save = vm["save"].as<std::string>();
  if (vm.count("time-scale")) o.time_scale = vm["time-scale"].as<double>();
  if (!(o.time_scale > 0 && o.time_scale <= 1e6)) return p.Error("--time-scale must be above 0");
  if (vm.count("reclaim-delay")) o.reclaim_delay_s = vm["reclaim-delay"].as<double>();
  if (vm.count("cpu-billing")) {
    o.cpu_billing = vm["cpu-billing"].as<double>();
    if (!(o.cpu_billing >= 0 && o.cpu_billing <= 1e6)) return p.Error("--cpu-billing: a weight, 0 or more");
  }
  if (vm.count("grace-time")) {
    o.grace_time_s = vm["grace-time"].as<double>();
    if (!(o.grace_time_s >= 0 && o.grace_time_s <= 1e6)) return p.Error("--grace-time: seconds, 0 or more");
  }
  if (vm.count("backfill-interval")) o.backfill_interval_s = vm["backfill-interval"].as<double>();
  if (vm.count("start-latency")) o.start_latency_s = vm["start-latency"].as<double>();
  if (vm.count("show")) o.show = vm["show"].as<int>();
  if (vm.count("backfill")) {
    const std::string b = vm["backfill"].as<std::string>();
    if (b != "on" && b != "off") return p.Error("--backfill " + b + ": on or off");
    o.backfill = b == "on";
  }
  if (vm.count("backfill-last")) {
    o.backfill_last_s = vm["backfill-last"].as<double>();
    if (!std::isfinite(*o.backfill_last_s) || std::fabs(*o.backfill_last_s) > 1e9) {
      return p.Error("--backfill-last: seconds from the first submission (negative: before it)");
    }
  }
  if (vm.count("wait-idle")) {
    o.wait_idle_s = vm["wait-idle"].as<double>();
    if (!(*o.wait_idle_s >= 0 && *o.wait_idle_s <= 86400)) return p.Error("--wait-idle: seconds, 0 to 86400");
    if (o.trace.empty()) return p.Error("--wait-idle waits before submitting: it needs --trace");
  }
  if (o.show < 0 || o.show > 1000000) return p.Error("--show: how many jobs to list, 0 or more");
  if (vm.count("requeue-hold")) o.requeue_hold_s = vm["requeue-hold"].as<double>();
  if (vm.count("requeue-hold") && !(o.requeue_hold_s >= 0 && o.requeue_hold_s <= 1e6)) {
    return p.Error("--requeue-hold: seconds, 0 or more");
  }
  if (o.start_latency_s < 0 || o.start_latency_s > 1e6) return p.Error("--start-latency: seconds, 0 or more");
  if (vm.count("reclaim-delay") && (o.reclaim_delay_s < 0 || o.reclaim_delay_s > 1e6)) {
    return p.Error("--reclaim-delay: seconds, 0 or more");
  }
  if (!o.save.empty() && o.trace.empty()) return p.Error("--save keeps the export of submitted jobs: it needs --trace");
  if (vm.count("against")) {
    o.against = vm["against"].as<std::string>();
    for (const char* sim : {"policy", "reclaim-delay", "grace-time", "cpu-billing", "start-latency", "backfill-interval", "requeue-hold", "backfill",
                            "backfill-last"}) {
      if (vm.count(sim)) {
        return p.Error(std::string("--") + sim + " sets up the simulation; --against compares two runs and simulates "
                       "nothing: drop one of them");
      }
    }
  }
  return o;
}

std::string Seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", s);
  return text;
}

std::string Number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

// The report's words for how victims are reclaimed.
std::string ReclaimText(const ReclaimTiming& r, const std::string& phase_from) {
  if (!r.passes()) {
    return "reclaim delay " + Seconds(r.delay_s) + (phase_from.empty() ? "" : " (" + phase_from + ")");
  }
  return "GraceTime " + Seconds(r.grace_time_s) + ", victims killed at the " + Seconds(r.pass_period_s) +
         " passes (one at " + Seconds(r.pass_at_s) + ": " + phase_from + ") and free " + Seconds(r.delay_s) + " later";
}

int GpusPerHost(const GpuPool& pool) {
  int g = 0;
  for (const PoolHost& h : pool.hosts()) g = std::max(g, h.gpus);
  return g;
}

// The replay's timing: given, or (-1) to be read from the cluster, else
// Slurm's defaults.
struct ReplayTiming {
  double backfill_s, reclaim_s, hold_s, grace_s, cpu_billing;
  double last_backfill_epoch;  // sdiag's last backfill cycle, unless the timer was left to poll; -1: none
};

// Submits the trace to the running cluster (after waiting for it to go
// quiet) and returns sacct's export; fills in the timing the cluster says.
StatusOr<std::string> RecordLive(const ReplayOptions& o, const GpuPool& pool, const QuotaBook& quotas,
                                 ReplayTiming& timing) {
  GL_ASSIGN_OR_RETURN(std::vector<TraceJob> trace, LoadTrace(o.trace));
  const ClusterTiming cluster = ReadClusterTiming();
  const double every = timing.backfill_s < 0 ? cluster.timing.backfill_interval_s : timing.backfill_s;
  // After a cycle Slurm's backfill sleeps a whole interval before it looks
  // again; only then, with nothing changed, does it poll every second. Two
  // intervals after the last job it is most likely polling (background
  // changes can keep its grid alive: docs/sim.md), and the first submission
  // starts its next cycle, as the simulator's does by default. Else the
  // timer's phase comes from the last cycle sdiag recorded.
  const double wait = o.wait_idle_s.value_or(2 * every + 2);
  bool polling = false;
  if (wait > 0) {
    std::cerr << "gpulaunch: sim --replay: waiting for the cluster's queue to stay empty for " << wait << " s\n";
    const bool quiet = WaitForQuietCluster(wait, wait + 120);
    if (!quiet) std::cerr << "gpulaunch: sim --replay: the cluster did not go idle\n";
    polling = quiet && wait >= 2 * every;
  }
  if (!polling) {
    timing.last_backfill_epoch = ReadLastBackfillEpoch();
    std::cerr << "gpulaunch: sim --replay: Slurm's backfill timer is taken to run on from its last cycle (sdiag)\n";
  }
  if (!cluster.answered) std::cerr << "gpulaunch: sim --replay: scontrol did not answer; Slurm's default timing assumed\n";
  if (timing.backfill_s < 0) timing.backfill_s = cluster.timing.backfill_interval_s;
  if (timing.grace_s < 0) timing.grace_s = cluster.timing.grace_time_s;
  // With a GraceTime the wait is the passes' (ReclaimOfRun); the mean delay
  // is the whole wait only with GraceTime 0.
  if (timing.reclaim_s < 0 && timing.grace_s <= 0) timing.reclaim_s = cluster.timing.reclaim_delay_s;
  if (timing.cpu_billing < 0) timing.cpu_billing = cluster.timing.tier_cpu_billing;
  if (timing.hold_s < 0) timing.hold_s = cluster.timing.requeue_hold_s;
  ReplaySubmission how;
  how.time_scale = o.time_scale;
  how.gpus_per_host = GpusPerHost(pool);
  for (int t = 0; t < quotas.teams(); ++t) how.accounts.push_back(quotas.quota(t).team);
  std::cerr << "gpulaunch: sim --replay: submitting " << trace.size() << " jobs over "
            << (trace.empty() ? 0 : trace.back().submit / o.time_scale) << " s\n";
  GL_ASSIGN_OR_RETURN(std::string export_text, SubmitAndRecord(trace, how));
  if (!o.save.empty()) GL_RETURN_IF_ERROR(WriteFileAtomically(o.save, export_text));
  return export_text;
}

// --against: the run against another run of the same jobs (their accounts
// may differ: each run may make its own).
int CompareWithRun(const RecordedJobs& rec, const std::string& origin, const ReplayOptions& o) {
  auto text = ReadTextFile(o.against, "sacct export");
  if (!text.ok()) return Fail(text.status());
  auto jobs = ParseSacctExport(*text, o.against);
  if (!jobs.ok()) return Fail(jobs.status());
  auto other = RecordedFromExport(*jobs, QuotaBook(), o.against);
  if (!other.ok()) return Fail(other.status());
  if (Status same = SameJobs(rec, origin, *other, o.against); !same.ok()) {
    return Fail(InvalidArgument("sim --replay --against: " + same.message()));
  }
  const ReplayComparison c = CompareRuns(rec.observed, other->observed, o.show);
  std::cout << "replay: " << origin << " against " << o.against
            << " (two of Slurm's runs of the same jobs: how far Slurm is from itself)\n";
  if (rec.skipped > 0 || other->skipped > 0) {
    std::cout << "skipped: " << rec.skipped << " and " << other->skipped << " jobs that never ran or had no GPUs\n";
  }
  std::cout << ReplayComparisonText(c);
  return kExitOk;
}

}  // namespace

bool WantsReplay(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--replay") != args.end();
}

int RunSimReplay(const std::vector<std::string>& args) {
  auto parsed = ParseReplayOptions(args);
  if (!parsed.ok()) return Fail(parsed.status());
  const ReplayOptions& o = *parsed;
  if (o.help) {
    std::cout << ReplayParser().Help();
    return kExitOk;
  }
  StatusOr<GpuPool> pool = GpuPool();
  if (!o.cluster.empty()) {
    auto spec = ParseClusterSpec(o.cluster);
    if (!spec.ok()) return Fail(InvalidArgument("sim --replay: --cluster: " + spec.status().message()));
    pool = GpuPool::FromSpec(*spec);
    if (!pool.ok()) return Fail(InvalidArgument("sim --replay: --cluster: " + pool.status().message()));
  }
  QuotaBook quotas;
  if (!o.quota.empty()) {
    auto q = QuotaBook::Parse(o.quota);
    if (!q.ok()) return Fail(InvalidArgument("sim --replay: --quota: " + q.status().message()));
    quotas = *q;
  }
  auto config = PolicyConfig(o.policy, quotas);
  if (!config.ok()) return Fail(InvalidArgument("sim --replay: " + config.status().message()));
  config->grace_s = 0;  // Slurm preempts a job however long it ran
  if (quotas.enabled()) {
    config->preempt = true;
    config->slurm_tiers = true;  // the pool's partitions, as slurm-config --policy makes them
  }

  std::string export_text, origin;
  ReplayTiming timing{o.backfill_interval_s, o.reclaim_delay_s, o.requeue_hold_s, o.grace_time_s, o.cpu_billing, -1};
  if (!o.sacct.empty()) {
    auto text = ReadTextFile(o.sacct, "sacct export");
    if (!text.ok()) return Fail(text.status());
    export_text = *text;
    origin = o.sacct;
  } else {
    auto live = RecordLive(o, *pool, quotas, timing);
    if (!live.ok()) return Fail(live.status());
    export_text = *live;
    origin = "sacct";
  }
  const SlurmSchedulerTiming defaults;
  const double backfill = timing.backfill_s < 0 ? defaults.backfill_interval_s : timing.backfill_s;
  const double hold = timing.hold_s < 0 ? defaults.requeue_hold_s : timing.hold_s;
  auto jobs = ParseSacctExport(export_text, origin);
  if (!jobs.ok()) return Fail(jobs.status());
  auto recorded = RecordedFromExport(*jobs, quotas, origin);
  if (!recorded.ok()) return Fail(recorded.status());
  const RecordedJobs& rec = *recorded;
  if (rec.trace.empty()) return Fail(InvalidArgument("sim --replay: " + origin + " holds no job that ran on GPUs"));
  if (!o.against.empty()) return CompareWithRun(rec, origin, o);
  SimSetup setup;
  const bool limits = std::all_of(rec.trace.begin(), rec.trace.end(), [](const TraceJob& j) { return j.limit > 0; });
  setup.estimates = limits ? EstimateMode::kUser : EstimateMode::kPerfect;
  setup.start_latency_s = o.start_latency_s;
  setup.tier_cpu_billing = quotas.enabled() ? std::max(0.0, timing.cpu_billing) : 0;
  config->backfill_interval_s = backfill;  // Slurm backfills on a timer
  config->requeue_hold_s = hold;
  const double grace = std::max(0.0, timing.grace_s);
  std::string phase_from;
  config->reclaim = ReclaimOfRun(rec, grace, std::max(0.0, timing.reclaim_s), SlurmMeanReclaimDelayForGraceTime(static_cast<int>(grace)),
                                 &phase_from);
  if (o.backfill) config->backfill = *o.backfill;
  // Slurm's backfill timer runs from its last cycle: given; or, when the
  // replay did not wait for the timer to poll, the last tick before the
  // first submission on the grid of sdiag's last cycle (cycles that find no
  // pending job go unrecorded, so the timer is taken to have run on). After
  // the wait it starts at the first submission, as the simulator's does.
  std::optional<double> backfill_last = o.backfill_last_s;
  if (!backfill_last && timing.last_backfill_epoch > 0 && backfill > 0) {
    const double since = timing.last_backfill_epoch - rec.t0;
    backfill_last = since + backfill * std::floor(-since / backfill);
  }
  if (backfill_last) config->backfill_last_pass_s = *backfill_last;
  auto sim = Simulate(*pool, rec.trace, *config, o.policy, setup);
  if (!sim.ok()) return Fail(sim.status());
  const ReplayComparison c = CompareReplay(rec.observed, sim->outcomes, backfill, o.show);
  std::cout << "replay: " << origin << " against sim --policy " << o.policy << " on " << o.cluster << " ("
            << (limits ? "the jobs' time limits" : "exact run times") << "; start latency " << o.start_latency_s
            << " s, " << ReclaimText(config->reclaim, phase_from) << ", backfill interval " << backfill
            << " s" << (backfill_last ? ", last backfill at " + Seconds(*backfill_last) : std::string())
            << (config->backfill ? "" : ", no backfill") << ", requeue hold " << hold << " s"
            << (quotas.enabled() ? ", quotas " + o.quota : "")
            << (setup.tier_cpu_billing > 0 ? ", a tier bills max(GPUs, CPUs x " + Number(setup.tier_cpu_billing) + ")" : "")
            << ")\n";
  if (rec.skipped > 0) std::cout << "skipped: " << rec.skipped << " jobs that never ran or had no GPUs\n";
  std::cout << ReplayComparisonText(c);
  return kExitOk;
}

}  // namespace gpulaunch
