// The command line of `gpulaunch submit`. Its own options go through
// SubcommandParser like every subcommand's; it stops at "--" or at the first
// word that is not one of them, and the rest is the command line of the
// gpulaunch inside the batch job: parsed here as that gpulaunch will parse
// it, so a mistake exits 2 now instead of failing once the job runs.
#include <filesystem>
#include <regex>

#include "launcher/core/options.h"
#include "launcher/core/subcommand_parser.h"

namespace po = boost::program_options;

namespace gpulaunch {
namespace {

const SubcommandParser& SubmitParser() {
  static const SubcommandParser* parser = [] {
    auto* p = new SubcommandParser(
        "submit",
        "-N NODES [-n RANKS] [--gpus-per-node G] [--time T] [--partition P]\n"
        "                        [--job-name NAME] [--output FILE] [--script FILE] [--sbatch-arg ARG]...\n"
        "                        [--test-only | --validate] [gpulaunch options] [--] PROGRAM [ARGS...]",
        "Writes a batch script that runs gpulaunch with the given options on the allocation,\n"
        "submits it with sbatch and prints the job id. Everything after submit's own options is\n"
        "the job's gpulaunch command line; it is checked now, and a mistake exits 2 before\n"
        "anything is submitted.\n\n"
        "Any other sbatch option goes in with --sbatch-arg, spelt as sbatch spells it, one per\n"
        "--sbatch-arg (written to its own #SBATCH line, quoted for sbatch), for example:\n"
        "  --sbatch-arg=--account=proj        --sbatch-arg=--qos=high       --sbatch-arg=--constraint=a100\n"
        "  --sbatch-arg=--exclusive           --sbatch-arg=--overcommit     --sbatch-arg=--gres=gpu:4\n"
        "  --sbatch-arg=--gpus-per-task=1     --sbatch-arg=--signal=B:USR1@120\n"
        "  --sbatch-arg=--dependency=afterok:42   --sbatch-arg=--array=0-3\n"
        "  --sbatch-arg=--mail-type=END,FAIL      --sbatch-arg=--mail-user=me@example.org\n"
        "Small test nodes with fewer cores than ranks need --sbatch-arg=--overcommit.\n"
        "--test-only asks sbatch whether and when the job would start (sbatch --test-only) and\n"
        "submits nothing: exit 0 when it would run, 2 when Slurm refuses the request. --validate\n"
        "asks the same first and submits only when Slurm would run the job (else exit 2).");
    // clang-format off
    p->Add()
      ("nodes,N", po::value<std::string>()->value_name("NODES"), "nodes (required)")
      ("ntasks,n", po::value<std::string>()->value_name("RANKS"), "ranks (default: Slurm's, one per node)")
      ("gpus-per-node", po::value<std::string>()->value_name("G"), "GPUs per node")
      ("time,t", po::value<std::string>()->value_name("T"), "time limit, as sbatch takes it (e.g. 10:00)")
      ("partition,p", po::value<std::string>()->value_name("P"), "partition")
      ("job-name,J", po::value<std::string>()->value_name("NAME"), "job name (default gpulaunch)")
      ("output,o", po::value<std::string>()->value_name("FILE"), "the batch job's output file")
      ("script", po::value<std::string>()->value_name("FILE"), "keep the batch script at FILE")
      ("sbatch-arg", po::value<std::vector<std::string>>()->composing()->value_name("ARG"),
       "one more sbatch option, e.g. --sbatch-arg=--account=proj (repeatable)")
      ("test-only", "ask sbatch --test-only whether the job would start; submit nothing")
      ("validate", "ask sbatch --test-only first, and submit only when Slurm would run the job");
    // clang-format on
    return p;
  }();
  return *parser;
}

// sbatch's --time: minutes, minutes:seconds, hours:minutes:seconds,
// days-hours, days-hours:minutes, days-hours:minutes:seconds, or
// UNLIMITED / INFINITE.
bool IsSbatchTime(const std::string& t) {
  static const std::regex form(R"(\d+(:\d+){0,2}|\d+-\d+(:\d+){0,2}|UNLIMITED|INFINITE)", std::regex::icase);
  return t.size() <= 32 && std::regex_match(t, form);
}

// sbatch reads #SBATCH lines word by word; a newline would end the line.
Status OneLine(const SubcommandParser& p, const std::string& option, const std::string& value) {
  if (value.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
    return p.Error(option + ": a value must be one line");
  }
  return Status::Ok();
}

// Where submit's own options end: at "--" or at the first word that is not
// one of them (the job's gpulaunch line starts there).
size_t JobLineStart(const SubcommandParser& p, const std::vector<std::string>& args) {
  size_t split = 0;
  while (split < args.size() && args[split] != "--") {
    const int after = p.WordsAfter(args[split]);
    if (after < 0) break;
    split += 1 + static_cast<size_t>(after);
  }
  return std::min(split, args.size());
}

// The #SBATCH side: node and rank counts, time, names, and --sbatch-arg.
Status ReadBatchOptions(const SubcommandParser& p, const po::variables_map& vm, SubmitOptions& o) {
  if (!vm.count("nodes")) return p.Error("needs -N NODES, e.g. gpulaunch submit -N 4 -- ./job");
  GL_ASSIGN_OR_RETURN(o.job.nodes, IntOption(p, vm, "nodes", 0, 1, 1000000, "nodes"));
  GL_ASSIGN_OR_RETURN(o.job.ranks, IntOption(p, vm, "ntasks", 0, 1, 100000000, "ranks"));
  GL_ASSIGN_OR_RETURN(o.job.gpus_per_node, IntOption(p, vm, "gpus-per-node", 0, 1, 1024, "GPUs"));
  for (auto [name, out] : {std::pair{"time", &o.job.time}, std::pair{"partition", &o.job.partition},
                           std::pair{"job-name", &o.job.job_name}, std::pair{"output", &o.job.output}}) {
    if (!vm.count(name)) continue;
    *out = vm[name].as<std::string>();
    GL_RETURN_IF_ERROR(OneLine(p, std::string("--") + name, *out));
    if (out->empty()) return p.Error(std::string("--") + name + " is empty");
  }
  if (!o.job.time.empty() && !IsSbatchTime(o.job.time)) {
    return p.Error("--time " + o.job.time + ": give minutes, MM:SS, HH:MM:SS or D-HH[:MM[:SS]], as sbatch takes it "
                   "(e.g. --time 30 or --time 1-12:00:00)");
  }
  if (vm.count("sbatch-arg")) o.job.sbatch_args = vm["sbatch-arg"].as<std::vector<std::string>>();
  for (const std::string& a : o.job.sbatch_args) {
    GL_RETURN_IF_ERROR(OneLine(p, "--sbatch-arg", a));
    if (a.size() < 2 || a[0] != '-') {
      return p.Error("--sbatch-arg '" + a + "': give one sbatch option as sbatch spells it, e.g. "
                     "--sbatch-arg=--account=proj");
    }
  }
  return Status::Ok();
}

// The gpulaunch in the job will parse its line: parse it now, so that a
// mistake costs no queue wait.
Status CheckJobLine(const SubcommandParser& p, const std::vector<std::string>& launch) {
  if (launch.empty()) return p.Error("no program; e.g. gpulaunch submit -N 4 -- ./job");
  auto job = ParseCommandLine(launch);
  if (!job.ok()) {
    std::string why = job.status().message();
    for (const std::string& word : launch) {
      if (word.rfind("-", 0) == 0 && why.find("option '" + word + "'") != std::string::npos) {
        why += " (if that is an sbatch option, give it as --sbatch-arg=" + word + ")";
        break;
      }
    }
    return p.Error("the job's gpulaunch command line: " + why + "; nothing was submitted");
  }
  if (job->action != CommandAction::kRun) {
    return p.Error("the job's gpulaunch command line asks for --help or --version; give the program to run");
  }
  // The batch job starts where it is submitted from, on a filesystem the
  // nodes share: a hostfile missing here is missing there.
  if (job->options.hostfile && !std::filesystem::is_regular_file(*job->options.hostfile)) {
    return p.Error("the job's gpulaunch command line: --hostfile " + *job->options.hostfile +
                   ": no such file here; nothing was submitted");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<SubmitOptions> ParseSubmitCommandLine(const std::vector<std::string>& args) {
  const SubcommandParser& p = SubmitParser();
  size_t split = JobLineStart(p, args);
  const std::vector<std::string> own(args.begin(), args.begin() + static_cast<long>(split));
  if (split < args.size() && args[split] == "--") ++split;
  GL_ASSIGN_OR_RETURN(po::variables_map vm, p.Parse(own));
  SubmitOptions o;
  if (SubcommandParser::WantsHelp(vm)) {
    o.help = true;
    return o;
  }
  GL_RETURN_IF_ERROR(ReadBatchOptions(p, vm, o));
  if (vm.count("script")) o.script = vm["script"].as<std::string>();
  o.test_only = vm.count("test-only") > 0;
  o.validate = vm.count("validate") > 0;
  if (o.test_only && o.validate) return p.Error("--test-only submits nothing and --validate submits; give one");
  o.job.launch.assign(args.begin() + static_cast<long>(split), args.end());
  GL_RETURN_IF_ERROR(CheckJobLine(p, o.job.launch));
  return o;
}

std::string SubmitHelpText() { return SubmitParser().Help(); }

}  // namespace gpulaunch
