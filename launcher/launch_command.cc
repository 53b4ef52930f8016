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
#include "launcher/discovery/hwloc_source.h"
#include "launcher/discovery/remote_topology_cache.h"
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

// What must hold before anything is discovered or started: an engine that
// runs here, root only when allowed, the program, and the -x names that are
// set here (the others are dropped with a warning, as mpirun does).
Status CheckLaunchable(LaunchOptions& o, const Engine& engine, bool root_allowed) {
  if (!o.dry_run) GL_RETURN_IF_ERROR(engine.IsViable());
  if (geteuid() == 0 && !root_allowed && !o.dry_run && engine.RefusesRootByDefault()) {
    return FailedPrecondition("refusing to run as root, as mpirun does; add --allow-run-as-root (or export "
                              "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1) if you mean it");
  }
  if (!o.dry_run) GL_RETURN_IF_ERROR(CheckProgram(o.program[0]));
  for (auto it = o.env.begin(); it != o.env.end();) {
    if (!it->value && !HasEnv(it->name.c_str())) {
      std::cerr << "gpulaunch: warning: -x " << it->name << ": not set here, so not exported\n";
      it = o.env.erase(it);
    } else {
      ++it;
    }
  }
  return Status::Ok();
}

// Says how the hosts' order came about, for --dry-run and --display-map:
// the given order (a hostfile's or -H's, as mpirun fills it), or the
// policy's choice by the network tree, with the placement's reasons.
void NoteHostOrder(const LaunchOptions& o, const ClusterTopology& cluster, Placement& p) {
  if (cluster.hosts.size() < 2) return;
  for (std::string& note : LinkSourceNotes(cluster, p.hosts)) p.notes.push_back(std::move(note));
  std::vector<std::string> given;
  for (const ClusterHost& h : cluster.hosts) {
    if (std::find(p.hosts.begin(), p.hosts.end(), h.name) != p.hosts.end()) given.push_back(h.name);
  }
  const std::string policy = o.policy.empty() ? "compact" : o.policy;
  if (given == p.hosts && given.size() == cluster.hosts.size()) {
    if (cluster.network.empty()) {
      p.notes.push_back("hosts in the order given (no network tree: --network FILE, Slurm's inside an allocation, or leaves linkcheck --concurrent measured)");
    }
    return;
  }
  p.notes.push_back("hosts " + Join(p.hosts, ", ") + " of the " + std::to_string(cluster.hosts.size()) +
                    " given, in this order: policy " + policy +
                    (cluster.network.empty() ? "" : " by the network tree") + "; --policy by-slot keeps the given order");
  for (const std::string& why : p.explain) {
    if (why.find(": chosen") != std::string::npos || why.find(": passed over") != std::string::npos) {
      p.notes.push_back(why);
    }
  }
}

// The plan for one attempt on `cluster`. The placement engine decides, as for
// `gpulaunch plan`; what it cannot bind (more ranks than GPUs or cores:
// --oversubscribe, or slots granted beyond the hardware) it fills slot by
// slot, unbound.
StatusOr<LaunchPlan> PlanAttempt(const LaunchOptions& o, const ClusterTopology& cluster, bool all_local,
                                 bool in_allocation) {
  int slots = 0;
  for (const ClusterHost& h : cluster.hosts) slots += EffectiveSlots(h);
  JobRequest request = SlotJob(o.ranks > 0 ? o.ranks : slots, o.oversubscribe);
  GL_ASSIGN_OR_RETURN(request.layout, ParseLayout(o.layout, request.ranks));
  request.unbound_when_unbindable = true;
  if (!o.policy.empty()) request.policy = o.policy;
  // Inside an allocation, the GPUs Slurm gave each task (--gpus-per-task,
  // or more GPUs than tasks on each node) all go to its rank.
  std::optional<GpuShare> share;
  if (in_allocation) share = GpusPerRankInAllocation(GetEnv("SLURM_GPUS_PER_TASK"), cluster.hosts);
  if (share) request.gpus_per_rank = share->per_rank;
  auto placement = Place(request, cluster);
  if (!placement.ok() && in_allocation && placement.status().code() == StatusCode::kInfeasible) {
    return Infeasible(placement.status().message() + "; inside Slurm allocation " + EnvOr("SLURM_JOB_ID", "") +
                      " the slots are its tasks: ask sbatch/salloc for more (-n, --ntasks-per-node) or launch "
                      "fewer ranks");
  }
  if (!placement.ok()) return placement.status();
  if (share) placement->notes.push_back(std::to_string(share->per_rank) + " GPUs per rank, from " + share->source);
  NoteHostOrder(o, cluster, *placement);
  return MakeLaunchPlan(std::move(placement).value(), request.layout, o, all_local);
}

// After a failed attempt: leaves the failed hosts out when the others still
// hold the job (never inside an allocation, whose hosts are Slurm's), and
// says how the job is launched again.
void PrepareRestart(const LaunchOptions& o, const ClusterTopology& cluster, int ranks, const LaunchOutcome& outcome,
                    int restart, bool in_allocation, std::set<std::string>& excluded) {
  const std::string failed = Join({outcome.failed_hosts.begin(), outcome.failed_hosts.end()}, ", ");
  int spare = 0;
  for (const ClusterHost& h : cluster.hosts)
    if (!outcome.failed_hosts.count(h.name)) spare += EffectiveSlots(h);
  std::string where;
  if (!outcome.failed_hosts.empty() && spare >= ranks && !in_allocation) {
    excluded.insert(outcome.failed_hosts.begin(), outcome.failed_hosts.end());
    where = " without " + failed;
  } else if (!outcome.failed_hosts.empty()) {
    where = " on the same hosts (no spare slots for " + std::to_string(ranks) + " ranks without " + failed + ")";
  }
  std::cerr << "gpulaunch: restart " << restart + 1 << " of " << o.max_restarts << ": launching the job again"
            << where << " (GPULAUNCH_RESTART_COUNT=" << restart + 1 << ")\n";
}

// After a launch found `changed` hosts unlike their cached topology (no rank
// ran): their entries are dropped and the cluster is built again from a live
// discovery of every host, so the next attempt has nothing left to confirm.
Status Rediscover(const std::set<std::string>& changed, const ClusterSource& source, const ResolveSettings& resolve,
                  BuiltCluster& built) {
  const std::string names = Join({changed.begin(), changed.end()}, ", ");
  std::cerr << "gpulaunch: " << names << (changed.size() == 1 ? " has" : " have")
            << " changed since gpulaunch cached " << (changed.size() == 1 ? "its" : "their")
            << " topology; no rank ran: discovering again and launching anew\n";
  for (const std::string& host : changed) DropCachedProbe(host, resolve.probe_path);
  ResolveSettings live = resolve;
  live.use_cached_probes = false;
  GL_ASSIGN_OR_RETURN(built, BuildClusterTopology(source, live));
  return Status::Ok();
}

EngineSettings EngineSettingsFor(const LaunchOptions& o, const fs::path& bin, bool root_allowed, bool all_local) {
  EngineSettings settings;
  settings.shim = (bin / "gpulaunch-shim").string();
  settings.tag = o.tag;
  settings.allow_run_as_root = root_allowed;
  settings.loopback_only = all_local;
  settings.kill_grace_s = o.kill_grace_s;
  if (all_local && !o.dry_run) settings.local_topology_xml = LocalTopologyXmlForEngine();
  return settings;
}

}  // namespace

int RunLaunchCommand(const std::vector<std::string>& args) {
  auto cl = ParseCommandLine(args);
  if (!cl.ok()) return Fail(cl.status());
  if (cl->action != CommandAction::kRun) {
    std::cout << (cl->action == CommandAction::kHelp ? HelpText() : VersionText());
    return kExitOk;
  }
  LaunchOptions& o = cl->options;
  const bool root_allowed =
      o.allow_run_as_root || (EnvIs("OMPI_ALLOW_RUN_AS_ROOT", "1") && EnvIs("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"));
  // The engine: srun inside a Slurm allocation (one job step), else mpirun.
  // From here on nothing asks which one it is (launcher/engine/engine.h).
  const bool in_allocation = InSlurmAllocation();
  auto selected = ChooseEngine(o.launcher, o.program[0]);
  if (!selected.ok()) return Fail(selected.status());
  const Engine& engine = *selected->engine;
  if (Status s = CheckLaunchable(o, engine, root_allowed); !s.ok()) return Fail(s);

  const fs::path bin = SelfDir();
  // A launch may plan from cached remote topologies: it confirms them before
  // any rank runs (launcher/discovery/remote_topology_cache.h).
  const ResolveSettings resolve{(bin / "gpulaunch-probe").string(), root_allowed, &engine,
                                /*use_cached_probes=*/!o.dry_run && !in_allocation};
  ClusterSource source;
  source.hosts = HostRequest{o.host_args, o.hostfile, o.topology_files, o.dry_run};
  source.network = o.network;
  source.links = o.links;
  auto built = BuildClusterTopology(source, resolve);
  if (!built.ok()) return Fail(built.status());
  std::set<std::string> excluded;  // hosts that failed in an earlier attempt (--on-failure=restart:N)
  for (int restart = 0;; ++restart) {
    const ClusterTopology cluster = WithoutHosts(built->topology, excluded);
    auto plan = PlanAttempt(o, cluster, built->all_local, in_allocation);
    if (!plan.ok()) return Fail(plan.status());
    const EngineSettings settings = EngineSettingsFor(o, bin, root_allowed, plan->all_local);
    if (o.dry_run) {
      WritePlanTable(std::cout, *plan);
      std::cout << "engine: " << selected->reason << "\n";
      engine.DescribeJob(std::cout, *plan, settings);
      return kExitOk;
    }
    // As mpirun's --display-map: the placement and the engine, as --dry-run
    // shows them, on stdout before any rank's output.
    if (o.display_map) {
      WritePlanTable(std::cout, *plan);
      std::cout << "engine: " << selected->reason << "\n" << std::flush;
    }
    // Outside the plan hash: a relaunch is the same plan, told it is one.
    plan->env.push_back({"GPULAUNCH_RESTART_COUNT", std::to_string(restart)});
    RunSettings run = RunSettingsFor(o, restart);
    run.cached_fingerprints = built->cached_fingerprints;
    const LaunchOutcome outcome = LaunchPlannedJob(*plan, engine, settings, run);
    if (!outcome.changed_hosts.empty()) {
      if (Status s = Rediscover(outcome.changed_hosts, source, resolve, *built); !s.ok()) return Fail(s);
      --restart;  // not a restart: nothing ran
      continue;
    }
    if (outcome.exit_code == 0 || !outcome.restartable || restart >= o.max_restarts) return outcome.exit_code;
    PrepareRestart(o, cluster, static_cast<int>(plan->placement.ranks.size()), outcome, restart, in_allocation,
                   excluded);
  }
}

}  // namespace gpulaunch
