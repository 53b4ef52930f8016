#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

#include "policies/link_model.h"
#include "policies/placement_engine.h"

namespace gpulaunch {

StepModel ModelStep(const Placement& p, const ClusterTopology& c, const JobRequest& request) {
  StepModel m;
  auto normalised = Normalise(request, c);
  if (!normalised.ok()) return m;
  const JobRequest& r = *normalised;
  // The plan's hosts' indices in the cluster, and each (host, NIC name)'s
  // NIC index, found once: the rings below visit every rank several times.
  std::unordered_map<std::string_view, int> index;
  for (const std::string& h : p.hosts) index.emplace(h, -1);
  for (size_t h = 0; h < c.hosts.size(); ++h) {
    const auto it = index.find(c.hosts[h].name);
    if (it != index.end() && it->second < 0) it->second = static_cast<int>(h);
  }
  std::map<std::pair<int, std::string_view>, int> nic_index;
  auto slot = [&](int rank) {
    const RankSlot& s = p.ranks[rank];
    auto at = index.find(s.host);
    if (at == index.end()) {  // a rank on a host the plan does not list: looked for once
      at = index.emplace(s.host, -1).first;
      for (size_t h = 0; h < c.hosts.size() && at->second < 0; ++h)
        if (c.hosts[h].name == s.host) at->second = static_cast<int>(h);
    }
    if (at->second < 0) {
      throw std::out_of_range("ModelStep: rank " + std::to_string(rank) + "'s host " + s.host + " is not in the cluster");
    }
    const int host = at->second;
    int nic = -1;
    if (!s.nic.empty()) {
      const auto [known, fresh] = nic_index.try_emplace({host, s.nic}, -1);
      if (fresh) {
        const std::vector<Nic>& nics = c.hosts[host].topology->nics;
        for (size_t n = 0; n < nics.size(); ++n)
          if (nics[n].name == s.nic) known->second = static_cast<int>(n);
      }
      nic = known->second;
    }
    return SlotRef{host, s.gpus.empty() ? -1 : s.gpus.front(), nic};
  };
  // Each kind of group moves its bytes in one phase, every group at once, so
  // the groups of a phase share measured uplinks (link_model.h).
  const ParallelLayout& L = r.layout;
  std::vector<std::vector<SlotRef>> tp_rings, pipelines, dp_rings;
  for (int rank = 0; rank < L.world_size(); ++rank) {
    const auto coords = L.CoordsOf(rank);
    auto slots_of = [&](Axis axis) {
      std::vector<SlotRef> group;
      for (int member : L.GroupOf(axis, rank)) group.push_back(slot(member));
      return group;
    };
    if (coords[kTp] == 0) tp_rings.push_back(slots_of(kTp));
    if (coords[kPp] == 0) pipelines.push_back(slots_of(kPp));
    if (coords[kDp] == 0) dp_rings.push_back(slots_of(kDp));
  }
  LinkLookup links(c);
  UplinkLoad tp_load, pp_load, dp_load;
  for (const auto& ring : tp_rings) AddRingFlows(links, ring, tp_load);
  for (const auto& ring : dp_rings) AddRingFlows(links, ring, dp_load);
  for (const auto& stages : pipelines)
    for (size_t s = 0; s + 1 < stages.size(); ++s) AddFlow(links, stages[s], stages[s + 1], pp_load);
  for (const auto& ring : tp_rings)
    m.tp_seconds = std::max(m.tp_seconds, RingAllreduceSeconds(links, ring, r.volume.tp_bytes, &tp_load));
  for (const auto& stages : pipelines) {
    double t = 0;
    for (size_t s = 0; s + 1 < stages.size(); ++s)
      t += PointToPointSeconds(links, stages[s], stages[s + 1], r.volume.pp_bytes, &pp_load);
    m.pp_seconds = std::max(m.pp_seconds, t);
  }
  for (const auto& ring : dp_rings)
    m.dp_seconds = std::max(m.dp_seconds, RingAllreduceSeconds(links, ring, r.volume.dp_bytes, &dp_load));
  std::set<std::string> switches;
  for (const std::string& h : p.hosts)
    for (const NetworkSwitch* s : c.network.PathOf(h)) switches.insert(s->name);
  // Only the switches a message crosses: drop ancestors above the lowest
  // common one.
  if (const NetworkSwitch* top = c.network.CommonAncestor(p.hosts)) {
    for (const NetworkSwitch* s = top; s && !s->parent.empty();) {
      const std::string parent = s->parent;
      switches.erase(parent);
      s = nullptr;
      for (const NetworkSwitch& cand : c.network.switches())
        if (cand.name == parent) s = &cand;
    }
  }
  m.hosts = static_cast<int>(p.hosts.size());
  m.switches = p.hosts.size() > 1 ? static_cast<int>(switches.size()) : 0;
  return m;
}

}  // namespace gpulaunch
