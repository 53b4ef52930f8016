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
// parent adjacent, and so on: the key is the path from the root, then the name.
std::string NetworkKey(const ClusterTopology& c, int h) {
  std::string key;
  const auto path = c.network.PathOf(c.hosts[h].name);
  for (auto it = path.rbegin(); it != path.rend(); ++it) key += (*it)->name + '\x01';
  return key + c.hosts[h].name;
}

void SortByNetwork(const ClusterTopology& c, std::vector<Candidate>& v) {
  std::vector<std::pair<std::string, Candidate>> keyed;
  for (const Candidate& cand : v) keyed.push_back({NetworkKey(c, cand.host), cand});
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < v.size(); ++i) v[i] = keyed[i].second;
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
    // Candidates ordered once: most units first, then network order. Every
    // switch's group keeps that order, so a group's first hosts are the ones
    // it would take.
    struct Keyed {
      Candidate cand;
      std::string key;
      std::vector<const NetworkSwitch*> path;
    };
    std::vector<Keyed> keyed;
    for (const Candidate& cand : cands) {
      keyed.push_back({cand, NetworkKey(c, cand.host), c.network.PathOf(c.hosts[cand.host].name)});
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
      return a.cand.units != b.cand.units ? a.cand.units > b.cand.units : a.key < b.key;
    });
    std::map<const NetworkSwitch*, std::vector<const Keyed*>> groups;
    for (const Keyed& k : keyed)
      for (const NetworkSwitch* s : k.path) groups[s].push_back(&k);
    // Hosts a group needs (largest first), or 0 when it cannot hold the job.
    auto hosts_needed = [&](const std::vector<const Keyed*>& g) {
      int left = units, used = 0;
      for (const Keyed* k : g) {
        if (left <= 0) break;
        left -= k->cand.units;
        ++used;
      }
      return left <= 0 ? used : 0;
    };
    std::vector<const Keyed*> all;
    for (const Keyed& k : keyed) all.push_back(&k);
    const std::vector<const Keyed*>* chosen_group = &all;
    int chosen_hosts = hosts_needed(all);
    std::string where = "all hosts";
    if (chosen_hosts == 0) return Infeasible("not enough capacity");
    // Lowest level first, then name: the first group with the fewest hosts wins.
    std::vector<const NetworkSwitch*> switches;
    for (const auto& [sw, g] : groups) switches.push_back(sw);
    std::sort(switches.begin(), switches.end(), [](const NetworkSwitch* a, const NetworkSwitch* b) {
      return a->level != b->level ? a->level < b->level : a->name < b->name;
    });
    for (const NetworkSwitch* sw : switches) {
      const int n = hosts_needed(groups[sw]);
      if (n > 0 && n < chosen_hosts) {
        chosen_hosts = n;
        chosen_group = &groups[sw];
        where = sw->name;
      } else if (n > 0 && n == chosen_hosts && where == "all hosts") {
        chosen_group = &groups[sw];  // same count, but under one switch
        where = sw->name;
      }
    }
    std::vector<Candidate> chosen;
    int left = units;
    for (const Keyed* k : *chosen_group) {
      if (left <= 0) break;
      chosen.push_back({k->cand.host, std::min(k->cand.units, left)});
      left -= chosen.back().units;
    }
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

// fault-domain: units spread over failure domains (leaf switches; hosts when
// there is no switch tree) as evenly as possible (skew at most one while every
// domain has room), packed onto few hosts inside each domain. Losing one
// switch then costs the fewest replicas.
class FaultDomainSelector : public HostSelector {
 public:
  const char* Name() const override { return "fault-domain"; }
  const char* Description() const override { return "spread over leaf switches evenly, packed within each"; }
  StatusOr<Selection> Select(const ClusterTopology& c, const std::vector<Candidate>& cands, int units) const override {
    std::map<std::string, std::vector<Candidate>> domains;
    for (const Candidate& cand : cands) {
      const NetworkSwitch* leaf = c.network.LeafOf(c.hosts[cand.host].name);
      domains[leaf ? leaf->name : c.hosts[cand.host].name].push_back(cand);
    }
    for (auto& [name, hosts] : domains) {
      std::stable_sort(hosts.begin(), hosts.end(), [](const Candidate& a, const Candidate& b) { return a.units > b.units; });
    }
    std::map<int, int> used;
    std::map<std::string, size_t> cursor;  // host being filled in each domain
    int left = units;
    while (left > 0) {
      bool progress = false;
      for (auto& [name, hosts] : domains) {
        if (left == 0) break;
        size_t& k = cursor[name];
        while (k < hosts.size() && used[hosts[k].host] >= hosts[k].units) ++k;
        if (k == hosts.size()) continue;
        ++used[hosts[k].host];
        --left;
        progress = true;
      }
      if (!progress) return Infeasible("not enough capacity");
    }
    Selection s;
    for (const auto& [name, hosts] : domains)
      for (const Candidate& cand : hosts)
        if (used[cand.host] > 0) s.chosen.push_back({cand.host, used[cand.host]});
    s.why = "spread over " + std::to_string(domains.size()) + " fault domains";
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
  static const FaultDomainSelector fault_domain;
  static const std::map<std::string, const HostSelector*> registry = {
      {"compact", &compact}, {"spread", &spread}, {"fragmented", &fragmented}, {"fault-domain", &fault_domain}};
  auto it = registry.find(name);
  return it == registry.end() ? nullptr : it->second;
}

std::vector<std::string> HostSelectorNames() { return {"compact", "spread", "fault-domain", "fragmented"}; }

}  // namespace gpulaunch
