#include "policies/nic_choice.h"

#include <functional>
#include <set>
#include <unordered_map>
#include <tuple>

#include "common/hostlist.h"
#include "common/strings.h"

namespace gpulaunch {

std::string CardOf(const Nic& nic) {
  if (!nic.pci_bus_id.empty()) return nic.pci_bus_id.substr(0, nic.pci_bus_id.rfind('.'));
  return nic.name.substr(0, nic.name.find(':'));
}

NicAssigner::NicAssigner(const HostTopology& t) : t_(t), nic_users_(t.nics.size(), 0) {
  for (const Nic& n : t.nics) {
    card_.push_back(CardOf(n));
    nic_sites_.push_back(SiteOf(t, n));
  }
  if (t.nics.empty()) return;  // nothing to choose: no GPU's site is asked for
  for (const Gpu& g : t.gpus) gpu_sites_.push_back(SiteOf(t, g));
}

size_t NicAssigner::Choose(const Gpu& gpu) {
  // A GPU of t_.gpus has its site worked out already (std::less: a total
  // order even for a GPU from elsewhere).
  const std::less<const Gpu*> before;
  const bool ours = !t_.gpus.empty() && !before(&gpu, t_.gpus.data()) && before(&gpu, t_.gpus.data() + t_.gpus.size());
  const DeviceSite gpu_site = ours ? gpu_sites_[static_cast<size_t>(&gpu - t_.gpus.data())] : SiteOf(t_, gpu);
  const auto key = [&](size_t n) {
    return std::make_tuple(PathBetween(t_, gpu_site, nic_sites_[n]), card_users_[card_[n]], nic_users_[n]);
  };
  size_t best = 0;
  auto best_key = key(0);
  for (size_t n = 1; n < t_.nics.size(); ++n) {
    const auto k = key(n);
    if (k < best_key) {
      best = n;
      best_key = k;
    }
  }
  ++nic_users_[best];
  ++card_users_[card_[best]];
  return best;
}

std::optional<NearestNic> NearestNicOf(const HostTopology& t, const Gpu& gpu) {
  if (t.nics.empty()) return std::nullopt;
  const size_t n = NicAssigner(t).Choose(gpu);
  return NearestNic{n, GpuNicPath(t, gpu, t.nics[n])};
}

NicAssignerCache::Entry& NicAssignerCache::Of(const HostTopology& t) {
  auto it = by_topology_.find(&t);
  if (it == by_topology_.end()) {
    it = by_topology_.emplace(&t, Entry{NicAssigner(t), std::vector<int>(t.gpus.size(), -2)}).first;
  }
  return it->second;
}

NicAssigner NicAssignerCache::Fresh(const HostTopology& t) { return Of(t).fresh; }

int NicAssignerCache::Nearest(const HostTopology& t, int gpu) {
  if (t.nics.empty()) return -1;
  Entry& e = Of(t);
  int& nearest = e.nearest[static_cast<size_t>(gpu)];
  if (nearest == -2) nearest = static_cast<int>(NicAssigner(e.fresh).Choose(t.gpus[static_cast<size_t>(gpu)]));
  return nearest;
}

namespace {

// ExplainNicChoice with the NICs' sites given (worked out once per topology).
std::string ExplainAt(const HostTopology& t, const Gpu& gpu, const std::vector<DeviceSite>& nic_sites,
                      const std::string& chosen) {
  const DeviceSite gpu_site = SiteOf(t, gpu);
  std::optional<PathType> path;
  std::map<PathType, std::vector<std::string>> others;
  for (size_t n = 0; n < t.nics.size(); ++n) {
    const PathType type = PathBetween(t, gpu_site, nic_sites[n]);
    if (t.nics[n].name == chosen && !path) {
      path = type;
    } else {
      others[type].push_back(t.nics[n].name);
    }
  }
  if (!path) return "";
  std::string out = "GPU " + std::to_string(gpu.index) + " -> " + chosen + ": " + PathTypeName(*path);
  for (const auto& [type, names] : others) {
    out += "; " + Join(names, ", ") + (names.size() == 1 ? " is " : " are ") + PathTypeName(type) +
           (type == *path ? " too" : "");
  }
  return out;
}

}  // namespace

std::string ExplainNicChoice(const HostTopology& t, const Gpu& gpu, const std::string& chosen) {
  return ExplainAt(t, gpu, NicAssigner(t).nic_sites(), chosen);
}

void ExplainNics(const ClusterTopology& c, Placement& p) {
  std::unordered_map<std::string, const HostTopology*> topology_of;
  for (const ClusterHost& h : c.hosts) topology_of.emplace(h.name, &*h.topology);
  NicAssignerCache sites;  // the NICs' sites, once per shared topology
  std::vector<std::string> order;                              // answers, first seen first
  std::map<std::string, std::vector<std::string>> hosts;       // answer -> hosts, no repeats
  std::set<std::pair<const std::string*, const std::string*>> seen;  // (answer, host name)
  std::map<std::tuple<const HostTopology*, int, std::string>, std::string> why_of;
  for (const RankSlot& s : p.ranks) {
    const auto it = topology_of.find(s.host);
    if (s.nic.empty() || s.gpus.empty() || it == topology_of.end()) continue;
    const HostTopology& t = *it->second;
    if (static_cast<size_t>(s.gpus.front()) >= t.gpus.size()) continue;
    // The same topology, GPU and NIC give the same answer: worked out once.
    auto [known, fresh] = why_of.try_emplace({&t, s.gpus.front(), s.nic});
    if (fresh) known->second = ExplainAt(t, t.gpus[s.gpus.front()], sites.NicSites(t), s.nic);
    if (known->second.empty()) continue;
    auto [at, added] = hosts.try_emplace(known->second);
    if (added) order.push_back(at->first);
    if (seen.insert({&at->first, &it->first}).second) at->second.push_back(s.host);
  }
  for (const std::string& why : order) p.explain.push_back(CompressHostlist(hosts[why]) + ": " + why);
}

}  // namespace gpulaunch
