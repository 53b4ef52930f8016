#include "launcher/core/plan.h"

#include <cstdlib>
#include <algorithm>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "common/sha256.h"
#include "common/strings.h"
#include "launcher/base/slot_table.h"

namespace gpulaunch {
namespace {

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

std::string GpusText(const RankSlot& r) {
  if (r.gpus.empty()) return "-";
  return FormatIdList(r.gpus);
}

}  // namespace

LaunchPlan MakeLaunchPlan(Placement placement, const ParallelLayout& layout, const LaunchOptions& options,
                          bool all_local) {
  LaunchPlan plan;
  plan.placement = std::move(placement);
  plan.program = options.program;
  plan.env = options.env;
  plan.all_local = all_local;
  plan.layout = layout.ToString();
  plan.plan_hash = PlanHash(plan.placement, plan.layout);
  return plan;
}

std::string PlanHash(const Placement& placement, const std::string& layout) {
  return Sha256Hex(CanonicalPlanText(placement, layout));
}

std::string CanonicalPlanText(const Placement& placement, const std::string& layout) {
  std::ostringstream s;
  s << "gpulaunch-plan v2\nworld " << placement.ranks.size() << "\nlayout " << layout << "\n";
  for (const RankSlot& r : placement.ranks) {
    s << "rank " << r.rank << " host " << r.host << " node " << r.node_rank << " local " << r.local_rank << "/"
      << r.local_size << " bound " << r.bound << " cpus " << FormatIdList(r.cpus) << " mem " << r.mem_node
      << " gpus " << GpusText(r) << " nic " << OrDash(r.nic) << "\n";
    // Not the leaf switch: it follows from the host and the network tree,
    // and the reductions' own fingerprint checks that ranks agree on it.
  }
  return s.str();
}

std::string RenderPlanTable(const LaunchPlan& plan) {
  std::ostringstream s;
  WritePlanTable(s, plan);
  return s.str();
}

void WritePlanTable(std::ostream& s, const LaunchPlan& plan) {
  const Placement& p = plan.placement;
  s << "plan: " << p.ranks.size() << " rank" << (p.ranks.size() == 1 ? "" : "s") << " on " << p.hosts.size()
    << " host" << (p.hosts.size() == 1 ? "" : "s") << " (" << Join(p.hosts, ", ") << ")\n";
  s << "plan hash: " << plan.plan_hash << "\n";
  for (const std::string& n : p.notes) s << "note: " << n << "\n";
  // A rank without cores of its own shares the CPUs listed with the host's
  // other ranks (GPULAUNCH_BOUND=0).
  constexpr char kShared[] = " (shared)";
  size_t host_w = 4, cpu_w = 4;
  for (const RankSlot& r : p.ranks) {
    host_w = std::max(host_w, r.host.size());
    cpu_w = std::max(cpu_w, FormatIdList(r.cpus).size() + (r.bound ? 0 : sizeof kShared - 1));
  }
  s << std::left << std::setw(6) << "rank" << std::setw(static_cast<int>(host_w) + 2) << "host" << std::setw(7)
    << "local" << std::setw(static_cast<int>(cpu_w) + 2) << "cpus" << std::setw(6) << "numa" << std::setw(8)
    << "gpus" << "nic\n";
  for (const RankSlot& r : p.ranks) {
    const std::string cpus = FormatIdList(r.cpus) + (r.bound ? "" : kShared);
    s << std::left << std::setw(6) << r.rank << std::setw(static_cast<int>(host_w) + 2) << r.host << std::setw(7)
      << r.local_rank << std::setw(static_cast<int>(cpu_w) + 2) << cpus << std::setw(6)
      << (r.mem_node < 0 ? "-" : std::to_string(r.mem_node)) << std::setw(8) << GpusText(r) << OrDash(r.nic)
      << "\n";
  }
  s << std::right;
}

}  // namespace gpulaunch
