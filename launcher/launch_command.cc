// The launch command (`gpulaunch [options] PROGRAM [ARGS...]`): parse,
// resolve hosts and discover them, place, plan, start the plan through the
// engine (job_launch.h), report; launch again without failed hosts
// (--on-failure=restart:N).
#include "launcher/launch_command.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>

#include "common/env.h"
#include "common/strings.h"
#include "launcher/engine/engine.h"
#include "launcher/base/exit_codes.h"
#include "launcher/core/cluster_source.h"
#include "launcher/job/job_launch.h"
#include "launcher/core/options.h"
#include "launcher/core/plan.h"
#include "launcher/core/slurm_job.h"
#include "policies/placement_engine.h"
#include "policies/slot_placement.h"

namespace fs = std::filesystem;

namespace gpulaunch {
namespace {

// The program must exist here (mpirun runs the same path on every host).
Status CheckProgram(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    if (access(program.c_str(), F_OK) != 0) return NotFound("program '" + program + "' does not exist");
    if (access(program.c_str(), X_OK) != 0 || fs::is_directory(program)) {
      return NotFound("program '" + program + "' is not executable (chmod +x it?)");
    }
    return Status::Ok();
  }
  for (const std::string& dir : Split(EnvOr("PATH", ""), ':')) {
    const std::string cand = (dir.empty() ? "." : dir) + "/" + program;
    if (access(cand.c_str(), X_OK) == 0 && !fs::is_directory(cand)) return Status::Ok();
  }
  return NotFound("program '" + program + "' not found in PATH; give its path, e.g. ./" + program);
}

fs::path SelfDir() { return fs::read_symlink("/proc/self/exe").parent_path(); }

RunSettings RunSettingsFor(const LaunchOptions& o, int restart) {
  RunSettings run;
  run.restart = restart;
  run.tag = o.tag;
  run.timeout_s = o.timeout_s;
  run.kill_grace_s = o.kill_grace_s;
  run.startup_timeout_s = o.startup_timeout_s;
  run.stall_timeout_s = o.stall_timeout_s;
  run.summary_path = o.summary_path;
  run.profile = o.profile;
  run.profile_dir = o.profile_dir;
  return run;
}

}  // namespace

int RunLaunchCommand(const std::vector<std::string>& args) {
  auto cl = ParseCommandLine(args);
  if (!cl.ok()) return Fail(cl.status());
  if (cl->action == CommandAction::kHelp) {
    std::cout << HelpText();
    return kExitOk;
  }
  if (cl->action == CommandAction::kVersion) {
    std::cout << VersionText();
    return kExitOk;
  }
  LaunchOptions& o = cl->options;
  const bool root_allowed =
      o.allow_run_as_root || (EnvIs("OMPI_ALLOW_RUN_AS_ROOT", "1") && EnvIs("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"));
  // The engine: srun inside a Slurm allocation (one job step), else mpirun.
  // From here on nothing asks which one it is (launcher/engine/engine.h).
  const bool in_allocation = InSlurmAllocation();
  auto selected = SelectEngine(o.launcher);
  if (!selected.ok()) return Fail(selected.status());
  const Engine& engine = **selected;
  if (!o.dry_run) {
    if (Status s = engine.IsViable(); !s.ok()) return Fail(s);
  }
  if (geteuid() == 0 && !root_allowed && !o.dry_run && engine.RefusesRootByDefault()) {
    return Fail(FailedPrecondition("refusing to run as root, as mpirun does; add --allow-run-as-root (or export "
                                   "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1) if you mean it"));
  }
  if (!o.dry_run) {
    if (Status s = CheckProgram(o.program[0]); !s.ok()) return Fail(s);
  }
  for (auto it = o.env.begin(); it != o.env.end();) {
    if (!it->value && !HasEnv(it->name.c_str())) {
      std::cerr << "gpulaunch: warning: -x " << it->name << ": not set here, so not exported\n";
      it = o.env.erase(it);
    } else {
      ++it;
    }
  }
  const fs::path bin = SelfDir();
  const ResolveSettings resolve{(bin / "gpulaunch-probe").string(), root_allowed, &engine};
  ClusterSource source;
  source.hosts = HostRequest{o.host_args, o.hostfile, o.topology_files, o.dry_run};
  auto built = BuildClusterTopology(source, resolve);
  if (!built.ok()) return Fail(built.status());
  // Hosts that failed in an earlier launch of this job (--on-failure=restart:N).
  std::set<std::string> excluded;
  for (int restart = 0;; ++restart) {
    // The placement engine decides, as for `gpulaunch plan`; what it cannot
    // bind (more ranks than GPUs or cores: --oversubscribe, or slots granted
    // beyond the hardware) it fills slot by slot, unbound.
    const ClusterTopology cluster = WithoutHosts(built->topology, excluded);
    int slots = 0;
    for (const ClusterHost& h : cluster.hosts) slots += EffectiveSlots(h);
    JobRequest request = SlotJob(o.ranks > 0 ? o.ranks : slots, o.oversubscribe);
    auto layout = ParseLayout(o.layout, request.ranks);
    if (!layout.ok()) return Fail(layout.status());
    request.layout = *layout;
    request.unbound_when_unbindable = true;
    // Inside an allocation, the GPUs Slurm gave each task (--gpus-per-task,
    // or more GPUs than tasks on each node) all go to its rank.
    std::optional<GpuShare> share;
    if (in_allocation) share = GpusPerRankInAllocation(GetEnv("SLURM_GPUS_PER_TASK"), cluster.hosts);
    if (share) request.gpus_per_rank = share->per_rank;
    auto placement = Place(request, cluster);
    if (placement.ok() && share) {
      placement->notes.push_back(std::to_string(share->per_rank) + " GPUs per rank, from " + share->source);
    }
    if (!placement.ok() && in_allocation && placement.status().code() == StatusCode::kInfeasible) {
      return Fail(Infeasible(placement.status().message() + "; inside Slurm allocation " +
                             EnvOr("SLURM_JOB_ID", "") + " the slots are its tasks: ask sbatch/salloc for more "
                             "(-n, --ntasks-per-node) or launch fewer ranks"));
    }
    if (!placement.ok()) return Fail(placement.status());
    LaunchPlan plan = MakeLaunchPlan(std::move(placement).value(), request.layout, o, built->all_local);

    EngineSettings settings;
    settings.shim = (bin / "gpulaunch-shim").string();
    settings.tag = o.tag;
    settings.allow_run_as_root = root_allowed;
    settings.loopback_only = plan.all_local;
    settings.kill_grace_s = o.kill_grace_s;
    if (o.dry_run) {
      WritePlanTable(std::cout, plan);
      engine.DescribeJob(std::cout, plan, settings);
      return kExitOk;
    }
    // As mpirun's --display-map: the placement, on stdout before any rank's output.
    if (o.display_map) {
      WritePlanTable(std::cout, plan);
      std::cout << std::flush;
    }
    // Outside the plan hash: a relaunch is the same plan, told it is one.
    plan.env.push_back({"GPULAUNCH_RESTART_COUNT", std::to_string(restart)});
    const LaunchOutcome outcome = LaunchPlannedJob(plan, engine, settings, RunSettingsFor(o, restart));
    if (outcome.exit_code == 0 || !outcome.restartable || restart >= o.max_restarts) return outcome.exit_code;
    // Leave the failed hosts out when the others still hold the job.
    int spare = 0;
    for (const ClusterHost& h : cluster.hosts)
      if (!outcome.failed_hosts.count(h.name)) spare += EffectiveSlots(h);
    std::string without;
    if (!outcome.failed_hosts.empty() && spare >= request.ranks && !in_allocation) {
      excluded.insert(outcome.failed_hosts.begin(), outcome.failed_hosts.end());
      without = " without " + Join({outcome.failed_hosts.begin(), outcome.failed_hosts.end()}, ", ");
    } else if (!outcome.failed_hosts.empty()) {
      without = " on the same hosts (no spare slots for " + std::to_string(request.ranks) + " ranks without " +
                Join({outcome.failed_hosts.begin(), outcome.failed_hosts.end()}, ", ") + ")";
    }
    std::cerr << "gpulaunch: restart " << restart + 1 << " of " << o.max_restarts << ": launching the job again"
              << without << " (GPULAUNCH_RESTART_COUNT=" << restart + 1 << ")\n";
  }
}

}  // namespace gpulaunch
