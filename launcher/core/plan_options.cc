// The command lines of `gpulaunch plan` and `gpulaunch slurm-config`, through
// SubcommandParser (Boost.ProgramOptions): both describe a cluster the same
// way (the cluster options); plan adds the job and how to place it,
// slurm-config where to write the files and the policy.
#include <limits>

#include "launcher/core/options.h"
#include "launcher/core/subcommand_parser.h"

namespace po = boost::program_options;

namespace gpulaunch {
namespace {

void AddClusterOptions(SubcommandParser& p) {
  // clang-format off
  p.Add()
    ("hosts,H", po::value<std::vector<std::string>>()->composing()->value_name("LIST"), "hosts, as for launches (repeatable)")
    ("hostfile", po::value<std::string>()->value_name("FILE"), "host file, as for launches")
    ("topology-file", po::value<std::vector<std::string>>()->composing()->value_name("[HOST=]FILE"),
     "FILE (every host) or HOST=FILE: recorded hwloc XML (repeatable)")
    ("synthetic", po::value<std::string>()->value_name("SPEC"), "a synthetic cluster, e.g. 'leaf:2 node:4 gpu:8 nic:4'")
    ("cluster", po::value<std::string>()->value_name("FILE"), "a cluster file (JSON, see --dump-cluster)")
    ("dump-cluster", po::value<std::string>()->value_name("FILE"), "also write the cluster as planned to FILE (JSON)")
    ("network", po::value<std::string>()->value_name("FILE"), "switch tree in Slurm topology.conf syntax")
    ("links", po::value<std::string>()->value_name("FILE"), "measured links (gpulaunch linkcheck --links FILE); none: nominal figures")
    ("allow-run-as-root", "let mpirun run as root (to discover the hosts)");
  // clang-format on
}

Status ReadClusterOptions(const SubcommandParser& p, const po::variables_map& vm, PlanOptions& o) {
  if (vm.count("hosts")) o.host_args = vm["hosts"].as<std::vector<std::string>>();
  if (vm.count("hostfile")) o.hostfile = vm["hostfile"].as<std::string>();
  if (vm.count("topology-file")) o.topology_files = vm["topology-file"].as<std::vector<std::string>>();
  if (vm.count("synthetic")) o.synthetic = vm["synthetic"].as<std::string>();
  if (vm.count("network")) o.network = vm["network"].as<std::string>();
  if (vm.count("links")) o.links = vm["links"].as<std::string>();
  if (vm.count("cluster")) o.cluster_file = vm["cluster"].as<std::string>();
  if (vm.count("dump-cluster")) o.dump_cluster = vm["dump-cluster"].as<std::string>();
  o.allow_run_as_root = vm.count("allow-run-as-root") > 0;
  if ((o.synthetic || o.cluster_file) && (o.hostfile || !o.host_args.empty() || !o.topology_files.empty())) {
    return p.Error("--synthetic and --cluster describe the whole cluster; do not combine them with hosts or "
                   "--topology-file");
  }
  if (o.synthetic && o.cluster_file) return p.Error("give --synthetic or --cluster, not both");
  return Status::Ok();
}

const SubcommandParser& PlanParser() {
  static const SubcommandParser* parser = [] {
    auto* p = new SubcommandParser(
        "plan", "-n N [options]",
        "Shows where gpulaunch would place N ranks and why, with the modelled per-step\n"
        "communication time of the layout and the same figures for Open MPI's default\n"
        "by-slot mapping of the same job. Nothing is started.");
    // clang-format off
    p->Add()
      ("np,n", po::value<std::string>()->value_name("N"), "number of ranks (required)")
      ("gpus-per-rank", po::value<std::string>()->value_name("G"), "GPUs per rank (default 1 where hosts have GPUs; 0: CPU-only ranks)")
      ("cores-per-rank", po::value<std::string>()->value_name("C"), "cores per CPU-only rank (default: a host's cores split evenly)")
      ("layout", po::value<std::string>()->value_name("LAYOUT"), "parallel layout, e.g. tp=8,pp=2,dp=2[,order=tp-pp-dp] (dp inferred), or auto")
      ("model", po::value<std::string>()->value_name("NAME"), "--layout auto: gpt2-small (default), gpt2-medium, gpt2-large, gpt2-xl or tiny")
      ("microbatches", po::value<std::string>()->value_name("M"), "--layout auto: micro-batches per step over all replicas (default 8)")
      ("seqs-per-microbatch", po::value<std::string>()->value_name("S"), "--layout auto: sequences per micro-batch (default 1)")
      ("gpu-memory", po::value<double>()->value_name("GIB"), "--layout auto: GiB per rank (default: the GPUs' memory when known, else 80)")
      ("gpu-tflops", po::value<double>()->value_name("TFLOPS"), "--layout auto: sustained TFLOP/s per rank (default 100)")
      ("inference", "--layout auto: cost a forward-only step (no gradients or optimizer state)")
      ("policy", po::value<std::string>()->value_name("NAME"), "compact (default), spread, fault-domain, fragmented, gang (the pool's whole-host rule), or by-slot (Open MPI's mapping)")
      ("comm", po::value<std::string>()->value_name("KIND"), "allreduce (default), p2p, or compute (may use fragmented GPUs)")
      ("exclude", po::value<std::vector<std::string>>()->composing()->value_name("LIST"), "hosts not to use (repeatable, hostlists)")
      ("format", po::value<std::string>()->value_name("table|json"), "table (default) or json")
      ("explain", "say why each host was chosen or passed over, and which engine would start the job")
      ("launcher", po::value<std::string>()->value_name("NAME"), "the engine, as for launches (default auto); it also discovers the hosts")
      ("program", po::value<std::string>()->value_name("PATH"), "the job's program: with --launcher auto, the MPI it links picks the engine");
    // clang-format on
    AddClusterOptions(*p);
    return p;
  }();
  return *parser;
}

const SubcommandParser& SlurmConfigParser() {
  static const SubcommandParser* parser = [] {
    auto* p = new SubcommandParser(
        "slurm-config",
        "--out DIR [-H LIST | --hostfile FILE | --topology-file [HOST=]FILE |\n"
        "                              --synthetic SPEC | --cluster FILE] [--network topology.conf]\n"
        "                              [--policy FILE [--slurm-conf FILE]]",
        "Writes DIR/topology.conf (the switch tree) and DIR/gres.conf (each host's GPUs with the\n"
        "cores of their NUMA node) for the cluster as gpulaunch sees it. With --policy, also the Slurm\n"
        "side of a gpulaunch-policy/v1 file: DIR/site-changes.txt (the global slurm.conf settings the\n"
        "policy needs that the site's configuration lacks: never set by gpulaunch), DIR/apply.sh\n"
        "(sacctmgr and scontrol: the teams' accounts, QOS, partitions and reservations on a running\n"
        "cluster with accounting; idempotent), DIR/job_submit.lua (sends each team's jobs to its\n"
        "partitions) and DIR/slurm-policy.conf (the partitions, to include in slurm.conf after apply.sh).\n"
        "The site's configuration is read from --slurm-conf FILE, else from the running slurmctld\n"
        "(scontrol show config) when one answers.");
    p->Add()
      ("out", po::value<std::string>()->value_name("DIR"), "directory to write topology.conf and gres.conf into (required)")
      ("policy", po::value<std::string>()->value_name("FILE"), "a gpulaunch-policy/v1 file: also write its Slurm side")
      ("slurm-conf", po::value<std::string>()->value_name("FILE"), "the site's slurm.conf, to say what the policy needs changed in it (default: ask the running slurmctld)");
    AddClusterOptions(*p);
    return p;
  }();
  return *parser;
}

// mpirun's spelling of -n.
std::vector<std::string> WithMpirunSpellings(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const auto& a : args) out.push_back(a == "-np" ? "--np" : a);
  return out;
}

}  // namespace

StatusOr<PlanOptions> ParsePlanCommandLine(const std::vector<std::string>& args) {
  const SubcommandParser& p = PlanParser();
  GL_ASSIGN_OR_RETURN(po::variables_map vm, p.Parse(WithMpirunSpellings(args)));
  PlanOptions o;
  if (SubcommandParser::WantsHelp(vm)) {
    o.help = true;
    return o;
  }
  if (!vm.count("np")) return p.Error("needs -n N (at least 1 rank), e.g. gpulaunch plan -n 16 --layout tp=8");
  constexpr int kMany = 1 << 24;
  GL_ASSIGN_OR_RETURN(o.ranks, IntOption(p, vm, "np", 0, 1, kMany, "ranks"));
  GL_ASSIGN_OR_RETURN(o.gpus_per_rank, IntOption(p, vm, "gpus-per-rank", -1, -1, 1024, "GPUs"));
  GL_ASSIGN_OR_RETURN(o.cores_per_rank, IntOption(p, vm, "cores-per-rank", 0, 0, kMany, "cores"));
  GL_ASSIGN_OR_RETURN(o.microbatches, IntOption(p, vm, "microbatches", o.microbatches, 1, kMany, "micro-batches"));
  GL_ASSIGN_OR_RETURN(o.seqs_per_microbatch,
                      IntOption(p, vm, "seqs-per-microbatch", o.seqs_per_microbatch, 1, kMany, "sequences"));
  if (vm.count("layout")) o.layout = vm["layout"].as<std::string>();
  if (vm.count("model")) o.model = vm["model"].as<std::string>();
  if (vm.count("gpu-memory")) o.gpu_memory_gib = vm["gpu-memory"].as<double>();
  if (vm.count("gpu-tflops")) o.gpu_tflops = vm["gpu-tflops"].as<double>();
  o.inference = vm.count("inference") > 0;
  if ((o.gpu_memory_gib && !(*o.gpu_memory_gib > 0)) || !(o.gpu_tflops > 0) ||
      o.gpu_tflops > std::numeric_limits<float>::max()) {
    return p.Error("--gpu-memory and --gpu-tflops must be positive numbers");
  }
  if (vm.count("policy")) o.policy = vm["policy"].as<std::string>();
  if (vm.count("comm")) o.comm = vm["comm"].as<std::string>();
  if (o.comm != "allreduce" && o.comm != "p2p" && o.comm != "compute") {
    return p.Error("--comm " + o.comm + ": choose allreduce, p2p or compute");
  }
  if (vm.count("exclude")) o.exclude = vm["exclude"].as<std::vector<std::string>>();
  GL_ASSIGN_OR_RETURN(o.format, FormatOption(p, vm));
  o.explain = vm.count("explain") > 0;
  if (vm.count("launcher")) o.launcher = vm["launcher"].as<std::string>();
  if (vm.count("program")) o.program = vm["program"].as<std::string>();
  GL_RETURN_IF_ERROR(ReadClusterOptions(p, vm, o));
  return o;
}

StatusOr<PlanOptions> ParseSlurmConfigCommandLine(const std::vector<std::string>& args) {
  const SubcommandParser& p = SlurmConfigParser();
  GL_ASSIGN_OR_RETURN(po::variables_map vm, p.Parse(args));
  PlanOptions o;
  if (SubcommandParser::WantsHelp(vm)) {
    o.help = true;
    return o;
  }
  if (!vm.count("out")) return p.Error("needs --out DIR, where topology.conf and gres.conf go");
  o.out_dir = vm["out"].as<std::string>();
  if (vm.count("policy")) o.policy_file = vm["policy"].as<std::string>();
  if (vm.count("slurm-conf")) {
    if (!o.policy_file) return p.Error("--slurm-conf is read for --policy: give the policy file too");
    o.slurm_conf = vm["slurm-conf"].as<std::string>();
  }
  GL_RETURN_IF_ERROR(ReadClusterOptions(p, vm, o));
  return o;
}

std::string PlanHelpText() {
  return PlanParser().Help() +
         "\nExamples:\n"
         "  gpulaunch plan -n 16 --layout tp=8 --synthetic 'leaf:2 node:4 gpu:8 nic:4'\n"
         "  gpulaunch plan -n 8 --topology-file dgx.xml --hostfile hosts --network topology.conf --explain\n"
         "  gpulaunch plan -n 32 --layout tp=4,pp=2 --format json --synthetic 'node:4 gpu:8'\n";
}

std::string SlurmConfigHelpText() { return SlurmConfigParser().Help(); }

}  // namespace gpulaunch
