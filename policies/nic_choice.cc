#include "policies/nic_choice.h"

#include <set>
#include <tuple>

#include "common/hostlist.h"
#include "common/strings.h"

namespace gpulaunch {

std::string CardOf(const Nic& nic) {
  if (!nic.pci_bus_id.empty()) return nic.pci_bus_id.substr(0, nic.pci_bus_id.rfind('.'));
  return nic.name.substr(0, nic.name.find(':'));
}

NicAssigner::NicAssigner(const HostTopology& t) : t_(t), nic_users_(t.nics.size(), 0) {
  for (const Nic& n : t.nics) card_.push_back(CardOf(n));
}

size_t NicAssigner::Choose(const Gpu& gpu) {
  const auto key = [&](size_t n) {
    return std::make_tuple(GpuNicPath(t_, gpu, t_.nics[n]), card_users_[card_[n]], nic_users_[n]);
  };
  size_t best = 0;
  for (size_t n = 1; n < t_.nics.size(); ++n)
    if (key(n) < key(best)) best = n;
  ++nic_users_[best];
  ++card_users_[card_[best]];
  return best;
}

std::optional<NearestNic> NearestNicOf(const HostTopology& t, const Gpu& gpu) {
  if (t.nics.empty()) return std::nullopt;
  const size_t n = NicAssigner(t).Choose(gpu);
  return NearestNic{n, GpuNicPath(t, gpu, t.nics[n])};
}

std::string ExplainNicChoice(const HostTopology& t, const Gpu& gpu, const std::string& chosen) {
  const Nic* mine = nullptr;
  std::map<PathType, std::vector<std::string>> others;
  for (const Nic& n : t.nics) {
    if (n.name == chosen && !mine) {
      mine = &n;
    } else {
      others[GpuNicPath(t, gpu, n)].push_back(n.name);
    }
  }
  if (!mine) return "";
  const PathType path = GpuNicPath(t, gpu, *mine);
  std::string out = "GPU " + std::to_string(gpu.index) + " -> " + chosen + ": " + PathTypeName(path);
  for (const auto& [type, names] : others) {
    out += "; " + Join(names, ", ") + (names.size() == 1 ? " is " : " are ") + PathTypeName(type) +
           (type == path ? " too" : "");
  }
  return out;
}

void ExplainNics(const ClusterTopology& c, Placement& p) {
  std::map<std::string, const HostTopology*> by_name;
  for (const ClusterHost& h : c.hosts) by_name[h.name] = &h.topology;
  std::vector<std::string> order;                         // answers, first seen first
  std::map<std::string, std::vector<std::string>> hosts;  // answer -> hosts, no repeats
  std::set<std::pair<std::string, std::string>> seen;     // (answer, host)
  for (const RankSlot& s : p.ranks) {
    const auto it = by_name.find(s.host);
    if (s.nic.empty() || s.gpus.empty() || it == by_name.end()) continue;
    const HostTopology& t = *it->second;
    if (static_cast<size_t>(s.gpus.front()) >= t.gpus.size()) continue;
    const std::string why = ExplainNicChoice(t, t.gpus[s.gpus.front()], s.nic);
    if (why.empty()) continue;
    auto [at, added] = hosts.try_emplace(why);
    if (added) order.push_back(why);
    if (seen.insert({why, s.host}).second) at->second.push_back(s.host);
  }
  for (const std::string& why : order) p.explain.push_back(CompressHostlist(hosts[why]) + ": " + why);
}

}  // namespace gpulaunch
