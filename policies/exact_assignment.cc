#include "policies/exact_assignment.h"

#include <algorithm>
#include <limits>
#include <set>

#include "policies/link_model.h"
#include "policies/nic_choice.h"

namespace gpulaunch {
namespace {

// The free GPUs a search may use: the heuristic's first, in its slot order
// (the search meets its assignment first, so on ties, e.g. best fit against
// an equally fast host, the heuristic's preferences stand), then the other
// free GPUs of `hosts`. Each GPU with the NIC it would send through: its
// nearest (the engine shares NICs out only within the nearest path type, so
// the model's figure is the same).
std::vector<SlotRef> CandidateGpus(const ClusterTopology& c, const std::vector<int>& hosts,
                                   const std::vector<SlotChoice>& heuristic) {
  NicAssignerCache nics;
  auto slot = [&](int h, int g) { return SlotRef{h, g, nics.Nearest(c.hosts[h].topology, g)}; };
  std::vector<SlotRef> free;
  std::set<std::pair<int, int>> seen;
  for (const SlotChoice& sc : heuristic) {
    for (int g : sc.gpus)
      if (seen.insert({sc.host, g}).second) free.push_back(slot(sc.host, g));
  }
  for (int h : hosts)
    for (const Gpu& g : c.hosts[h].topology->gpus)
      if (c.hosts[h].GpuFree(g.index) && seen.insert({h, g.index}).second) free.push_back(slot(h, g.index));
  return free;
}

// The exhaustive search over assignments of the layout's slots to GPUs, by
// the modelled step time (rings for tp and dp, the pipeline's hops).
class ExactSearch {
 public:
  ExactSearch(const ClusterTopology& c, std::vector<SlotRef> free, const JobRequest& r)
      : free_(std::move(free)), n_(static_cast<int>(free_.size())), k_(r.ranks), volume_(r.volume),
        cost_(static_cast<size_t>(n_) * n_), assign_(k_), taken_(n_, false) {
    LinkLookup links(c);
    for (int a = 0; a < n_; ++a)
      for (int b = 0; b < n_; ++b) cost_[static_cast<size_t>(a) * n_ + b] = CostBetween(links, free_[a], free_[b]);
    const ParallelLayout& L = r.layout;
    auto slot_of = [&](int rank) {
      const auto co = L.CoordsOf(rank);
      return (co[kDp] * L.extent[kPp] + co[kPp]) * L.extent[kTp] + co[kTp];
    };
    for (int rank = 0; rank < k_; ++rank) {
      const auto co = L.CoordsOf(rank);
      auto slots = [&](Axis a) {
        std::vector<int> v;
        for (int m : L.GroupOf(a, rank)) v.push_back(slot_of(m));
        return v;
      };
      if (co[kTp] == 0) tp_groups_.push_back(slots(kTp));
      if (co[kDp] == 0) dp_groups_.push_back(slots(kDp));
      if (co[kPp] == 0) pipelines_.push_back(slots(kPp));
    }
  }

  // The best assignment's GPU indices (into `free`), slot by slot.
  const std::vector<int>& Run() {
    Extend(0);
    return best_;
  }

 private:
  const LinkCost& Link(int slot_a, int slot_b) const {
    return cost_[static_cast<size_t>(assign_[slot_a]) * n_ + assign_[slot_b]];
  }

  double Ring(const std::vector<int>& g, double bytes) const {
    if (g.size() < 2) return 0.0;
    double bw = std::numeric_limits<double>::infinity(), lat = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      const LinkCost& l = Link(g[i], g[(i + 1) % g.size()]);
      bw = std::min(bw, l.gbps);
      lat = std::max(lat, l.latency_us);
    }
    const double steps = 2.0 * static_cast<double>(g.size() - 1);
    return steps / static_cast<double>(g.size()) * bytes / (bw * 1e9) + steps * lat * 1e-6;
  }

  double Total() const {
    double tp = 0, pp = 0, dp = 0;
    for (const auto& g : tp_groups_) tp = std::max(tp, Ring(g, volume_.tp_bytes));
    for (const auto& g : dp_groups_) dp = std::max(dp, Ring(g, volume_.dp_bytes));
    for (const auto& g : pipelines_) {
      double t = 0;
      for (size_t s = 0; s + 1 < g.size(); ++s) {
        const LinkCost& l = Link(g[s], g[s + 1]);
        t += volume_.pp_bytes / (l.gbps * 1e9) + l.latency_us * 1e-6;
      }
      pp = std::max(pp, t);
    }
    return tp + pp + dp;
  }

  void Extend(int slot) {
    if (slot == k_) {
      const double t = Total();
      if (t < best_cost_ * (1 - 1e-12)) {  // strictly better: the first optimum (in GPU order) wins
        best_cost_ = t;
        best_ = assign_;
      }
      return;
    }
    for (int i = 0; i < n_; ++i) {
      if (taken_[i]) continue;
      taken_[i] = true;
      assign_[slot] = i;
      Extend(slot + 1);
      taken_[i] = false;
    }
  }

  const std::vector<SlotRef> free_;
  const int n_, k_;
  const CommVolume volume_;
  std::vector<LinkCost> cost_;
  std::vector<std::vector<int>> tp_groups_, dp_groups_, pipelines_;
  std::vector<int> assign_, best_;  // slot -> index into free_
  std::vector<bool> taken_;
  double best_cost_ = std::numeric_limits<double>::infinity();
};

}  // namespace

std::vector<SlotChoice> ExactAssignment(const ClusterTopology& c, const std::vector<int>& hosts, const JobRequest& r,
                                        const std::vector<SlotChoice>& heuristic) {
  std::vector<SlotRef> free = CandidateGpus(c, hosts, heuristic);
  const int n = static_cast<int>(free.size()), k = r.ranks;
  double count = 1;
  for (int i = 0; i < k; ++i) count *= n - i;
  if (k > n || count > kExactAssignmentLimit) return {};
  ExactSearch search(c, free, r);
  std::vector<SlotChoice> out;
  for (int i : search.Run()) out.push_back({free[i].host, {free[i].gpu}});
  return out;
}

}  // namespace gpulaunch
