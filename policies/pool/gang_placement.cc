#include "policies/pool/gang_placement.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace gpulaunch::pool {
namespace {

bool Allowed(const GpuPool& pool, const GangConstraints& c, int h) {
  return pool.usable(h) && (c.avoid.empty() || !c.avoid[static_cast<size_t>(h)]);
}

bool Preferred(const GangConstraints& c, int h) { return !c.preferred.empty() && c.preferred[static_cast<size_t>(h)]; }

// Free GPUs per leaf, over allowed hosts.
std::vector<int> LeafFree(const GpuPool& pool, const GangConstraints& c) {
  std::vector<int> free(static_cast<size_t>(pool.leaves()), 0);
  for (int h = 0; h < static_cast<int>(pool.hosts().size()); ++h)
    if (Allowed(pool, c, h)) free[static_cast<size_t>(pool.hosts()[h].leaf)] += pool.free_on(h);
  return free;
}

// One host for `gpus`, or -1. `exclude`: hosts already chosen.
int PickHost(const GpuPool& pool, int gpus, PlacementStyle style, const GangConstraints& c,
             const std::set<int>& exclude = {}, int prefer_leaf = -1) {
  const std::vector<int> leaf_free = style == PlacementStyle::kTopology ? LeafFree(pool, c) : std::vector<int>();
  int best = -1;
  auto key = [&](int h) {
    const int leaf = pool.hosts()[h].leaf;
    // Smaller is better.
    double extension = 0;
    if (style == PlacementStyle::kTopology && c.ends_at > 0 && c.host_busy_until)
      extension = std::max(0.0, c.ends_at - std::max(c.now, (*c.host_busy_until)[static_cast<size_t>(h)]));
    // Cached copies: a job smaller than a host does not break a whole free
    // host for them when a partly used host fits (that would strand GPUs
    // that whole-host jobs need).
    const bool cached = !c.cached.empty() && c.cached[static_cast<size_t>(h)];
    const bool breaks_whole = !c.cached.empty() && style != PlacementStyle::kFirstFit &&
                              gpus < pool.hosts()[h].gpus && pool.free_on(h) == pool.hosts()[h].gpus;
    return std::make_tuple(Preferred(c, h) ? 0 : 1, breaks_whole ? 1 : 0, cached ? 0 : 1,
                           style == PlacementStyle::kTopology && prefer_leaf >= 0 && leaf != prefer_leaf ? 1 : 0,
                           extension,
                           style == PlacementStyle::kFirstFit ? 0 : pool.free_on(h),
                           style == PlacementStyle::kTopology ? leaf_free[static_cast<size_t>(leaf)] : 0, h);
  };
  for (int h = 0; h < static_cast<int>(pool.hosts().size()); ++h) {
    if (!Allowed(pool, c, h) || exclude.count(h) || pool.free_on(h) < gpus) continue;
    if (style == PlacementStyle::kFirstFit && !Preferred(c, h) && best >= 0 &&
        (c.cached.empty() || !c.cached[static_cast<size_t>(h)])) {
      continue;
    }
    if (best < 0 || key(h) < key(best)) best = h;
  }
  return best;
}

Allocation Build(const GpuPool& pool, const std::vector<std::pair<int, int>>& host_gpus) {
  Allocation a;
  for (const auto& [h, n] : host_gpus) a.shares.push_back(HostShare{h, LowestFree(pool.free_mask(h), n)});
  std::sort(a.shares.begin(), a.shares.end(), [](const HostShare& x, const HostShare& y) { return x.host < y.host; });
  return a;
}

}  // namespace

const char* PlacementStyleName(PlacementStyle s) {
  switch (s) {
    case PlacementStyle::kFirstFit: return "first-fit";
    case PlacementStyle::kBestFit: return "best-fit";
    case PlacementStyle::kTopology: return "topology";
  }
  return "?";
}

int MinHosts(const GpuPool& pool, int gpus) {
  const int per = pool.hosts().empty() ? 1 : pool.hosts().front().gpus;
  return (gpus + per - 1) / per;
}

int MinLeaves(const GpuPool& pool, int gpus) {
  if (pool.hosts().empty()) return 0;
  const int per_leaf = static_cast<int>(pool.hosts().size()) / std::max(pool.leaves(), 1);
  return (MinHosts(pool, gpus) + per_leaf - 1) / std::max(per_leaf, 1);
}

int LeavesOf(const GpuPool& pool, const Allocation& a) {
  std::set<int> leaves;
  for (const HostShare& s : a.shares) leaves.insert(pool.hosts()[static_cast<size_t>(s.host)].leaf);
  return static_cast<int>(leaves.size());
}

namespace {

// Leaves by how many whole free hosts they have, most first (ties: lower leaf).
std::vector<int> LeavesByRoom(const std::vector<std::vector<int>>& free_hosts) {
  std::vector<int> order(free_hosts.size());
  for (size_t l = 0; l < order.size(); ++l) order[l] = static_cast<int>(l);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return free_hosts[static_cast<size_t>(a)].size() > free_hosts[static_cast<size_t>(b)].size();
  });
  return order;
}

// Spread: one whole host per leaf in turn, leaves with the most room first;
// empty when fewer than `min_leaves` leaves are used.
std::vector<int> SpreadWholeHosts(const std::vector<std::vector<int>>& free_hosts, int whole, int min_leaves) {
  const std::vector<int> order = LeavesByRoom(free_hosts);
  std::vector<int> chosen;
  std::set<int> leaves_used;
  for (size_t round = 0; static_cast<int>(chosen.size()) < whole; ++round) {
    bool took = false;
    for (int l : order) {
      const auto& hs = free_hosts[static_cast<size_t>(l)];
      if (round < hs.size() && static_cast<int>(chosen.size()) < whole) {
        chosen.push_back(hs[round]);
        leaves_used.insert(l);
        took = true;
      }
    }
    if (!took) break;
  }
  if (static_cast<int>(leaves_used.size()) < min_leaves) return {};
  return chosen;
}

// Topology style: one leaf with room for all (whole hosts, plus the
// remainder there), the one with the least room left; else the fewest
// leaves, those with the most whole free hosts first.
std::vector<int> CompactWholeHosts(const GpuPool& pool, const std::vector<std::vector<int>>& free_hosts, int whole,
                                   int remainder, PlacementStyle style, const GangConstraints& c) {
  int best_leaf = -1;
  for (int l = 0; l < pool.leaves(); ++l) {
    const auto& hs = free_hosts[static_cast<size_t>(l)];
    if (static_cast<int>(hs.size()) < whole) continue;
    if (remainder > 0) {
      GangConstraints only_leaf = c;
      only_leaf.avoid.assign(pool.hosts().size(), true);
      for (int h = 0; h < static_cast<int>(pool.hosts().size()); ++h)
        if (pool.hosts()[h].leaf == l) only_leaf.avoid[static_cast<size_t>(h)] = !Allowed(pool, c, h);
      const std::set<int> taken(hs.begin(), hs.begin() + whole);
      if (PickHost(pool, remainder, style, only_leaf, taken) < 0) continue;
    }
    if (best_leaf < 0 || hs.size() < free_hosts[static_cast<size_t>(best_leaf)].size()) best_leaf = l;
  }
  std::vector<int> chosen;
  if (best_leaf >= 0) {
    const auto& hs = free_hosts[static_cast<size_t>(best_leaf)];
    chosen.assign(hs.begin(), hs.begin() + whole);
    return chosen;
  }
  for (int l : LeavesByRoom(free_hosts))
    for (int h : free_hosts[static_cast<size_t>(l)])
      if (static_cast<int>(chosen.size()) < whole) chosen.push_back(h);
  return chosen;
}

}  // namespace

std::optional<Allocation> PlaceGang(const GpuPool& pool, int gpus, PlacementStyle style, const GangConstraints& c) {
  if (gpus <= 0 || pool.hosts().empty() || gpus > pool.free_gpus()) return std::nullopt;
  const int per = pool.hosts().front().gpus;
  if (gpus <= per) {
    if (c.min_leaves > 1) return std::nullopt;  // one host cannot span leaves
    const int h = PickHost(pool, gpus, style, c);
    if (h < 0) return std::nullopt;
    return Build(pool, {{h, gpus}});
  }
  const int whole = gpus / per, remainder = gpus % per;
  // Whole free hosts, by leaf.
  std::vector<std::vector<int>> free_hosts(static_cast<size_t>(pool.leaves()));
  for (int h = 0; h < static_cast<int>(pool.hosts().size()); ++h) {
    if (Allowed(pool, c, h) && pool.free_on(h) == pool.hosts()[h].gpus) {
      free_hosts[static_cast<size_t>(pool.hosts()[h].leaf)].push_back(h);
    }
  }
  std::vector<int> chosen;
  if (c.min_leaves > 1) {
    chosen = SpreadWholeHosts(free_hosts, whole, c.min_leaves);
    if (chosen.empty()) return std::nullopt;
  } else if (style == PlacementStyle::kTopology) {
    chosen = CompactWholeHosts(pool, free_hosts, whole, remainder, style, c);
  } else {
    for (const auto& hs : free_hosts) chosen.insert(chosen.end(), hs.begin(), hs.end());
    std::sort(chosen.begin(), chosen.end());
    if (static_cast<int>(chosen.size()) > whole) chosen.resize(static_cast<size_t>(whole));
  }
  if (static_cast<int>(chosen.size()) < whole) return std::nullopt;
  if (c.one_leaf) {
    std::set<int> leaves;
    for (int h : chosen) leaves.insert(pool.hosts()[static_cast<size_t>(h)].leaf);
    if (leaves.size() > 1) return std::nullopt;
  }
  std::vector<std::pair<int, int>> plan;
  for (int h : chosen) plan.emplace_back(h, per);
  if (remainder > 0) {
    const int leaf = pool.hosts()[static_cast<size_t>(chosen.front())].leaf;
    GangConstraints same_leaf = c;
    if (c.one_leaf) {
      same_leaf.avoid.resize(pool.hosts().size(), false);
      for (int x = 0; x < static_cast<int>(pool.hosts().size()); ++x)
        if (pool.hosts()[static_cast<size_t>(x)].leaf != leaf) same_leaf.avoid[static_cast<size_t>(x)] = true;
    }
    const int h = PickHost(pool, remainder, style, same_leaf, std::set<int>(chosen.begin(), chosen.end()), leaf);
    if (h < 0) return std::nullopt;
    plan.emplace_back(h, remainder);
  }
  return Build(pool, plan);
}

}  // namespace gpulaunch::pool
