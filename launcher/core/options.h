// The gpulaunch command line, parsed the way mpirun users expect: options up to
// the program name (or `--`), everything after it belongs to the job. Single-
// dash long forms (-np, -host, -hostfile) are accepted as in mpirun.
// Boost.ProgramOptions stays inside options.cc.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "slurm/batch_script.h"

namespace gpulaunch {

// -x VAR=VALUE sets VAR for every rank; -x VAR copies it from gpulaunch's env.
struct EnvAssignment {
  std::string name;
  std::optional<std::string> value;
  bool operator==(const EnvAssignment&) const = default;
};

struct LaunchOptions {
  int ranks = 0;                          // -n; 0 = one rank per slot
  std::vector<std::string> host_args;     // each -H/--host value, in order
  std::optional<std::string> hostfile;    // --hostfile / --machinefile
  std::vector<EnvAssignment> env;         // -x, in order
  bool oversubscribe = false;
  bool tag = false;                       // --tag / --tag-output
  bool dry_run = false;
  bool display_map = false;               // --display-map: print the plan table, then launch
  bool allow_run_as_root = false;
  std::optional<int> timeout_s;           // --timeout: the job's wall-clock limit
  std::optional<int> kill_grace_s;        // engine's SIGTERM -> SIGKILL delay; unset: its default
  int startup_timeout_s = 0;              // --startup-timeout; 0: not watched
  int stall_timeout_s = 0;                // --stall-timeout; 0: not watched
  int max_restarts = 0;                   // --on-failure=restart:N; 0: abort
  std::string summary_path = "gpulaunch-summary.json";  // empty: --no-summary
  bool profile = false;                   // --profile: runtime step metrics and a run report
  std::string profile_dir = "gpulaunch-profile";  // --profile-dir: metrics files
  std::string launcher = "auto";          // auto (srun inside a Slurm allocation), mpirun, srun
  std::string layout;                     // "tp=2,pp=2[,dp=..][,order=...]"; empty: data parallel
  // --topology-file, repeatable: "FILE" for every host, or "HOST=FILE".
  std::vector<std::string> topology_files;
  std::optional<std::string> network;     // --network: topology.conf switch tree
  std::optional<std::string> links;       // --links: measured links, "none" for nominal figures
  std::string policy;                     // --policy: placement policy; empty: compact
  std::vector<std::string> program;       // argv of the job
};

enum class CommandAction { kRun, kHelp, kVersion };

struct CommandLine {
  CommandAction action = CommandAction::kRun;
  LaunchOptions options;
};

// `args` excludes argv[0]. Errors are usage errors (exit 2) whose message says
// what was wrong and how to fix it.
StatusOr<CommandLine> ParseCommandLine(const std::vector<std::string>& args);

std::string HelpText();
std::string VersionText();

// `gpulaunch plan`: show and explain a placement without launching.
struct PlanOptions {
  int ranks = 0;
  int gpus_per_rank = -1;
  int cores_per_rank = 0;
  std::string layout;
  // --layout auto: the model and how a step is costed (layout_auto.h).
  std::string model = "gpt2-small";
  int microbatches = 8;
  int seqs_per_microbatch = 1;
  std::optional<double> gpu_memory_gib;
  double gpu_tflops = 100;
  bool inference = false;
  std::string policy = "compact";
  std::string comm = "allreduce";
  std::vector<std::string> host_args;
  std::optional<std::string> hostfile;
  std::vector<std::string> topology_files;  // as for launches
  std::optional<std::string> synthetic;
  std::optional<std::string> cluster_file;   // --cluster FILE (gpulaunch-cluster/v1)
  std::optional<std::string> dump_cluster;   // --dump-cluster FILE
  std::optional<std::string> network;
  std::optional<std::string> links;    // --links FILE | none
  std::vector<std::string> exclude;
  std::string format = "table";
  bool explain = false;
  std::string launcher = "auto";       // --launcher: the engine a launch would use (plan only)
  std::optional<std::string> program;  // --program: the job's program, whose MPI picks the engine (plan only)
  bool help = false;
  bool allow_run_as_root = false;           // discovery of -H hosts through mpirun
  std::optional<std::string> out_dir;       // slurm-config: where to write the files
  std::optional<std::string> policy_file;   // slurm-config --policy (gpulaunch-policy/v1)
  std::optional<std::string> slurm_conf;    // slurm-config --slurm-conf: the site's slurm.conf
};

// plan_options.cc: `gpulaunch plan` and `gpulaunch slurm-config` (which
// fills only the cluster options, out_dir, policy_file and slurm_conf).
StatusOr<PlanOptions> ParsePlanCommandLine(const std::vector<std::string>& args);
StatusOr<PlanOptions> ParseSlurmConfigCommandLine(const std::vector<std::string>& args);
std::string SlurmConfigHelpText();

// `gpulaunch submit` (submit_options.cc): its own options first, then
// everything for the gpulaunch that the batch job runs (options and
// program), checked now as that gpulaunch would check it and kept verbatim.
struct SubmitOptions {
  BatchJob job;                        // what the script asks of Slurm and runs (--sbatch-arg: job.sbatch_args)
  std::optional<std::string> script;   // keep the batch script at this path
  bool test_only = false;              // sbatch --test-only: ask, submit nothing
  bool validate = false;               // sbatch --test-only first; submit only when Slurm would run it
  bool help = false;
};
StatusOr<SubmitOptions> ParseSubmitCommandLine(const std::vector<std::string>& args);
std::string SubmitHelpText();
std::string PlanHelpText();

// `gpulaunch nodes`: the resource table of a host list, hostfile or Slurm
// allocation (nodes_command.h).
struct NodesOptions {
  std::vector<std::string> host_args;  // -H/--host, repeatable
  std::optional<std::string> hostfile;
  std::string format = "table";        // table | json
  int budget_s = 10;                   // --budget: how long a host may take to answer
  int watch_s = 0;                     // --watch: refresh every S seconds (0: once)
  int count = 0;                       // --count: stop after N refreshes (0: never)
  std::string launcher = "auto";       // --launcher: the engine that reaches the hosts
  bool allow_run_as_root = false;
  bool help = false;
};
StatusOr<NodesOptions> ParseNodesCommandLine(const std::vector<std::string>& args);
std::string NodesHelpText();

// `gpulaunch check`: cluster checks over a host list, hostfile or Slurm
// allocation (check_command.h): the pre-flight checks, or --storage.
struct CheckOptions {
  std::vector<std::string> host_args;
  std::optional<std::string> hostfile;
  std::optional<std::string> storage;  // --storage PATH: the shared-storage check instead
  std::optional<std::string> binary;   // --binary PATH: the job's program must resolve everywhere
  std::optional<std::string> save;     // --save FILE: record the hosts' facts as a baseline
  std::optional<std::string> compare;  // --compare FILE: report what changed since a baseline
  std::optional<std::string> links;    // --links FILE|default: also measure the links and save them
  double max_clock_skew_s = 1.0;       // --max-clock-skew
  int size_mib = 16;                   // --size: MiB each host writes and reads
  std::string format = "table";
  int budget_s = 30;                   // --budget: per host (and phase for --storage)
  std::string launcher = "auto";       // --launcher: the engine that reaches the hosts (and would start --binary)
  bool allow_run_as_root = false;
  bool help = false;
};
StatusOr<CheckOptions> ParseCheckCommandLine(const std::vector<std::string>& args);
std::string CheckHelpText();

}  // namespace gpulaunch
