#include "launcher/plan_command.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "common/env.h"
#include "common/hostlist.h"
#include "common/json.h"
#include "common/strings.h"
#include "launcher/engine/engine.h"
#include "launcher/base/exit_codes.h"
#include "launcher/base/host_identity.h"
#include "launcher/core/cluster_source.h"
#include "launcher/core/layout_auto.h"
#include "launcher/core/options.h"
#include "launcher/core/plan.h"
#include "policies/placement_engine.h"
#include "slurm/slurm_config.h"
#include "slurm/slurm_policy.h"

namespace fs = std::filesystem;

namespace gpulaunch {
namespace {

// plan and slurm-config: the cluster their options describe (cluster_source.h).
StatusOr<ClusterTopology> BuildCluster(const PlanOptions& o) {
  ClusterSource source{HostRequest{o.host_args, o.hostfile, o.topology_files, /*planning_only=*/true}, o.synthetic,
                       o.cluster_file, o.network, o.dump_cluster};
  const std::string probe = (fs::read_symlink("/proc/self/exe").parent_path() / "gpulaunch-probe").string();
  GL_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, SelectEngine("auto"));  // probes through srun in an allocation
  GL_ASSIGN_OR_RETURN(BuiltCluster built, BuildClusterTopology(source, ResolveSettings{probe, o.allow_run_as_root,
                                                                                       engine.get()}));
  for (const std::string& note : built.notes) std::cerr << "gpulaunch: note: " << note << "\n";
  return std::move(built.topology);
}

// A rank's GPUs as "index=UUID" (or PCI bus id when the UUID is unknown);
// hosts are looked up by name once, so a plan of N ranks costs O(N).
class GpuIdFormatter {
 public:
  explicit GpuIdFormatter(const ClusterTopology& c) {
    for (const ClusterHost& h : c.hosts) by_name_.emplace(h.name, &h);
  }
  std::string operator()(const RankSlot& s) const {
    if (s.gpus.empty()) return "-";
    const ClusterHost& host = *by_name_.at(s.host);
    std::vector<std::string> ids;
    for (int g : s.gpus) {
      const Gpu& gpu = host.topology->gpus[g];
      ids.push_back(std::to_string(g) + "=" + (gpu.uuid.empty() ? gpu.pci_bus_id : gpu.uuid));
    }
    return Join(ids, ",");
  }

 private:
  std::unordered_map<std::string, const ClusterHost*> by_name_;
};

std::string Ms(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
  return buf;
}

std::string JsonIds(const std::vector<int>& v) {
  std::vector<std::string> parts;
  for (int x : v) parts.push_back(std::to_string(x));
  return "[" + Join(parts, ",") + "]";
}

std::string ModelJson(const StepModel& m) {
  std::ostringstream s;
  s << "{\"hosts\":" << m.hosts << ",\"switches\":" << m.switches << ",\"tp_seconds\":" << m.tp_seconds
    << ",\"pp_seconds\":" << m.pp_seconds << ",\"dp_seconds\":" << m.dp_seconds
    << ",\"total_seconds\":" << m.total_seconds() << "}";
  return s.str();
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
  auto cluster = BuildCluster(o);
  if (!cluster.ok()) return Fail(cluster.status());
  JobRequest r;
  r.ranks = o.ranks;
  r.gpus_per_rank = o.gpus_per_rank;
  r.cores_per_rank = o.cores_per_rank;
  r.policy = o.policy;
  r.comm = o.comm;
  for (const std::string& e : o.exclude) {
    auto names = ExpandHostlist(e);
    if (!names.ok()) return Fail(names.status());
    r.exclude_hosts.insert(r.exclude_hosts.end(), names->begin(), names->end());
  }
  if (o.layout == "auto") {
    auto chosen = ChooseLayout(o, *cluster, r, o.format == "json" ? std::cerr : std::cout);
    if (!chosen.ok()) return Fail(chosen.status());
    r.layout = *chosen;
  } else {
    auto layout = ParseLayout(o.layout, o.ranks);
    if (!layout.ok()) return Fail(layout.status());
    r.layout = *layout;
  }
  auto placement = Place(r, *cluster);
  if (!placement.ok()) return Fail(placement.status());
  const StepModel ours = ModelStep(*placement, *cluster, r);
  auto baseline = PlaceLikeOpenMpiBySlot(r, *cluster);
  const StepModel theirs = baseline.ok() ? ModelStep(*baseline, *cluster, r) : StepModel{};
  const std::string hash = PlanHash(*placement, r.layout.ToString());
  const GpuIdFormatter gpu_ids(*cluster);

  if (o.format == "json") {
    // Written as it goes: a 65,536-rank plan is never held as text.
    std::ostream& j = std::cout;
    j << "{\"schema\":\"gpulaunch-plan/v1\",\"plan_hash\":" << JsonQuote(hash) << ",\"layout\":"
      << JsonQuote(r.layout.ToString()) << ",\"policy\":" << JsonQuote(o.policy) << ",\"ranks\":[";
    for (size_t i = 0; i < placement->ranks.size(); ++i) {
      const RankSlot& s = placement->ranks[i];
      j << (i ? "," : "") << "{\"rank\":" << s.rank << ",\"host\":" << JsonQuote(s.host)
        << ",\"local_rank\":" << s.local_rank << ",\"cpus\":" << JsonIds(s.cpus) << ",\"numa\":" << s.mem_node
        << ",\"gpus\":" << JsonIds(s.gpus) << ",\"gpu_ids\":" << JsonQuote(gpu_ids(s))
        << ",\"nic\":" << JsonQuote(s.nic) << ",\"coords\":{\"tp\":" << s.coords[kTp] << ",\"pp\":"
        << s.coords[kPp] << ",\"dp\":" << s.coords[kDp] << "}}";
    }
    j << "],\"summary\":" << ModelJson(ours) << ",\"openmpi_by_slot\":"
      << (baseline.ok() ? ModelJson(theirs) : "null") << ",\"explain\":[";
    for (size_t i = 0; i < placement->explain.size(); ++i) j << (i ? "," : "") << JsonQuote(placement->explain[i]);
    j << "]}\n";
    return kExitOk;
  }
  std::cout << "plan: " << r.ranks << " ranks, layout " << r.layout.ToString() << ", policy " << o.policy << ", "
            << placement->hosts.size() << " host" << (placement->hosts.size() == 1 ? "" : "s") << "\n";
  std::cout << "plan hash: " << hash << "\n";
  for (const std::string& n : placement->notes) std::cout << "note: " << n << "\n";
  // Columns as wide as their widest cell: one pass measures, one writes, so
  // the table is never held whole.
  const auto cells = [&](const RankSlot& s) -> std::vector<std::string> {
    return {std::to_string(s.rank), s.host, std::to_string(s.local_rank), FormatIdList(s.cpus),
            s.mem_node < 0 ? "-" : std::to_string(s.mem_node), gpu_ids(s), s.nic.empty() ? "-" : s.nic,
            std::to_string(s.coords[kTp]), std::to_string(s.coords[kPp]), std::to_string(s.coords[kDp])};
  };
  const std::vector<std::string> header = {"rank", "host", "local", "cpus", "numa", "gpus", "nic", "tp", "pp", "dp"};
  std::vector<size_t> width(header.size(), 0);
  const auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  const auto write = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    std::cout << line << "\n";
  };
  measure(header);
  for (const RankSlot& s : placement->ranks) measure(cells(s));
  write(header);
  for (const RankSlot& s : placement->ranks) write(cells(s));
  auto count = [](int n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "es"); };
  std::cout << "summary: " << ours.hosts << " host" << (ours.hosts == 1 ? "" : "s") << ", "
            << count(ours.switches, "switch") << "; modelled step communication "
            << Ms(ours.total_seconds()) << " (tp " << Ms(ours.tp_seconds) << ", pp " << Ms(ours.pp_seconds) << ", dp "
            << Ms(ours.dp_seconds) << ")\n";
  if (baseline.ok()) {
    std::cout << "open mpi by-slot: " << theirs.hosts << " host" << (theirs.hosts == 1 ? "" : "s") << ", "
              << count(theirs.switches, "switch") << "; "
              << Ms(theirs.total_seconds()) << " (tp " << Ms(theirs.tp_seconds) << ", pp " << Ms(theirs.pp_seconds)
              << ", dp " << Ms(theirs.dp_seconds) << "); ";
    char ratio[64];
    std::snprintf(ratio, sizeof ratio, "by-slot / gpulaunch = %.2f", theirs.total_seconds() / std::max(ours.total_seconds(), 1e-12));
    std::cout << ratio << "\n";
  }
  if (o.explain) {
    std::cout << "explain:\n";
    for (const std::string& e : placement->explain) std::cout << "  " << e << "\n";
  }
  return kExitOk;
}

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
  // slurm-config places no job: its --policy is a policy file (slurm_policy.h).
  std::optional<PolicyFile> policy;
  if (parsed->policy_file) {
    auto text = ReadTextFile(*parsed->policy_file, "policy file");
    auto p = text.ok() ? ParsePolicyFile(*text, *parsed->policy_file) : StatusOr<PolicyFile>(text.status());
    if (!p.ok()) return Fail(p.status());
    policy = std::move(p).value();
  }
  auto cluster = BuildCluster(*parsed);
  if (!cluster.ok()) return Fail(cluster.status());
  if (policy) {
    if (Status fits = CheckPolicyFits(*policy, static_cast<int>(cluster->hosts.size())); !fits.ok()) return Fail(fits);
  }
  const std::string dir = *parsed->out_dir;
  std::string gres = SlurmGresConf(*cluster);
  if (gres.empty()) {
    // Said, not silently written empty: nodes without GPUs need no gres.conf
    // lines, but a GPU node whose GPUs were not seen would lose them.
    gres = "# gpulaunch slurm-config found no GPUs on " + CompressHostlist([&] {
      std::vector<std::string> names;
      for (const ClusterHost& h : cluster->hosts) names.push_back(h.name);
      return names;
    }()) + ", so this file lists none.\n";
    std::cerr << "gpulaunch: note: no GPUs found on any host, so gres.conf lists none; if these nodes have GPUs, "
                 "check that discovery sees them (gpulaunch nodes, or lstopo on a node)\n";
  }
  std::vector<std::pair<std::string, std::string>> files = {{"topology.conf", SlurmTopologyConf(*cluster)},
                                                            {"gres.conf", gres}};
  if (policy) {
    files.emplace_back("slurm-policy.conf", SlurmPolicyConf(*policy));
    files.emplace_back("apply.sh", SlurmPolicyApplyScript(*policy));
    files.emplace_back("qos.sh", SlurmPolicyQosScript(*policy));
  }
  for (const auto& [name, text] : files) {
    // Write beside, then rename: nothing half-written is left behind.
    const std::string path = dir + "/" + name, tmp = path + ".tmp";
    std::ofstream out(tmp);
    out << text;
    out.close();
    if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::remove(tmp.c_str());
      return Fail(InvalidArgument("cannot write " + path + ": check that the directory exists and is writable"));
    }
    if (name.size() > 3 && name.substr(name.size() - 3) == ".sh") chmod(path.c_str(), 0755);
    std::cout << "wrote " << path << "\n";
  }
  if (policy) std::cout << "simulate the same quotas with: gpulaunch sim --teams " << policy->teams.size()
                        << " --quota " << PolicyQuotaText(*policy) << " ...\n";
  return kExitOk;
}

}  // namespace gpulaunch
