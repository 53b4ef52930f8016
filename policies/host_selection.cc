#include "policies/host_selection.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <map>
#include <memory>

#include "policies/pool/gang_placement.h"

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
// parent adjacent, and so on: the key is the path from the root, then the
// host's place in the given list (a hostfile's or -H's order, which mpirun
// users choose on purpose; Slurm and synthetic clusters list hosts by name).
std::string NetworkKey(const ClusterTopology& c, int h) {
  std::string key;
  const auto path = c.network.PathOf(c.hosts[h].name);
  for (auto it = path.rbegin(); it != path.rend(); ++it) key += (*it)->name + '\x01';
  char place[16];
  std::snprintf(place, sizeof place, "%010d", h);
  return key + place;
}

void SortByNetwork(const ClusterTopology& c, std::vector<Candidate>& v) {
  std::vector<std::pair<std::string, Candidate>> keyed;
  for (const Candidate& cand : v) keyed.push_back({NetworkKey(c, cand.host), cand});
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < v.size(); ++i) v[i] = keyed[i].second;
}

// A candidate with its network order key and its switch path (compact).
struct Keyed {
  Candidate cand;
  std::string key;
  std::vector<const NetworkSwitch*> path;
};
using KeyedGroup = std::vector<const Keyed*>;

// Candidates ordered once: most units first, then network order. Every
// switch's group keeps that order, so a group's first hosts are the ones it
// would take.
std::vector<Keyed> ByUnitsThenNetwork(const ClusterTopology& c, const std::vector<Candidate>& cands) {
  std::vector<Keyed> keyed;
  for (const Candidate& cand : cands) {
    keyed.push_back({cand, NetworkKey(c, cand.host), c.network.PathOf(c.hosts[cand.host].name)});
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    return a.cand.units != b.cand.units ? a.cand.units > b.cand.units : a.key < b.key;
  });
  return keyed;
}

// Hosts a group needs for `units` (largest first), or 0 when it cannot hold them.
int HostsNeeded(const KeyedGroup& g, int units) {
  int left = units, used = 0;
  for (const Keyed* k : g) {
    if (left <= 0) break;
    left -= k->cand.units;
    ++used;
  }
  return left <= 0 ? used : 0;
}

// The group of hosts under one switch that holds `units` on the fewest hosts:
// lowest level first, then name, so the first group with the fewest hosts
// wins; a switch's group beats all hosts at the same count. `*where`: the
// switch's name, or "all hosts".
const KeyedGroup* FewestHostsGroup(const KeyedGroup& all, const std::map<const NetworkSwitch*, KeyedGroup>& groups,
                                   int units, std::string* where) {
  const KeyedGroup* chosen_group = &all;
  int chosen_hosts = HostsNeeded(all, units);
  *where = "all hosts";
  std::vector<const NetworkSwitch*> switches;
  for (const auto& [sw, g] : groups) switches.push_back(sw);
  std::sort(switches.begin(), switches.end(), [](const NetworkSwitch* a, const NetworkSwitch* b) {
    return a->level != b->level ? a->level < b->level : a->name < b->name;
  });
  for (const NetworkSwitch* sw : switches) {
    const KeyedGroup& g = groups.at(sw);
    const int n = HostsNeeded(g, units);
    if (n > 0 && n < chosen_hosts) {
      chosen_hosts = n;
      chosen_group = &g;
      *where = sw->name;
    } else if (n > 0 && n == chosen_hosts && *where == "all hosts") {
      chosen_group = &g;  // same count, but under one switch
      *where = sw->name;
    }
  }
  return chosen_group;
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
    const std::vector<Keyed> keyed = ByUnitsThenNetwork(c, cands);
    std::map<const NetworkSwitch*, KeyedGroup> groups;
    for (const Keyed& k : keyed)
      for (const NetworkSwitch* s : k.path) groups[s].push_back(&k);
    KeyedGroup all;
    for (const Keyed& k : keyed) all.push_back(&k);
    if (HostsNeeded(all, units) == 0) return Infeasible("not enough capacity");
    std::string where;
    const KeyedGroup* chosen_group = FewestHostsGroup(all, groups, units, &where);
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

// gang: the shared pool's rule (pool/gang_placement.h, what `gpulaunch sim`
// decides with), over the hosts as they are now. As in the pool, hosts are
// alike: each holds as many units as the largest candidate can take, and a
// host that can take fewer counts as partly used. Each sits under its leaf
// switch (a host the tree does not name is a leaf of its own). A job that
// fits one host goes to the fullest host that fits, ties to the fullest
// leaf; a bigger one takes whole free hosts (the remainder on one more)
// under one leaf switch when one has room, else over the fewest leaves.
class GangSelector : public HostSelector {
 public:
  const char* Name() const override { return "gang"; }
  const char* Description() const override {
    return "the pool scheduler's gang rule: whole hosts under the fewest leaf switches";
  }
  StatusOr<Selection> Select(const ClusterTopology& c, const std::vector<Candidate>& cands, int units) const override {
    int per_host = 0;
    for (const Candidate& cand : cands) per_host = std::max(per_host, cand.units);
    if (per_host > 64) {
      return InvalidArgument("the gang policy models at most 64 units per host (the pool's GPU mask), and a host "
                             "here takes " + std::to_string(per_host) + "; use --policy compact");
    }
    std::vector<pool::PoolHost> hosts;
    std::map<std::string, int> leaf_index;
    for (const Candidate& cand : cands) {
      const std::string& name = c.hosts[cand.host].name;
      const NetworkSwitch* leaf = c.network.LeafOf(name);
      const std::string domain = leaf ? "switch " + leaf->name : "host " + name;
      const int index = leaf_index.emplace(domain, static_cast<int>(leaf_index.size())).first->second;
      hosts.push_back(pool::PoolHost{name, index, per_host});
    }
    pool::GpuPool gang_pool(std::move(hosts));
    for (size_t i = 0; i < cands.size(); ++i) {
      const int used = per_host - cands[i].units;
      if (used <= 0) continue;
      const uint64_t mask = used == 64 ? ~uint64_t{0} : (uint64_t{1} << used) - 1;
      GL_RETURN_IF_ERROR(gang_pool.Take(pool::Allocation{{pool::HostShare{static_cast<int>(i), mask}}}));
    }
    const auto allocation = pool::PlaceGang(gang_pool, units, pool::PlacementStyle::kTopology);
    if (!allocation) return Infeasible("no gang placement of " + std::to_string(units) + " units: too few whole hosts");
    Selection s;
    for (const pool::HostShare& share : allocation->shares) {
      s.chosen.push_back({cands[static_cast<size_t>(share.host)].host, std::popcount(share.gpus)});
    }
    SortByNetwork(c, s.chosen);
    const int used = static_cast<int>(s.chosen.size()), leaves = pool::LeavesOf(gang_pool, *allocation);
    s.why = "gang: " + std::to_string(used) + (used == 1 ? " host" : " hosts") + " under " + std::to_string(leaves) +
            (leaves == 1 ? " leaf switch" : " leaf switches");
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
  static const GangSelector gang;
  static const std::map<std::string, const HostSelector*> registry = {
      {"compact", &compact}, {"spread", &spread}, {"fragmented", &fragmented}, {"fault-domain", &fault_domain},
      {"gang", &gang}};
  auto it = registry.find(name);
  return it == registry.end() ? nullptr : it->second;
}

std::vector<std::string> HostSelectorNames() { return {"compact", "spread", "fault-domain", "fragmented", "gang"}; }

}  // namespace gpulaunch
