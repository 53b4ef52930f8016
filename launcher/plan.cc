#include "launcher/plan.h"

#include <cstdlib>
#include <algorithm>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "common/sha256.h"
#include "common/strings.h"
#include "launcher/slot_table.h"

namespace gpulaunch {
namespace {

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

std::string GpusText(const RankSlot& r) {
  if (r.gpus.empty()) return "-";
  return FormatIdList(r.gpus);
}

}  // namespace

LaunchPlan MakeLaunchPlan(Placement placement, const LaunchOptions& options, bool all_local) {
  LaunchPlan plan;
  plan.placement = std::move(placement);
  plan.program = options.program;
  plan.env = options.env;
  plan.all_local = all_local;
  plan.layout = options.layout;
  plan.plan_hash = Sha256Hex(CanonicalPlanText(plan));
  return plan;
}

std::string CanonicalPlanText(const LaunchPlan& plan) {
  std::ostringstream s;
  s << "gpulaunch-plan v1\nworld " << plan.placement.ranks.size() << "\n";
  for (const RankSlot& r : plan.placement.ranks) {
    s << "rank " << r.rank << " host " << r.host << " node " << r.node_rank << " local " << r.local_rank << "/"
      << r.local_size << " bound " << r.bound << " cpus " << FormatIdList(r.cpus) << " mem " << r.mem_node
      << " gpus " << GpusText(r) << " nic " << OrDash(r.nic) << "\n";
  }
  for (const std::string& a : plan.program) s << "argv " << a.size() << ":" << a << "\n";
  for (const EnvAssignment& e : plan.env) s << "env " << e.name << (e.value ? "=" + *e.value : "") << "\n";
  if (!plan.layout.empty()) s << "layout " << plan.layout << "\n";
  return s.str();
}

std::string RenderPlanTable(const LaunchPlan& plan) {
  const Placement& p = plan.placement;
  std::ostringstream s;
  s << "plan: " << p.ranks.size() << " rank" << (p.ranks.size() == 1 ? "" : "s") << " on " << p.hosts.size()
    << " host" << (p.hosts.size() == 1 ? "" : "s") << " (" << Join(p.hosts, ", ") << ")\n";
  s << "plan hash: " << plan.plan_hash << "\n";
  for (const std::string& n : p.notes) s << "note: " << n << "\n";
  size_t host_w = 4, cpu_w = 4;
  for (const RankSlot& r : p.ranks) {
    host_w = std::max(host_w, r.host.size());
    cpu_w = std::max(cpu_w, FormatIdList(r.cpus).size() + (r.bound ? 0 : 10));
  }
  s << std::left << std::setw(6) << "rank" << std::setw(static_cast<int>(host_w) + 2) << "host" << std::setw(7)
    << "local" << std::setw(static_cast<int>(cpu_w) + 2) << "cpus" << std::setw(6) << "numa" << std::setw(8)
    << "gpus" << "nic\n";
  for (const RankSlot& r : p.ranks) {
    const std::string cpus = FormatIdList(r.cpus) + (r.bound ? "" : " (unbound)");
    s << std::left << std::setw(6) << r.rank << std::setw(static_cast<int>(host_w) + 2) << r.host << std::setw(7)
      << r.local_rank << std::setw(static_cast<int>(cpu_w) + 2) << cpus << std::setw(6)
      << (r.mem_node < 0 ? "-" : std::to_string(r.mem_node)) << std::setw(8) << GpusText(r) << OrDash(r.nic)
      << "\n";
  }
  return s.str();
}

std::string RenderRankfile(const Placement& placement) {
  std::string out;
  for (const RankSlot& r : placement.ranks) {
    out += "rank " + std::to_string(r.rank) + "=" + r.host + " slot=" + FormatIdList(r.cores) + "\n";
  }
  return out;
}

bool HostsOversubscribed(const Placement& placement) {
  std::map<std::string, std::pair<int, std::set<int>>> per_host;  // ranks, PUs in use
  for (const RankSlot& r : placement.ranks) {
    auto& [ranks, pus] = per_host[r.host];
    ++ranks;
    pus.insert(r.cpus.begin(), r.cpus.end());
  }
  for (const auto& [host, use] : per_host)
    if (use.first > static_cast<int>(use.second.size())) return true;
  return false;
}

std::vector<std::string> BuildMpirunArgv(const LaunchPlan& plan, const EngineSettings& s) {
  std::vector<std::string> argv = {s.mpirun, "-n", std::to_string(plan.placement.ranks.size()), "--rankfile",
                                   s.rankfile};
  if (s.allow_run_as_root) argv.push_back("--allow-run-as-root");
  if (s.tag) argv.push_back("--tag-output");
  if (s.loopback_only) {
    // One host: nothing needs to leave the machine. A user's own setting wins.
    if (!std::getenv("OMPI_MCA_oob_tcp_if_include") && !std::getenv("OMPI_MCA_oob_tcp_if_exclude")) {
      argv.insert(argv.end(), {"--mca", "oob_tcp_if_include", "lo"});
    }
    if (!std::getenv("OMPI_MCA_btl_tcp_if_include") && !std::getenv("OMPI_MCA_btl_tcp_if_exclude")) {
      argv.insert(argv.end(), {"--mca", "btl_tcp_if_include", "lo"});
    }
  }
  if (s.kill_grace_s) {
    argv.insert(argv.end(), {"--mca", "odls_base_sigkill_timeout", std::to_string(*s.kill_grace_s)});
  }
  if (HostsOversubscribed(plan.placement) && !std::getenv("OMPI_MCA_mpi_yield_when_idle")) {
    // What mpirun sets itself when it sees oversubscription: ranks yield the
    // CPU while they wait instead of spinning against each other.
    argv.insert(argv.end(), {"--mca", "mpi_yield_when_idle", "1"});
  }
  argv.insert(argv.end(), {"-x", kSlotTableEnv});
  for (const EnvAssignment& e : plan.env) argv.insert(argv.end(), {"-x", e.name});
  argv.push_back(s.shim);
  argv.push_back("--");
  argv.insert(argv.end(), plan.program.begin(), plan.program.end());
  return argv;
}

std::string RenderSlurmHostfile(const Placement& placement) {
  std::string out;
  for (const RankSlot& r : placement.ranks) out += r.host + "\n";
  return out;
}

std::string SrunCpuBind(const Placement& placement) {
  std::map<int, std::vector<int>> cpus_of_local;  // local id -> cpus, identical on every host
  for (const RankSlot& r : placement.ranks) {
    if (!r.bound) return "none";  // unbound ranks may use every CPU the step has
    auto [it, fresh] = cpus_of_local.emplace(r.local_rank, r.cpus);
    if (!fresh && it->second != r.cpus) return "none";
  }
  std::vector<std::string> masks;
  for (const auto& [local, cpus] : cpus_of_local) {
    // Hex mask, most significant digit first.
    const int top = cpus.empty() ? 0 : cpus.back();
    std::string hex;
    for (int base = (top / 4) * 4; base >= 0; base -= 4) {
      int digit = 0;
      for (int b = 0; b < 4; ++b)
        if (std::binary_search(cpus.begin(), cpus.end(), base + b)) digit |= 1 << b;
      hex += "0123456789abcdef"[digit];
    }
    masks.push_back("0x" + hex);
  }
  return "mask_cpu:" + Join(masks, ",");
}

std::vector<std::string> BuildSrunArgv(const LaunchPlan& plan, const EngineSettings& s) {
  std::vector<std::string> argv = {"srun", "--mpi=pmix", "-n", std::to_string(plan.placement.ranks.size()),
                                   "--distribution=arbitrary", "--cpu-bind=" + SrunCpuBind(plan.placement)};
  if (HostsOversubscribed(plan.placement) || plan.placement.oversubscribed) argv.push_back("--overcommit");
  if (s.tag) argv.push_back("--label");
  argv.push_back(s.shim);
  argv.push_back("--");
  argv.insert(argv.end(), plan.program.begin(), plan.program.end());
  return argv;
}

}  // namespace gpulaunch
