// The command lines of nodes and check, through SubcommandParser
// (Boost.ProgramOptions, subcommand_parser.h).
#include "launcher/core/options.h"

#include <cstdlib>

#include "common/strings.h"
#include "launcher/core/subcommand_parser.h"

namespace po = boost::program_options;

namespace gpulaunch {
namespace {

// What every per-host command (nodes, check) accepts: -H/--host,
// --hostfile/--machinefile, --format table|json, --allow-run-as-root.
void AddHostOptions(SubcommandParser& p) {
  p.Add()
    ("host,H", po::value<std::vector<std::string>>()->composing()->value_name("LIST"), "hosts: a,b or node[01-04] (repeatable); default: "
                                                                   "the Slurm allocation, else this machine")
    ("hostfile", po::value<std::string>()->value_name("FILE"), "host file, as for launches")
    ("machinefile", po::value<std::string>()->value_name("FILE"), "same as --hostfile")
    ("format", po::value<std::string>()->value_name("table|json"), "table (default) or json")
    ("launcher", po::value<std::string>()->value_name("NAME"), "the engine that reaches the hosts, as for launches (default auto)")
    ("allow-run-as-root", "let mpirun run as root");
}

struct HostFlags {
  std::vector<std::string>* host_args;
  std::optional<std::string>* hostfile;
  std::string* format;
  std::string* launcher;
  bool* allow_run_as_root;
};
Status ReadHostOptions(const SubcommandParser& p, const po::variables_map& vm, const HostFlags& out) {
  if (vm.count("host")) *out.host_args = vm["host"].as<std::vector<std::string>>();
  for (const char* name : {"hostfile", "machinefile"})
    if (vm.count(name)) *out.hostfile = vm[name].as<std::string>();
  GL_ASSIGN_OR_RETURN(*out.format, FormatOption(p, vm));
  *out.allow_run_as_root = vm.count("allow-run-as-root") > 0;
  if (vm.count("launcher")) *out.launcher = vm["launcher"].as<std::string>();
  if (!out.host_args->empty() && *out.hostfile) return p.Error("give either --host or --hostfile, not both");
  return Status::Ok();
}

const SubcommandParser& NodesParser() {
  static const SubcommandParser* parser = [] {
    auto* p = new SubcommandParser(
        "nodes", "[-H LIST | --hostfile FILE] [--format table|json] [--budget S] [--watch S [--count N]]\n"
                 "                       [--launcher NAME] [--allow-run-as-root]",
        "One row per host and GPU model: state (online, down, drained, draining), GPU count, model and memory,\n"
        "cores, when the host last answered, and why it is not online. Without -H/--hostfile: the Slurm\n"
        "allocation, else this machine. Each host gets --budget seconds (default 10) to answer through the\n"
        "engine (--launcher; by default mpirun, or srun inside an allocation). --watch S refreshes every S seconds (--count N times);\n"
        "a host that answered before and misses one or two rounds is suspect, after three down. GPU memory in\n"
        "use and free come from NVML where a driver answers.\n"
        "Exit 0 when every host is online, 1 when one is not, 2 for usage errors.");
    AddHostOptions(*p);
    p->Add()
      ("budget", po::value<std::string>()->value_name("S"), "seconds each host gets to answer (default 10)")
      ("watch", po::value<std::string>()->value_name("S"), "refresh every S seconds")
      ("count", po::value<std::string>()->value_name("N"), "stop after N refreshes (with --watch)");
    return p;
  }();
  return *parser;
}

const SubcommandParser& CheckParser() {
  static const SubcommandParser* parser = [] {
    auto* p = new SubcommandParser(
        "check", "[-H LIST | --hostfile FILE] [--binary PATH] [--save FILE] [--compare FILE] [--links FILE|default]\n"
                 "                       [--max-clock-skew S] [--budget S] [--format table|json] [--launcher NAME]\n"
                 "                       [--allow-run-as-root]",
        "Pre-flight checks of every host at once, each through the engine within --budget seconds (default 30):\n"
        "reach, clock (offset from this host, --max-clock-skew 1 s), dns (both ways), versions (gpulaunch, MPI,\n"
        "UCX, driver), mtu and nic (the data interface's MTU, state and speed against the other hosts), gpus\n"
        "(NVML: all present, temperature, ECC), ports (free job ports), tmp (writable), binary (--binary PATH\n"
        "and its libraries resolve, it links the same MPI on every host, and the engine a launch of it with the\n"
        "same --launcher would use starts that MPI; each host's MPI for it is listed). --save FILE records the hosts' facts; --compare FILE reports what changed.\n"
        "--links FILE|default then measures the links between the hosts (gpulaunch linkcheck --concurrent --quick) and\n"
        "saves them where launches and plan read them (default: $XDG_STATE_HOME/gpulaunch/links.json).\n"
        "Exit 0 when every check passes on every host, 1 naming each host and check that failed.\n\n"
        "       gpulaunch check --storage PATH [-H LIST | --hostfile FILE] [--size MiB] [--budget S]\n"
        "                       [--format table|json] [--allow-run-as-root]\n"
        "       gpulaunch check --slurm-health [--node NAME] [--expect-gpus N]\n"
        "From every host at once (through mpirun, or srun inside an allocation): write --size MiB (default 16)\n"
        "under PATH, read it back, time create/stat/unlink, then read every other host's file and compare. Reports\n"
        "throughput and metadata latency per host with the spread, and fails naming each host that sees\n"
        "missing or different data. Each host gets --budget seconds (default 60) per phase.\n"
        "Exit 0 when every host passes, 1 when one does not, 2 for usage errors.");
    AddHostOptions(*p);
    p->Add()
      ("binary", po::value<std::string>()->value_name("PATH"), "the job's program: it and its libraries must resolve on every host")
      ("save", po::value<std::string>()->value_name("FILE"), "record the hosts' facts in FILE as a baseline")
      ("compare", po::value<std::string>()->value_name("FILE"), "report what changed since the baseline FILE")
      ("links", po::value<std::string>()->value_name("FILE|default"), "also measure the links between the hosts and save them for placement")
      ("max-clock-skew", po::value<std::string>()->value_name("S"), "seconds a host's clock may be off this host's (default 1)")
      ("budget", po::value<std::string>()->value_name("S"), "seconds each host (each phase, with --storage) gets (default 30; 60)")
      ("storage", po::value<std::string>()->value_name("PATH"), "the shared-storage check of directory PATH instead")
      ("size", po::value<std::string>()->value_name("MiB"), "--storage: MiB each host writes and reads (default 16)")
      ("slurm-health", "the Slurm node health check (with --node, --expect-gpus)");
    return p;
  }();
  return *parser;
}

}  // namespace

StatusOr<NodesOptions> ParseNodesCommandLine(const std::vector<std::string>& args) {
  const SubcommandParser& p = NodesParser();
  GL_ASSIGN_OR_RETURN(po::variables_map vm, p.Parse(args));
  NodesOptions o;
  o.help = SubcommandParser::WantsHelp(vm);
  if (o.help) return o;
  GL_RETURN_IF_ERROR(ReadHostOptions(p, vm, {&o.host_args, &o.hostfile, &o.format, &o.launcher, &o.allow_run_as_root}));
  GL_ASSIGN_OR_RETURN(o.budget_s, IntOption(p, vm, "budget", o.budget_s, 1, 86400, "seconds"));
  GL_ASSIGN_OR_RETURN(o.watch_s, IntOption(p, vm, "watch", o.watch_s, 1, 86400, "seconds"));
  GL_ASSIGN_OR_RETURN(o.count, IntOption(p, vm, "count", o.count, 1, 1000000, "refreshes"));
  if (o.count > 0 && o.watch_s == 0) return p.Error("--count needs --watch S (it counts refreshes)");
  return o;
}

std::string NodesHelpText() { return NodesParser().Help(); }

StatusOr<CheckOptions> ParseCheckCommandLine(const std::vector<std::string>& args) {
  const SubcommandParser& p = CheckParser();
  GL_ASSIGN_OR_RETURN(po::variables_map vm, p.Parse(args));
  CheckOptions o;
  o.help = SubcommandParser::WantsHelp(vm);
  if (o.help) return o;
  GL_RETURN_IF_ERROR(ReadHostOptions(p, vm, {&o.host_args, &o.hostfile, &o.format, &o.launcher, &o.allow_run_as_root}));
  for (auto [name, out] : {std::pair{"storage", &o.storage}, std::pair{"binary", &o.binary},
                           std::pair{"save", &o.save}, std::pair{"compare", &o.compare},
                           std::pair{"links", &o.links}}) {
    if (!vm.count(name)) continue;
    const std::string v = vm[name].as<std::string>();
    if (v.empty()) return p.Error(std::string("--") + name + (out == &o.storage ? " needs a directory" : " needs a path"));
    *out = v;
  }
  GL_ASSIGN_OR_RETURN(o.size_mib, IntOption(p, vm, "size", o.size_mib, 1, 65536, "MiB"));
  if (vm.count("max-clock-skew")) {
    const std::string v = vm["max-clock-skew"].as<std::string>();
    char* end = nullptr;
    o.max_clock_skew_s = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(o.max_clock_skew_s > 0) || o.max_clock_skew_s > 3600) {
      return p.Error("--max-clock-skew " + v + ": give seconds above 0 (e.g. 0.5)");
    }
  }
  GL_ASSIGN_OR_RETURN(o.budget_s, IntOption(p, vm, "budget", o.budget_s, 1, 86400, "seconds"));
  if (o.storage && (o.binary || o.save || o.compare || o.links)) {
    return p.Error("--storage runs the storage check only; --binary, --save, --compare and --links belong to "
                   "the pre-flight checks (run them without --storage)");
  }
  return o;
}

std::string CheckHelpText() { return CheckParser().Help(); }

}  // namespace gpulaunch
