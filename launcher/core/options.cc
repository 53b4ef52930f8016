#include "launcher/core/options.h"

#include <boost/program_options.hpp>
#include <algorithm>
#include <optional>
#include <regex>
#include <sstream>

#include "common/parallel_layout.h"
#include "common/strings.h"
#include "launcher/core/subcommand_parser.h"
#include "policies/host_selection.h"
#include "policies/placement_engine.h"

namespace po = boost::program_options;

namespace gpulaunch {
namespace {

po::options_description Describe() {
  po::options_description d("Options");
  // clang-format off
  d.add_options()
    ("np,n", po::value<int>(), "number of ranks (default: one per slot)")
    ("host,H", po::value<std::vector<std::string>>()->composing(), "hosts: a:2,b:2 or node[01-04]:4 (repeatable)")
    ("hostfile", po::value<std::string>(), "host file: 'host slots=N [max_slots=M]', 'host:N' or hostlists")
    ("machinefile", po::value<std::string>(), "same as --hostfile")
    ("env,x", po::value<std::vector<std::string>>()->composing(), "VAR[=VALUE]: export to every rank (repeatable)")
    ("oversubscribe", "allow more ranks than slots; ranks are spread evenly and left unbound")
    ("tag", "prefix every output line with [rank@host]")
    ("tag-output", "same as --tag")
    ("dry-run", "print the plan and the exact engine command, start nothing")
    ("display-map", "print the plan (where each rank goes: host, cpus, NUMA node, GPUs, NIC) before the job starts")
    ("topology-file", po::value<std::vector<std::string>>()->composing(),
     "FILE or HOST=FILE: make hosts look like recorded hwloc XML (with --dry-run; repeatable)")
    ("policy", po::value<std::string>()->value_name("NAME"),
     "placement: compact (default: fewest hosts under the lowest switch, the given host order kept where the network does not decide), spread, fault-domain, fragmented, gang, or by-slot (Open MPI's mapping: fill the hosts in the given order)")
    ("network", po::value<std::string>()->value_name("FILE"),
     "switch tree between the hosts in Slurm topology.conf syntax (inside an allocation Slurm's own is the default): placement and the ranks' leaf switches (GPULAUNCH_SWITCH) follow it")
    ("links", po::value<std::string>()->value_name("FILE"),
     "measured links (gpulaunch linkcheck --links FILE) for the placement model; default: the file linkcheck saves by default, when it exists; none: nominal figures")
    ("allow-run-as-root", "allow running as root (as mpirun requires)")
    ("launcher", po::value<std::string>(), "engine: auto (the one that starts the MPI the program links; srun inside a Slurm allocation) "
     "or an engine's name (docs/launch.md lists them)")
    ("layout", po::value<std::string>(), "parallel layout, e.g. tp=4,pp=2 (dp inferred): TP groups stay on a host")
    ("timeout", po::value<int>(), "wall-clock limit in seconds: then the job is stopped (SIGTERM, then SIGKILL) and gpulaunch exits 124")
    ("kill-grace", po::value<int>(), "seconds from the stop signal to SIGKILL when ranks are stopped: Open MPI's wait before SIGTERM and again before SIGKILL (its default: 1); under srun, gpulaunch's (default: 10)")
    ("startup-timeout", po::value<int>(), "seconds for every rank to check in; then the job is stopped, the missing ranks are named and gpulaunch exits 125")
    ("stall-timeout", po::value<int>(), "seconds a rank may go without a progress heartbeat (libgpurt sends them); then its stacks are collected into the summary, the job is stopped and gpulaunch exits 124")
    ("on-failure", po::value<std::string>(), "abort (default), or restart:N: relaunch a failed job up to N times, without the hosts that failed when spare slots exist (GPULAUNCH_RESTART_COUNT tells the job)")
    ("summary", po::value<std::string>(), "where to write the per-rank summary (default: gpulaunch-summary.json)")
    ("no-summary", "write no summary file")
    ("profile", "measure every step of libgpurt jobs (compute, communication per group, bytes, pipeline bubble), print a run report at the end and write the metrics (JSON lines per rank, Prometheus text) to --profile-dir")
    ("profile-dir", po::value<std::string>(), "where --profile writes rank-<R>.jsonl, metrics.prom and run-report.json (default: gpulaunch-profile)")
    ("help,h", "show this help")
    ("version,V", "show the version");
  // clang-format on
  return d;
}

// mpirun's single-dash long options.
std::string NormaliseToken(const std::string& tok) {
  static const char* long_disguised[] = {"-np", "-host", "-hostfile", "-machinefile", "-oversubscribe",
                                         "-tag-output", "-allow-run-as-root", "-display-map"};
  for (const char* l : long_disguised) {
    const std::string s = l;
    if (tok == s || StartsWith(tok, s + "=")) return "-" + tok;
  }
  return tok;
}

bool TakesValue(const po::options_description& d, const std::string& tok) {
  std::string name;
  if (StartsWith(tok, "--")) {
    if (tok.find('=') != std::string::npos) return false;
    name = tok.substr(2);
    const auto* opt = d.find_nothrow(name, false, false, false);
    return opt && opt->semantic()->max_tokens() > 0;
  }
  if (tok.size() != 2) return false;  // "-n16" carries its value
  for (const auto& opt : d.options()) {
    if (opt->canonical_display_name(po::command_line_style::allow_dash_for_short) == tok) {
      return opt->semantic()->max_tokens() > 0;
    }
  }
  return false;
}

StatusOr<EnvAssignment> ParseEnvAssignment(const std::string& text) {
  static const std::regex name_re("[A-Za-z_][A-Za-z0-9_]*");
  const auto eq = text.find('=');
  EnvAssignment a{text.substr(0, eq), std::nullopt};
  if (eq != std::string::npos) a.value = text.substr(eq + 1);
  if (!std::regex_match(a.name, name_re)) {
    return InvalidArgument("-x '" + text + "': '" + a.name +
                           "' is not a variable name (letters, digits and _; e.g. -x OMP_NUM_THREADS=4)");
  }
  return a;
}

// The words before the program (mpirun's single-dash long forms made
// double-dash) go to `own`, the program and its arguments to `program`.
Status SplitAtProgram(const std::vector<std::string>& args, const po::options_description& desc,
                      std::vector<std::string>& own, std::vector<std::string>& program) {
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& tok = args[i];
    if (tok == "--") {
      ++i;
      break;
    }
    if (tok.size() < 2 || tok[0] != '-') break;  // the program
    if (tok.rfind("--=", 0) == 0) {  // Boost would take it silently
      return InvalidArgument("unknown option '" + tok.substr(0, 80) + "' (no option name); see 'gpulaunch --help'");
    }
    own.push_back(NormaliseToken(tok));
    if (TakesValue(desc, own.back()) && i + 1 < args.size()) own.push_back(args[++i]);
  }
  program.assign(args.begin() + static_cast<long>(i), args.end());
  return Status::Ok();
}

// -n, the hosts and -x.
Status ReadJobOptions(const po::variables_map& vm, LaunchOptions& o) {
  if (vm.count("np")) {
    o.ranks = vm["np"].as<int>();
    if (o.ranks < 1) {
      return InvalidArgument("-n " + std::to_string(o.ranks) + ": the number of ranks must be at least 1");
    }
  }
  if (vm.count("host")) o.host_args = vm["host"].as<std::vector<std::string>>();
  if (vm.count("hostfile") && vm.count("machinefile")) {
    return InvalidArgument("--hostfile and --machinefile are the same option; give one");
  }
  if (vm.count("hostfile")) o.hostfile = vm["hostfile"].as<std::string>();
  if (vm.count("machinefile")) o.hostfile = vm["machinefile"].as<std::string>();
  if (vm.count("env")) {
    for (const std::string& x : vm["env"].as<std::vector<std::string>>()) {
      GL_ASSIGN_OR_RETURN(EnvAssignment a, ParseEnvAssignment(x));
      o.env.push_back(std::move(a));
    }
  }
  o.oversubscribe = vm.count("oversubscribe") > 0;
  o.tag = vm.count("tag") || vm.count("tag-output");
  o.dry_run = vm.count("dry-run") > 0;
  o.display_map = vm.count("display-map") > 0;
  o.allow_run_as_root = vm.count("allow-run-as-root") > 0;
  return Status::Ok();
}

// A limit in seconds from 1 s to 30 days, when given.
StatusOr<std::optional<int>> Limit(const po::variables_map& vm, const std::string& name) {
  if (!vm.count(name)) return std::optional<int>();
  const int limit = vm[name].as<int>();
  if (limit < 1 || limit > 30 * 86400) {
    return InvalidArgument("--" + name + " " + std::to_string(limit) + ": give seconds from 1 to 2592000 (30 days)");
  }
  return std::optional<int>(limit);
}

// --timeout, --kill-grace, --startup-timeout, --stall-timeout, --on-failure.
Status ReadFailureOptions(const po::variables_map& vm, LaunchOptions& o) {
  GL_ASSIGN_OR_RETURN(std::optional<int> timeout, Limit(vm, "timeout"));
  if (timeout) o.timeout_s = *timeout;
  if (vm.count("kill-grace")) {
    const int grace = vm["kill-grace"].as<int>();
    if (grace < 0 || grace > 3600) {
      return InvalidArgument("--kill-grace " + std::to_string(grace) + ": give seconds from 0 to 3600");
    }
    o.kill_grace_s = grace;
  }
  GL_ASSIGN_OR_RETURN(std::optional<int> startup, Limit(vm, "startup-timeout"));
  if (startup) o.startup_timeout_s = *startup;
  GL_ASSIGN_OR_RETURN(std::optional<int> stall, Limit(vm, "stall-timeout"));
  if (stall) o.stall_timeout_s = *stall;
  if (vm.count("on-failure")) {
    const std::string v = vm["on-failure"].as<std::string>();
    int n = -1;
    if (v == "abort") {
      n = 0;
    } else if (StartsWith(v, "restart:") && v.size() > 8 && v.size() <= 11 &&
               v.find_first_not_of("0123456789", 8) == std::string::npos) {
      n = std::stoi(v.substr(8));
    }
    if (n < 0 || n > 100) {
      return InvalidArgument("--on-failure " + v + ": give abort or restart:N with N from 0 to 100");
    }
    o.max_restarts = n;
  }
  return Status::Ok();
}

// --summary, --no-summary, --profile, --profile-dir.
Status ReadReportOptions(const po::variables_map& vm, LaunchOptions& o) {
  if (vm.count("summary") && vm.count("no-summary")) {
    return InvalidArgument("--summary and --no-summary contradict each other; give one");
  }
  if (vm.count("summary")) o.summary_path = vm["summary"].as<std::string>();
  o.profile = vm.count("profile") > 0;
  if (vm.count("profile-dir")) {
    if (!o.profile) return InvalidArgument("--profile-dir needs --profile (it says where the profile goes)");
    o.profile_dir = vm["profile-dir"].as<std::string>();
    if (o.profile_dir.empty()) return InvalidArgument("--profile-dir is empty: give a directory");
  }
  if (vm.count("no-summary") || o.summary_path.empty()) o.summary_path.clear();
  return Status::Ok();
}

// --topology-file, --layout, --launcher.
Status ReadPlanOptions(const po::variables_map& vm, LaunchOptions& o) {
  if (vm.count("topology-file")) o.topology_files = vm["topology-file"].as<std::vector<std::string>>();
  if (vm.count("network")) o.network = vm["network"].as<std::string>();
  if (vm.count("links")) o.links = vm["links"].as<std::string>();
  if (vm.count("policy")) {
    o.policy = vm["policy"].as<std::string>();
    std::vector<std::string> known = HostSelectorNames();
    known.push_back(kBySlotPolicy);
    if (std::find(known.begin(), known.end(), o.policy) == known.end()) {
      return InvalidArgument("--policy: unknown policy '" + o.policy + "' (choose from " + Join(known, ", ") + ")");
    }
  }
  if (vm.count("layout")) {
    // Checked here, not only at placement, so that `submit` refuses a bad
    // layout before anything runs; with -n, its product too.
    o.layout = vm["layout"].as<std::string>();
    if (o.layout.empty()) return InvalidArgument("--layout is empty: give e.g. --layout tp=4,pp=2, or leave it out");
    GL_RETURN_IF_ERROR(ParseLayout(o.layout, o.ranks).status());
  }
  // The engine's name is checked by the engine registry (launcher/engine/engine.h),
  // which alone knows the engines.
  if (vm.count("launcher")) o.launcher = vm["launcher"].as<std::string>();
  return Status::Ok();
}

}  // namespace

StatusOr<CommandLine> ParseCommandLine(const std::vector<std::string>& args) {
  const po::options_description desc = Describe();
  CommandLine cl;
  std::vector<std::string> own;
  GL_RETURN_IF_ERROR(SplitAtProgram(args, desc, own, cl.options.program));
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(own).options(desc).style(po::command_line_style::unix_style).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return InvalidArgument(OptionErrorText(e, own) + "; see 'gpulaunch --help'");
  }
  if (vm.count("help") || vm.count("version")) {
    cl.action = vm.count("help") ? CommandAction::kHelp : CommandAction::kVersion;
    return cl;
  }
  LaunchOptions& o = cl.options;
  GL_RETURN_IF_ERROR(ReadJobOptions(vm, o));
  GL_RETURN_IF_ERROR(ReadFailureOptions(vm, o));
  GL_RETURN_IF_ERROR(ReadReportOptions(vm, o));
  GL_RETURN_IF_ERROR(ReadPlanOptions(vm, o));
  if (o.program.empty()) {
    return InvalidArgument("no program to run; usage: gpulaunch [options] [--] PROGRAM [ARGS...], "
                           "e.g. gpulaunch -n 4 ./job");
  }
  return cl;
}

std::string HelpText() {
  std::ostringstream out;
  out << "Usage: gpulaunch [options] [--] PROGRAM [ARGS...]\n\n"
         "Starts PROGRAM as a distributed job: discovers the hosts' topology (hwloc, NVML),\n"
         "places ranks GPU-first (one rank per GPU with its NUMA node's cores, memory and\n"
         "nearest NIC; one rank per core on hosts without GPUs), and launches them through\n"
         "Open MPI's mpirun with a generated rankfile. Every rank gets RANK, WORLD_SIZE,\n"
         "LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR, MASTER_PORT,\n"
         "CUDA_VISIBLE_DEVICES and GPULAUNCH_* (see docs/environment.md).\n\n"
      << Describe()
      << "\nExamples:\n"
         "  gpulaunch -n 16 ./job --steps 10          16 ranks on this machine\n"
         "  gpulaunch -n 16 --oversubscribe ./job     more ranks than cores, unbound\n"
         "  gpulaunch -H node1:8,node2:8 ./job        8 ranks on each of two hosts\n"
         "  gpulaunch --hostfile hosts -x NCCL_DEBUG=INFO ./job\n"
         "  gpulaunch -n 8 --dry-run --topology-file dgx.xml ./job   show the plan only\n"
         "  gpulaunch -n 8 --on-failure=restart:2 --stall-timeout 300 ./train\n\n"
         "Other commands: gpulaunch plan | submit | slurm-config | check | check --storage PATH | check --slurm-health |\n"
         "                nodes | linkcheck | sim (each with --help).\n\n"
         "After a failure the root cause is printed, and every rank's end is in\n"
         "gpulaunch-summary.json (--summary FILE, --no-summary).\n\n"
         "Exit status: the first failing rank's code, 128+N when a rank died of signal N,\n"
         "2 for usage errors, 124 when --timeout or --stall-timeout expired, 125 when the\n"
         "launcher or engine failed (also: --startup-timeout, a vanished host), 126/127 when\n"
         "the program could not be executed / was not found on a host.\n";
  return out.str();
}

std::string VersionText() { return std::string("gpulaunch ") + GPULAUNCH_VERSION + "\n"; }

}  // namespace gpulaunch
