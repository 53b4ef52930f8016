#include "launcher/sim/sim_command.h"

#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <iostream>

#include "common/file_write.h"
#include "common/json.h"
#include "common/strings.h"
#include "launcher/base/exit_codes.h"
#include "launcher/core/subcommand_parser.h"
#include "launcher/sim/replay_command.h"
#include "launcher/sim/sim_output.h"
#include "policies/pool/resource_template.h"
#include "policies/pool/runtime_estimates.h"
#include "policies/pool/simulator.h"
#include "policies/pool/synthetic_trace.h"

namespace po = boost::program_options;

namespace gpulaunch {
namespace {

using namespace gpulaunch::pool;


struct SimOptions {
  std::string trace, synthetic, cluster, policy = "all", format = "table", quota, templates;
  std::vector<EstimateMode> estimates = {EstimateMode::kUser};
  int explain = -1;
  double data_cache_gb = 0, data_bandwidth = 1.25;
  std::vector<std::string> reserve, fail;
  std::optional<std::string> out;
  int teams = 0;
  double grace_s = 300;
  double reclaim_delay_s = 0;
  double grace_time_s = -1;  // -1: not given (victims killed at the decision)
  double start_latency_s = 0;
  double backfill_interval_s = 0;
  double requeue_hold_s = 0;
  bool slurm_tiers = false;
  double checkpoint_s = 0;
  double max_wait_h = 0;
  bool help = false;
};

const SubcommandParser& Parser() {
  static const SubcommandParser* parser = [] {
    auto* p = new SubcommandParser(
        "sim", "(--trace FILE | --synthetic SPEC) --cluster SPEC [--policy NAME,...|all]\n"
               "                     [--estimates perfect|user|none|all] [--explain JOB] [--templates DEFS]\n"
               "                     [--data-cache GB] [--data-bandwidth GB/S]\n"
               "                     [--teams N] [--quota TEAM:GUARANTEE/NOMINAL/BORROW[/LEND],...] [--grace S]\n"
               "                     [--reclaim-delay S] [--start-latency S] [--backfill-interval S]\n"
               "                     [--requeue-hold S] [--slurm-tiers]\n"
               "                     [--checkpoint S] [--max-wait H] [--reserve NAME:TEAM:HOSTS@START-END]...\n"
               "                     [--fail HOST@START[-END]]...\n"
               "                     [--format table|json] [--out FILE]\n"
               "       gpulaunch sim --replay ...: the simulator checked against Slurm (sim --replay --help)",
        "Replays a job trace (Tiresias, ElasticFlow, or id,submit,duration,gpus[,team,priority,user,template] CSV)\n"
        "or a synthetic one (SPEC e.g. \"jobs:2000 days:14 teams:3 users:24 high:0.1 templated:0.2\") on a\n"
        "simulated pool (SPEC e.g. \"leaf:2 node:8 gpu:8\"; groups of other hosts joined with '+', e.g.\n"
        "\"leaf:1 node:8 gpu:8 mem:80 link:200 + leaf:1 node:8 gpu:8 mem:40\") under gpulaunch's policy\n"
        "(topology) and the baselines (fifo-first-fit; best-fit; tiresias, 2D-LAS; sjf-oracle, perfect knowledge;\n"
        "slurm-multifactor, age and size priority with backfill and topology/tree), all by default, in one run.\n"
        "--estimates says what the policies know of run times: perfect (the trace's), user (time limits: the\n"
        "trace's limit column, else a seeded model of how users over-estimate; a run reaching its limit is\n"
        "ended there, as Slurm does), none (no durations at all); default user, all for the three.\n"
        "--explain JOB tells why job JOB (0 is the first submitted) waited and why it went where it went.\n"
        "--data-cache GB gives each host an LRU cache of that size for the jobs' datasets (synthetic datasets:N):\n"
        "a job copies its dataset to its hosts that lack it, at --data-bandwidth GB/s (default 1.25, 10 Gb/s);\n"
        "topology then also runs without its preference for hosts holding the data (topology-no-locality).\n"
        "--templates \"train:gpus=32,mem=80,link=200,affinity=leaf;...\" defines the templates jobs name.\n"
        "--teams N deals the jobs round-robin to N teams (public traces have none); without it --quota uses the\n"
        "trace's teams (0, 1, ... in the quota's order). Preempted jobs start over, or with --checkpoint S resume\n"
        "from their last checkpoint (one every S seconds of work); moving or resuming a job costs 120 s.\n"
        "--grace S: a job runs at least S seconds before it may be preempted (Slurm's PreemptExemptTime);\n"
        "--reclaim-delay S: a preempting job waits S seconds for its victims' GPUs after they are killed;\n"
        "--grace-time S: Slurm's GraceTime: victims are killed at slurmctld's time-limit pass (every 30 s, at 0,\n"
        "30, 60 ... s of the trace's clock), the first at least S s after the preemption (default: at once);\n"
        "--start-latency S: a started job runs S seconds after the decision (a real scheduler's latency);\n"
        "--backfill-interval S: backfill only every S seconds (Slurm's bf_interval; default: at every pass);\n"
        "--requeue-hold S: a job requeued by preemption may start again S seconds later (Slurm: AuthInfo's\n"
        "cred_expire, default 120; default here 0).\n"
        "Quotas count as Slurm counts them under slurm-config --policy: a job is within nominal while the team's\n"
        "jobs that started within nominal leave room (its borrowed jobs do not count). --slurm-tiers (with\n"
        "--quota) also queues as Slurm runs those partitions: such jobs go first and reclaim any borrowed job\n"
        "(their own team's too), a job blocks only later jobs of its own tier and team.\n"
        "--max-wait H: a job not started H hours after its submission leaves the queue (a queue timeout).\n"
        "--reserve holds HOSTS whole hosts for TEAM (its name in --quota, or its number) from START to END hours\n"
        "after the first job's submission. --fail makes HOST (its name, e.g. s0n3, or number) stop sending\n"
        "heartbeats from START (to END) hours: suspect after 2 missed heartbeats, bad at 15 s, its jobs requeued,\n"
        "its GPUs reused when their 30 s lease runs out.");
    p->Add()
      ("trace", po::value<std::string>()->value_name("FILE"), "a job trace")
      ("synthetic", po::value<std::string>()->value_name("SPEC"), "a synthetic trace instead")
      ("cluster", po::value<std::string>()->value_name("SPEC"), "the simulated pool")
      ("policy", po::value<std::string>()->value_name("NAME,..."),
       "topology, fifo-first-fit, best-fit, tiresias, sjf-oracle, slurm-multifactor, or all (default)")
      ("estimates", po::value<std::string>()->value_name("MODE,..."), "perfect, user (default), none, or all")
      ("explain", po::value<std::string>()->value_name("JOB"), "why this job waited and went where it went")
      ("data-cache", po::value<std::string>()->value_name("GB"), "per-host dataset cache (locality model)")
      ("data-bandwidth", po::value<std::string>()->value_name("GB/S"), "per-host copy bandwidth (default 1.25)")
      ("templates", po::value<std::string>()->value_name("DEFS"), "the resource templates jobs name")
      ("teams", po::value<std::string>()->value_name("N"), "deal the jobs to N teams")
      ("quota", po::value<std::string>()->value_name("QUOTAS"), "per-team quotas")
      ("grace", po::value<std::string>()->value_name("S"), "seconds a job runs before it may be preempted (default 300)")
      ("reclaim-delay", po::value<std::string>()->value_name("S"), "seconds a preempting job waits for its victims' GPUs (default 0)")
      ("grace-time", po::value<std::string>()->value_name("S"), "Slurm's GraceTime: victims die at the next 30 s pass after it")
      ("start-latency", po::value<std::string>()->value_name("S"), "seconds from a start decision to the job running (default 0)")
      ("backfill-interval", po::value<std::string>()->value_name("S"), "backfill only every S seconds (default: every pass)")
      ("slurm-tiers", "queue as Slurm's tiers (slurm-config --policy), reclaim on")
      ("requeue-hold", po::value<std::string>()->value_name("S"), "seconds a requeued job waits before it may start again (default 0)")
      ("checkpoint", po::value<std::string>()->value_name("S"), "preempted jobs resume from a checkpoint every S s")
      ("max-wait", po::value<std::string>()->value_name("H"), "queue timeout in hours")
      ("reserve", po::value<std::vector<std::string>>()->composing()->value_name("RESERVATION"), "a reservation (repeatable)")
      ("fail", po::value<std::vector<std::string>>()->composing()->value_name("HOST@START[-END]"), "a failing host (repeatable)")
      ("format", po::value<std::string>()->value_name("table|json"), "table (default) or json")
      ("out", po::value<std::string>()->value_name("FILE"), "also write the JSON report to FILE");
    return p;
  }();
  return *parser;
}

StatusOr<SimOptions> Parse(const std::vector<std::string>& args) {
  const SubcommandParser& p = Parser();
  GL_ASSIGN_OR_RETURN(po::variables_map vm, p.Parse(args));
  SimOptions o;
  o.help = SubcommandParser::WantsHelp(vm);
  if (o.help) return o;
  auto text = [&](const char* name, std::string& out) {
    if (vm.count(name)) out = vm[name].as<std::string>();
  };
  text("trace", o.trace);
  text("synthetic", o.synthetic);
  text("cluster", o.cluster);
  text("policy", o.policy);
  text("templates", o.templates);
  text("quota", o.quota);
  o.slurm_tiers = vm.count("slurm-tiers") > 0;
  if (o.slurm_tiers && o.quota.empty()) return p.Error("--slurm-tiers needs --quota QUOTAS");
  if (vm.count("reserve")) o.reserve = vm["reserve"].as<std::vector<std::string>>();
  if (vm.count("fail")) o.fail = vm["fail"].as<std::vector<std::string>>();
  if (vm.count("out")) o.out = vm["out"].as<std::string>();
  if (vm.count("estimates")) {
    const std::string v = vm["estimates"].as<std::string>();
    o.estimates.clear();
    for (const std::string& m : v == "all" ? std::vector<std::string>{"perfect", "user", "none"} : Split(v, ',')) {
      auto mode = ParseEstimateMode(m);
      if (!mode.ok()) return p.Error("--estimates " + v + ": " + mode.status().message());
      o.estimates.push_back(*mode);
    }
  }
  for (auto [name, out] : {std::pair{"data-cache", &o.data_cache_gb}, std::pair{"data-bandwidth", &o.data_bandwidth}}) {
    if (!vm.count(name)) continue;
    const std::string v = vm[name].as<std::string>();
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(x > 0) || x > 1e9) return p.Error(std::string("--") + name + " " + v + ": give a number above 0");
    *out = x;
  }
  if (vm.count("explain")) {
    const std::string v = vm["explain"].as<std::string>();
    const auto n = ParseInt(v);
    if (!n || *n < 0 || *n > 100000000) return p.Error("--explain " + v + ": give a job number (0 is the first submitted)");
    o.explain = static_cast<int>(*n);
  }
  if (vm.count("format")) {
    o.format = vm["format"].as<std::string>();
    if (o.format != "table" && o.format != "json") return p.Error("--format " + o.format + ": table or json");
  }
  for (auto [name, out] : {std::pair{"teams", static_cast<double*>(nullptr)}, std::pair{"grace", &o.grace_s},
                           std::pair{"reclaim-delay", &o.reclaim_delay_s}, std::pair{"grace-time", &o.grace_time_s},
                           std::pair{"start-latency", &o.start_latency_s},
                           std::pair{"backfill-interval", &o.backfill_interval_s},
                           std::pair{"requeue-hold", &o.requeue_hold_s},
                           std::pair{"checkpoint", &o.checkpoint_s}, std::pair{"max-wait", &o.max_wait_h}}) {
    if (!vm.count(name)) continue;
    const std::string v = vm[name].as<std::string>();
    const auto n = ParseInt(v);
    if (!n || *n < 0 || *n > 100000) return p.Error(std::string("--") + name + " " + v + ": give a whole number");
    if (out) *out = static_cast<double>(*n);
    else o.teams = static_cast<int>(*n);
  }
  if (o.help) return o;
  if (o.trace.empty() == o.synthetic.empty() || o.cluster.empty()) {
    return InvalidArgument("sim needs --trace FILE or --synthetic SPEC (one of them), and --cluster SPEC");
  }
  return o;
}

// "NAME:TEAM:HOSTS@START-END" (hours after `origin`).
StatusOr<SimReservation> ParseReservation(const std::string& text, const QuotaBook& quotas, double origin) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("sim: --reserve '" + text + "': " + why + " (e.g. demo:a:4@24-48)");
  };
  const size_t at = text.find('@');
  const std::vector<std::string> who = Split(text.substr(0, at), ':');
  if (at == std::string::npos || who.size() != 3 || who[0].empty()) return bad("give NAME:TEAM:HOSTS@START-END");
  SimReservation r;
  r.name = who[0];
  r.team = -1;
  for (int t = 0; t < quotas.teams(); ++t)
    if (quotas.quota(t).team == who[1]) r.team = t;
  const auto index = ParseInt(who[1]);
  if (r.team < 0 && index && *index >= 0 && (*index < quotas.teams() || !quotas.enabled()) && *index <= 100000) {
    r.team = static_cast<int>(*index);
  }
  if (r.team < 0) return bad("team '" + who[1] + "' is neither a team of --quota nor a team number");
  const auto hosts = ParseInt(who[2]);
  if (!hosts || *hosts < 1 || *hosts > 100000) return bad("HOSTS must be a whole number from 1");
  r.hosts = static_cast<int>(*hosts);
  const std::vector<std::string> window = Split(text.substr(at + 1), '-');
  const auto start = window.size() == 2 ? ParseInt(window[0]) : std::nullopt;
  const auto end = window.size() == 2 ? ParseInt(window[1]) : std::nullopt;
  if (!start || !end || *start < 0 || *end <= *start || *end > 1000000) {
    return bad("START-END must be whole hours, END after START");
  }
  r.start = origin + static_cast<double>(*start) * 3600;
  r.end = origin + static_cast<double>(*end) * 3600;
  return r;
}

// "HOST@START[-END]" (hours after `origin`); HOST a name or a number.
StatusOr<SimFailure> ParseFailure(const std::string& text, const GpuPool& pool, double origin) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("sim: --fail '" + text + "': " + why + " (e.g. s0n3@24-30, or 3@24)");
  };
  const size_t at = text.find('@');
  if (at == std::string::npos) return bad("give HOST@START[-END]");
  const std::string host = text.substr(0, at);
  SimFailure f;
  f.host = -1;
  for (size_t h = 0; h < pool.hosts().size(); ++h)
    if (pool.hosts()[h].name == host) f.host = static_cast<int>(h);
  const auto index = ParseInt(host);
  if (f.host < 0 && index && *index >= 0 && *index < static_cast<int64_t>(pool.hosts().size())) {
    f.host = static_cast<int>(*index);
  }
  if (f.host < 0) {
    return bad("no host '" + host + "' (names are s<leaf>n<node>, e.g. s0n0; numbers 0 to " +
               std::to_string(pool.hosts().size() - 1) + ")");
  }
  const std::vector<std::string> window = Split(text.substr(at + 1), '-');
  const auto start = ParseInt(window[0]);
  const auto end = window.size() == 2 ? ParseInt(window[1]) : std::optional<int64_t>(-1);
  if (window.size() > 2 || !start || !end || *start < 0 || *start > 1000000 ||
      (window.size() == 2 && *end <= *start) || *end > 1000000) {
    return bad("START[-END] must be whole hours, END after START");
  }
  f.at = origin + static_cast<double>(*start) * 3600;
  f.back = window.size() == 2 ? origin + static_cast<double>(*end) * 3600 : -1;
  return f;
}

struct SimInputs {
  GpuPool pool;
  std::vector<TraceJob> jobs;
  QuotaBook quotas;
  SimSetup setup;
  SimRunInfo info;
};

StatusOr<SimInputs> Load(const SimOptions& o) {
  SimInputs in;
  GL_ASSIGN_OR_RETURN(ClusterSpec spec, ParseClusterSpec(o.cluster));
  for (const std::string& note : spec.notes) std::cerr << "gpulaunch: note: " << note << "\n";
  GL_ASSIGN_OR_RETURN(in.pool, GpuPool::FromSpec(spec));
  std::vector<ResourceTemplate> templates;
  if (!o.templates.empty()) {
    GL_ASSIGN_OR_RETURN(templates, ParseTemplates(o.templates));
  }
  if (!o.trace.empty()) {
    GL_ASSIGN_OR_RETURN(in.jobs, LoadTrace(o.trace));
    GL_RETURN_IF_ERROR(ApplyTemplates(in.jobs, templates, o.trace));
    in.info.source = o.trace;
  } else {
    GL_ASSIGN_OR_RETURN(SyntheticSpec spec, ParseSyntheticSpec(o.synthetic));
    GL_ASSIGN_OR_RETURN(in.jobs, SyntheticTrace(spec, templates));
    in.info.source = "synthetic: " + o.synthetic;
  }
  if (!o.quota.empty()) {
    GL_ASSIGN_OR_RETURN(in.quotas, QuotaBook::Parse(o.quota));
  }
  if (o.teams > 0) {
    if (in.quotas.enabled() && in.quotas.teams() != o.teams) {
      return InvalidArgument("sim: --quota names " + std::to_string(in.quotas.teams()) + " teams, --teams says " +
                             std::to_string(o.teams));
    }
    AssignTeams(in.jobs, o.teams);
  } else if (in.quotas.enabled()) {
    for (const TraceJob& j : in.jobs) {
      if (j.team >= in.quotas.teams()) {
        return InvalidArgument("sim: " + in.info.source + (o.trace.empty() ? "" : ":" + std::to_string(j.line)) +
                               ": team " + std::to_string(j.team) + ", but --quota names teams 0 to " +
                               std::to_string(in.quotas.teams() - 1) + "; or deal the jobs with --teams N");
      }
    }
  }
  const double origin = in.jobs.empty() ? 0 : in.jobs.front().submit;
  for (const std::string& text : o.reserve) {
    GL_ASSIGN_OR_RETURN(SimReservation r, ParseReservation(text, in.quotas, origin));
    in.setup.reservations.push_back(r);
    in.info.reservations += (in.info.reservations.empty() ? "" : ", ") + text;
  }
  for (const std::string& text : o.fail) {
    GL_ASSIGN_OR_RETURN(SimFailure f, ParseFailure(text, in.pool, origin));
    in.setup.failures.push_back(f);
    in.info.failures += (in.info.failures.empty() ? "" : ", ") + text;
  }
  if (o.explain >= static_cast<int>(in.jobs.size())) {
    return InvalidArgument("sim: --explain " + std::to_string(o.explain) + ": the trace has jobs 0 to " +
                           std::to_string(in.jobs.size() - 1) + " (numbered in submit order)");
  }
  in.setup.explain_job = o.explain;
  in.info.explain = o.explain;
  DrawUserLimits(in.jobs);  // used only where the mode is user
  if (o.data_cache_gb > 0) {
    for (const TraceJob& j : in.jobs) in.setup.datasets = std::max(in.setup.datasets, j.dataset + 1);
    if (in.setup.datasets == 0) {
      return InvalidArgument("sim: --data-cache: the jobs name no datasets; use --synthetic with datasets:N");
    }
    in.setup.locality.cache_gb = o.data_cache_gb;
    in.setup.locality.bandwidth_gb_s = o.data_bandwidth;
    char text[96];
    std::snprintf(text, sizeof text, "%g GB per host at %g GB/s", o.data_cache_gb, o.data_bandwidth);
    in.info.data_cache = text;
  }
  in.setup.checkpoint_interval_s = o.checkpoint_s;
  in.setup.max_wait_s = o.max_wait_h * 3600;
  in.setup.start_latency_s = o.start_latency_s;
  in.info.max_wait_s = in.setup.max_wait_s;
  in.info.cluster = o.cluster;
  in.info.gpus = in.pool.total_gpus();
  in.info.quota = o.quota;
  in.info.checkpoint_s = o.checkpoint_s;
  in.info.teams = o.teams ? "teams: " + std::to_string(o.teams) + " round-robin"
                          : (in.quotas.enabled() ? "teams: the trace's" : "no teams");
  if (!o.quota.empty()) in.info.teams += ", quotas " + o.quota;
  return in;
}

}  // namespace

int RunSimCommand(const std::vector<std::string>& args) {
  if (WantsReplay(args)) return RunSimReplay(args);
  auto parsed = Parse(args);
  if (!parsed.ok()) return Fail(parsed.status());
  const SimOptions& o = *parsed;
  if (o.help) {
    std::cout << Parser().Help();
    return kExitOk;
  }
  auto in = Load(o);
  if (!in.ok()) {
    std::cerr << "gpulaunch: " << (StartsWith(in.status().message(), "sim") ? "" : "sim: ") << in.status().message()
              << "\n";
    return kExitUsage;
  }
  const std::vector<std::string> names = o.policy == "all" ? PolicyNames() : Split(o.policy, ',');
  // Every policy under every mode asked for; the oracle once (it always
  // knows the run times), gpulaunch's policy also without its locality
  // preference when datasets are cached.
  std::vector<std::tuple<std::string, EstimateMode, bool>> runs;
  for (EstimateMode mode : o.estimates) {
    for (const std::string& name : names) {
      if (name == "sjf-oracle" && mode != o.estimates.front()) continue;
      runs.emplace_back(name, name == "sjf-oracle" ? EstimateMode::kPerfect : mode, true);
      if (name == "topology" && in->setup.locality.cache_gb > 0) runs.emplace_back(name, mode, false);
    }
  }
  in->info.jobs = &in->jobs;
  std::vector<SimReport> reports;
  for (const auto& [name, mode, prefer] : runs) {
    auto config = PolicyConfig(name, in->quotas);
    if (!config.ok()) {
      std::cerr << "gpulaunch: sim: " << config.status().message() << "\n";
      return kExitUsage;
    }
    config->grace_s = o.grace_s;
    config->backfill_interval_s = o.backfill_interval_s;
    config->requeue_hold_s = o.requeue_hold_s;
    config->reclaim.delay_s = o.reclaim_delay_s;
    if (o.grace_time_s >= 0) {
      config->reclaim.grace_time_s = o.grace_time_s;
      config->reclaim.pass_period_s = kSlurmKillPassSeconds;
    }
    if (o.slurm_tiers) {
      config->slurm_tiers = true;
      config->preempt = true;  // the team's tier reclaims the borrowed one
    }
    SimSetup setup = in->setup;
    setup.estimates = mode;
    setup.locality.prefer = prefer;
    auto r = Simulate(in->pool, in->jobs, *config, prefer ? name : name + "-no-locality", setup);
    if (!r.ok()) {
      std::cerr << "gpulaunch: sim: " << r.status().message() << "\n";
      const StatusCode c = r.status().code();
      return c == StatusCode::kInfeasible || c == StatusCode::kInvalidArgument ? kExitUsage : 1;
    }
    reports.push_back(std::move(r).value());
  }
  const std::string json = SimJson(in->info, o.teams, reports).Write() + "\n";
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
  PrintSimTable(in->info, reports);
  return kExitOk;
}

}  // namespace gpulaunch
