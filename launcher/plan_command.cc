#include "launcher/plan_command.h"

#include "common/file_write.h"
#include "common/output_dir.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "common/env.h"
#include "common/hostlist.h"
#include "common/strings.h"
#include "launcher/engine/engine.h"
#include "launcher/base/exit_codes.h"
#include "launcher/base/host_identity.h"
#include "launcher/core/cluster_source.h"
#include "launcher/core/layout_auto.h"
#include "launcher/core/options.h"
#include "launcher/core/plan.h"
#include "launcher/plan_output.h"
#include "policies/placement_engine.h"
#include "slurm/slurm_config.h"
#include "launcher/slurm_policy_files.h"
#include "slurm/policy_slurm_side.h"
#include "slurm/slurm_policy.h"

namespace fs = std::filesystem;

namespace gpulaunch {
namespace {

// plan and slurm-config: the cluster their options describe (cluster_source.h),
// discovered through `engine`.
StatusOr<ClusterTopology> BuildCluster(const PlanOptions& o, const Engine& engine) {
  ClusterSource source{HostRequest{o.host_args, o.hostfile, o.topology_files, /*planning_only=*/true}, o.synthetic,
                       o.cluster_file, o.network, o.dump_cluster, o.links};
  const std::string probe = (fs::read_symlink("/proc/self/exe").parent_path() / "gpulaunch-probe").string();
  GL_ASSIGN_OR_RETURN(BuiltCluster built, BuildClusterTopology(source, ResolveSettings{probe, o.allow_run_as_root,
                                                                                       &engine}));
  for (const std::string& note : built.notes) std::cerr << "gpulaunch: note: " << note << "\n";
  return std::move(built.topology);
}

// The job `plan` was asked for, its layout chosen or parsed.
StatusOr<JobRequest> PlanRequest(const PlanOptions& o, const ClusterTopology& cluster) {
  JobRequest r;
  r.ranks = o.ranks;
  r.gpus_per_rank = o.gpus_per_rank;
  r.cores_per_rank = o.cores_per_rank;
  r.policy = o.policy;
  r.comm = o.comm;
  for (const std::string& e : o.exclude) {
    GL_ASSIGN_OR_RETURN(std::vector<std::string> names, ExpandHostlist(e));
    r.exclude_hosts.insert(r.exclude_hosts.end(), names.begin(), names.end());
  }
  if (o.layout == "auto") {
    GL_ASSIGN_OR_RETURN(r.layout, ChooseLayout(o, cluster, r, o.format == "json" ? std::cerr : std::cout));
  } else {
    GL_ASSIGN_OR_RETURN(r.layout, ParseLayout(o.layout, o.ranks));
  }
  return r;
}

}  // namespace

int RunPlanCommand(const std::vector<std::string>& args) {
  auto parsed = ParsePlanCommandLine(args);
  if (!parsed.ok()) return Fail(parsed.status());
  const PlanOptions& o = *parsed;
  if (o.help) {
    std::cout << PlanHelpText();
    return kExitOk;
  }
  // The engine a launch would use: it discovers the hosts, and --explain says why it.
  auto engine = ChooseEngine(o.launcher, o.program.value_or(""));
  if (!engine.ok()) return Fail(engine.status());
  auto cluster = BuildCluster(o, *engine->engine);
  if (!cluster.ok()) return Fail(cluster.status());
  auto request = PlanRequest(o, *cluster);
  if (!request.ok()) return Fail(request.status());
  auto placement = Place(*request, *cluster);
  if (!placement.ok()) return Fail(placement.status());
  for (std::string& note : LinkSourceNotes(*cluster, placement->hosts)) placement->notes.push_back(std::move(note));
  PlanReport report{&*placement, &*cluster, request->layout.ToString(), o.policy,
                    PlanHash(*placement, request->layout.ToString()), ModelStep(*placement, *cluster, *request),
                    std::nullopt};
  if (auto baseline = PlaceLikeOpenMpiBySlot(*request, *cluster); baseline.ok()) {
    report.openmpi_by_slot = ModelStep(*baseline, *cluster, *request);
  }
  if (o.format == "json") {
    WritePlanJson(std::cout, report);
  } else {
    WritePlanText(std::cout, report, o.explain);
    if (o.explain) std::cout << "engine: " << engine->reason << "\n";
  }
  return kExitOk;
}

namespace {

// slurm-config places no job: its --policy is a policy file (slurm_policy.h).
StatusOr<std::optional<PolicyFile>> ReadPolicy(const std::optional<std::string>& path) {
  if (!path) return std::optional<PolicyFile>();
  GL_ASSIGN_OR_RETURN(std::string text, ReadTextFile(*path, "policy file"));
  GL_ASSIGN_OR_RETURN(PolicyFile policy, ParsePolicyFile(text, *path));
  return std::optional<PolicyFile>(std::move(policy));
}

// gres.conf, or when no host has GPUs a file that says so: said, not
// silently written empty (nodes without GPUs need no gres.conf lines, but a
// GPU node whose GPUs were not seen would lose them).
// The sim flags for the policy's reclaim: with GraceTime 0 the mean delay,
// else the passes themselves (sim --grace-time).
std::string SimReclaimFlags(int grace_s) {
  const int grace_time = SlurmGraceTime(grace_s);
  return grace_time > 0 ? "--grace-time " + std::to_string(grace_time)
                        : "--reclaim-delay " + std::to_string(SlurmMeanReclaimDelay(grace_s));
}

std::string GresConfOrNote(const ClusterTopology& cluster) {
  std::string gres = SlurmGresConf(cluster);
  if (!gres.empty()) return gres;
  std::vector<std::string> names;
  for (const ClusterHost& h : cluster.hosts) names.push_back(h.name);
  std::cerr << "gpulaunch: note: no GPUs found on any host, so gres.conf lists none; if these nodes have GPUs, "
               "check that discovery sees them (gpulaunch nodes, or lstopo on a node)\n";
  return "# gpulaunch slurm-config found no GPUs on " + CompressHostlist(names) + ", so this file lists none.\n";
}

// Each file written atomically (common/file_write.h: never through a file
// or link planted in a folder others can write), scripts (*.sh) with mode
// 0755 set on the descriptor. The folder is created when missing.
Status WriteConfigFiles(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files) {
  auto out = OutputDir::Open(dir);  // made when missing, never through a planted link
  if (!out.ok()) return InvalidArgument("--out: " + out.status().message());
  for (const auto& [name, text] : files) {
    const std::string path = dir + "/" + name;
    const bool script = name.size() > 3 && name.substr(name.size() - 3) == ".sh";
    if (Status s = out->WriteFile(name, text, script ? kScriptMode : kPlainFileMode); !s.ok()) {
      return InvalidArgument(s.message() + ": check that the folder " + dir + " is writable");
    }
    std::cout << "wrote " << path << "\n";
  }
  return Status::Ok();
}

}  // namespace

int RunSlurmConfigCommand(const std::vector<std::string>& args) {
  auto parsed = ParseSlurmConfigCommandLine(args);
  if (!parsed.ok()) return Fail(parsed.status());
  if (parsed->help) {
    std::cout << SlurmConfigHelpText();
    return kExitOk;
  }
  // Inside an allocation discovery sees the job's share of each node (its
  // cores and GPUs: srun confines the probe, and the plan narrows to the
  // job), while a Slurm config must describe whole nodes.
  if (InSlurmAllocation() && !parsed->synthetic && !parsed->cluster_file) {
    return Fail(FailedPrecondition(
        "slurm-config describes whole nodes, but inside Slurm allocation " + EnvOr("SLURM_JOB_ID", "") +
        " discovery sees only this job's share of them (its cores and GPUs); run it outside an allocation, with "
        "-H or --hostfile naming the nodes (reached through mpirun over ssh), or with each node's recorded "
        "topology as --topology-file HOST=FILE (lstopo --of xml on that node)"));
  }
  auto policy = ReadPolicy(parsed->policy_file);
  if (!policy.ok()) return Fail(policy.status());
  auto engine = SelectEngine("auto");  // probes through srun in an allocation
  if (!engine.ok()) return Fail(engine.status());
  auto cluster = BuildCluster(*parsed, **engine);
  if (!cluster.ok()) return Fail(cluster.status());
  if (*policy) {
    if (Status fits = CheckPolicyFits(**policy, static_cast<int>(cluster->hosts.size())); !fits.ok()) return Fail(fits);
    if (Status enforceable = CheckPolicySlurmCanEnforce(**policy); !enforceable.ok()) return Fail(enforceable);
    if (Status ahead = CheckPolicyReservationsAhead(**policy, std::time(nullptr)); !ahead.ok()) return Fail(ahead);
  }
  std::vector<std::pair<std::string, std::string>> files = {{"topology.conf", SlurmTopologyConf(*cluster)},
                                                            {"gres.conf", GresConfOrNote(*cluster)}};
  std::optional<PolicyFiles> policy_files;
  if (*policy) {
    auto made = MakePolicyFiles(**policy, parsed->slurm_conf);
    if (!made.ok()) return Fail(made.status());
    policy_files = std::move(*made);
    files.insert(files.end(), policy_files->files.begin(), policy_files->files.end());
  }
  if (Status written = WriteConfigFiles(*parsed->out_dir, files); !written.ok()) return Fail(written);
  if (policy_files) {
    std::cout << policy_files->summary << "simulate the same quotas with: gpulaunch sim --teams "
              << (*policy)->teams.size() << " --quota " << PolicyQuotaText(**policy)
              << " --slurm-tiers --grace 0 " << SimReclaimFlags((*policy)->grace_s)
              << " --requeue-hold 120 --backfill-interval 30 ...\n"
              << "(the last two: Slurm's defaults, AuthInfo cred_expire and bf_interval)\n";
  }
  return kExitOk;
}

}  // namespace gpulaunch
