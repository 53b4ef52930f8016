#include "policies/host_selection.h"

#include <algorithm>
#include <map>
#include <memory>

namespace gpulaunch {
namespace {

std::string Unhealthy(const ClusterTopology& c, int h, const JobRequest&) {
  return c.hosts[h].healthy ? "" : "unhealthy";
}

std::string Excluded(const ClusterTopology& c, int h, const JobRequest& r) {
  const auto& ex = r.exclude_hosts;
  return std::find(ex.begin(), ex.end(), c.hosts[h].name) == ex.end() ? "" : "excluded";
}

// Hosts ordered so that hosts under one leaf are adjacent, leaves under one
// parent adjacent, and so on (the path from the root, then the name).
std::vector<std::string> RootPath(const ClusterTopology& c, int h) {
  std::vector<std::string> path;
  for (const NetworkSwitch* s : c.network.PathOf(c.hosts[h].name)) path.insert(path.begin(), s->name);
  path.push_back(c.hosts[h].name);
  return path;
}

void SortByNetwork(const ClusterTopology& c, std::vector<Candidate>& v) {
  std::stable_sort(v.begin(), v.end(), [&](const Candidate& a, const Candidate& b) {
    return RootPath(c, a.host) < RootPath(c, b.host);
  });
}

// Takes hosts by units (largest first, then network order) until `units`;
// returns the hosts used and how many units each, or an empty vector.
std::vector<Candidate> TakeLargestFirst(const ClusterTopology& c, std::vector<Candidate> pool, int units) {
  SortByNetwork(c, pool);
  std::stable_sort(pool.begin(), pool.end(), [](const Candidate& a, const Candidate& b) { return a.units > b.units; });
  std::vector<Candidate> out;
  int left = units;
  for (const Candidate& cand : pool) {
    if (left == 0) break;
    out.push_back({cand.host, std::min(cand.units, left)});
    left -= out.back().units;
  }
  if (left > 0) out.clear();
  return out;
}

// compact: one host if the job fits (the smallest that does, so big hosts
// stay whole); else the fewest hosts; among equal counts, hosts under the
// lowest switch (fewest switches spanned), nearest first.
class CompactSelector : public HostSelector {
 public:
  const char* Name() const override { return "compact"; }
  const char* Description() const override {
    return "one host if the job fits, else the fewest hosts under the lowest switch";
  }
  StatusOr<Selection> Select(const ClusterTopology& c, const std::vector<Candidate>& cands, int units) const override {
    const Candidate* best = nullptr;
    for (const Candidate& cand : cands)
      if (cand.units >= units && (!best || cand.units < best->units)) best = &cand;
    if (best) return Selection{{{best->host, units}}, "fits on one host: " + c.hosts[best->host].name};
    // Groups: every switch's subtree (lowest level first), then all hosts.
    std::vector<std::pair<std::string, std::vector<Candidate>>> groups;
    std::vector<const NetworkSwitch*> sw;
    for (const NetworkSwitch& s : c.network.switches()) sw.push_back(&s);
    std::stable_sort(sw.begin(), sw.end(), [](auto* a, auto* b) { return a->level < b->level; });
    for (const NetworkSwitch* s : sw) {
      std::vector<Candidate> under;
      for (const Candidate& cand : cands) {
        for (const NetworkSwitch* p : c.network.PathOf(c.hosts[cand.host].name))
          if (p == s) under.push_back(cand);
      }
      groups.push_back({s->name, under});
    }
    groups.push_back({"all hosts", cands});
    std::vector<Candidate> chosen;
    std::string where;
    for (const auto& [name, pool] : groups) {
      auto take = TakeLargestFirst(c, pool, units);
      if (take.empty()) continue;
      if (chosen.empty() || take.size() < chosen.size()) {  // lower groups win ties
        chosen = take;
        where = name;
      }
    }
    if (chosen.empty()) return Infeasible("not enough capacity");
    SortByNetwork(c, chosen);
    return Selection{chosen, std::to_string(chosen.size()) + " hosts under " + where};
  }
};

// spread: as many hosts as possible, one unit each in turn, alternating
// between leaf switches.
class SpreadSelector : public HostSelector {
 public:
  const char* Name() const override { return "spread"; }
  const char* Description() const override { return "as many hosts as possible, alternating leaf switches"; }
  StatusOr<Selection> Select(const ClusterTopology& c, const std::vector<Candidate>& cands, int units) const override {
    std::map<std::string, std::vector<Candidate>> by_leaf;
    for (const Candidate& cand : cands) {
      const NetworkSwitch* leaf = c.network.LeafOf(c.hosts[cand.host].name);
      by_leaf[leaf ? leaf->name : ""].push_back(cand);
    }
    std::vector<Candidate> order;  // round-robin over leaves
    for (size_t i = 0;; ++i) {
      bool any = false;
      for (auto& [leaf, hosts] : by_leaf) {
        if (i < hosts.size()) {
          order.push_back(hosts[i]);
          any = true;
        }
      }
      if (!any) break;
    }
    std::map<int, int> used;
    int left = units;
    while (left > 0) {
      bool progress = false;
      for (const Candidate& cand : order) {
        if (left > 0 && used[cand.host] < cand.units) {
          ++used[cand.host];
          --left;
          progress = true;
        }
      }
      if (!progress) return Infeasible("not enough capacity");
    }
    Selection s;
    for (const Candidate& cand : order)
      if (used[cand.host] > 0) s.chosen.push_back({cand.host, used[cand.host]});
    s.why = "spread over " + std::to_string(s.chosen.size()) + " hosts";
    return s;
  }
};

// fragmented: for jobs that barely communicate (--comm compute): fill the
// hosts with the fewest free units first, so whole hosts stay free.
class FragmentedSelector : public HostSelector {
 public:
  const char* Name() const override { return "fragmented"; }
  const char* Description() const override { return "fill partly used hosts first (compute-only jobs)"; }
  StatusOr<Selection> Select(const ClusterTopology& c, const std::vector<Candidate>& cands, int units) const override {
    std::vector<Candidate> pool = cands;
    std::stable_sort(pool.begin(), pool.end(), [](const Candidate& a, const Candidate& b) { return a.units < b.units; });
    Selection s;
    int left = units;
    for (const Candidate& cand : pool) {
      if (left == 0) break;
      s.chosen.push_back({cand.host, std::min(cand.units, left)});
      left -= s.chosen.back().units;
    }
    if (left > 0) return Infeasible("not enough capacity");
    SortByNetwork(c, s.chosen);
    s.why = "fragments first: " + std::to_string(s.chosen.size()) + " hosts";
    return s;
  }
};

}  // namespace

const std::vector<HostFilter>& HostFilters() {
  static const std::vector<HostFilter> filters = {{"healthy", Unhealthy}, {"not-excluded", Excluded}};
  return filters;
}

const HostSelector* FindHostSelector(const std::string& name) {
  static const CompactSelector compact;
  static const SpreadSelector spread;
  static const FragmentedSelector fragmented;
  static const std::map<std::string, const HostSelector*> registry = {
      {"compact", &compact}, {"spread", &spread}, {"fragmented", &fragmented}};
  auto it = registry.find(name);
  return it == registry.end() ? nullptr : it->second;
}

std::vector<std::string> HostSelectorNames() { return {"compact", "spread", "fragmented"}; }

}  // namespace gpulaunch
