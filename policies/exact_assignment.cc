#include "policies/exact_assignment.h"

#include <functional>
#include <limits>
#include <set>

#include "policies/link_model.h"
#include "policies/nic_choice.h"

namespace gpulaunch {

std::vector<SlotChoice> ExactAssignment(const ClusterTopology& c, const std::vector<int>& hosts, const JobRequest& r,
                                        const std::vector<SlotChoice>& heuristic) {
  // The heuristic's GPUs first, in its slot order: the search meets its
  // assignment first, so on ties (e.g. best fit vs an equally fast host) the
  // heuristic's preferences stand.
  // Each GPU with the NIC it would send through: its nearest (the engine
  // shares NICs out only within the nearest path type, so the model's
  // figure is the same).
  auto slot = [&](int h, int g) {
    const HostTopology& t = c.hosts[h].topology;
    const auto nic = NearestNicOf(t, t.gpus[g]);
    return SlotRef{h, g, nic ? static_cast<int>(nic->nic) : -1};
  };
  std::vector<SlotRef> free;
  std::set<std::pair<int, int>> seen;
  for (const SlotChoice& sc : heuristic) {
    for (int g : sc.gpus)
      if (seen.insert({sc.host, g}).second) free.push_back(slot(sc.host, g));
  }
  for (int h : hosts)
    for (const Gpu& g : c.hosts[h].topology->gpus)
      if (c.hosts[h].GpuFree(g.index) && seen.insert({h, g.index}).second) free.push_back(slot(h, g.index));
  const int n = static_cast<int>(free.size()), k = r.ranks;
  double count = 1;
  for (int i = 0; i < k; ++i) count *= n - i;
  if (k > n || count > kExactAssignmentLimit) return {};
  std::vector<LinkCost> cost(static_cast<size_t>(n) * n);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) cost[static_cast<size_t>(a) * n + b] = CostBetween(c, free[a], free[b]);
  const ParallelLayout& L = r.layout;
  auto slot_of = [&](int rank) {
    const auto co = L.CoordsOf(rank);
    return (co[kDp] * L.extent[kPp] + co[kPp]) * L.extent[kTp] + co[kTp];
  };
  std::vector<std::vector<int>> tp_groups, dp_groups, pipelines;
  for (int rank = 0; rank < k; ++rank) {
    const auto co = L.CoordsOf(rank);
    auto slots = [&](Axis a) {
      std::vector<int> v;
      for (int m : L.GroupOf(a, rank)) v.push_back(slot_of(m));
      return v;
    };
    if (co[kTp] == 0) tp_groups.push_back(slots(kTp));
    if (co[kDp] == 0) dp_groups.push_back(slots(kDp));
    if (co[kPp] == 0) pipelines.push_back(slots(kPp));
  }
  std::vector<int> assign(k), best;  // slot -> index into free
  double best_cost = std::numeric_limits<double>::infinity();
  auto link = [&](int slot_a, int slot_b) -> const LinkCost& {
    return cost[static_cast<size_t>(assign[slot_a]) * n + assign[slot_b]];
  };
  auto ring = [&](const std::vector<int>& g, double bytes) {
    if (g.size() < 2) return 0.0;
    double bw = std::numeric_limits<double>::infinity(), lat = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      const LinkCost& l = link(g[i], g[(i + 1) % g.size()]);
      bw = std::min(bw, l.gbps);
      lat = std::max(lat, l.latency_us);
    }
    const double steps = 2.0 * static_cast<double>(g.size() - 1);
    return steps / static_cast<double>(g.size()) * bytes / (bw * 1e9) + steps * lat * 1e-6;
  };
  auto total = [&] {
    double tp = 0, pp = 0, dp = 0;
    for (const auto& g : tp_groups) tp = std::max(tp, ring(g, r.volume.tp_bytes));
    for (const auto& g : dp_groups) dp = std::max(dp, ring(g, r.volume.dp_bytes));
    for (const auto& g : pipelines) {
      double t = 0;
      for (size_t s = 0; s + 1 < g.size(); ++s) {
        const LinkCost& l = link(g[s], g[s + 1]);
        t += r.volume.pp_bytes / (l.gbps * 1e9) + l.latency_us * 1e-6;
      }
      pp = std::max(pp, t);
    }
    return tp + pp + dp;
  };
  std::vector<bool> taken(n, false);
  std::function<void(int)> dfs = [&](int slot) {
    if (slot == k) {
      const double t = total();
      if (t < best_cost * (1 - 1e-12)) {  // strictly better: the first optimum (in GPU order) wins
        best_cost = t;
        best = assign;
      }
      return;
    }
    for (int i = 0; i < n; ++i) {
      if (taken[i]) continue;
      taken[i] = true;
      assign[slot] = i;
      dfs(slot + 1);
      taken[i] = false;
    }
  };
  dfs(0);
  std::vector<SlotChoice> out;
  for (int i : best) out.push_back({free[i].host, {free[i].gpu}});
  return out;
}

}  // namespace gpulaunch
