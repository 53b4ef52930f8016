#include <algorithm>
#include <map>
#include <set>

#include "policies/link_model.h"
#include "policies/placement_engine.h"

namespace gpulaunch {

StepModel ModelStep(const Placement& p, const ClusterTopology& c, const JobRequest& request) {
  StepModel m;
  auto normalised = Normalise(request, c);
  if (!normalised.ok()) return m;
  const JobRequest& r = *normalised;
  std::map<std::string, int> index;
  for (size_t h = 0; h < c.hosts.size(); ++h) index[c.hosts[h].name] = static_cast<int>(h);
  auto slot = [&](int rank) {
    const RankSlot& s = p.ranks[rank];
    const int host = index.at(s.host);
    int nic = -1;
    const std::vector<Nic>& nics = c.hosts[host].topology->nics;
    for (size_t n = 0; n < nics.size() && !s.nic.empty(); ++n)
      if (nics[n].name == s.nic) nic = static_cast<int>(n);
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
  UplinkLoad tp_load, pp_load, dp_load;
  for (const auto& ring : tp_rings) AddRingFlows(c, ring, tp_load);
  for (const auto& ring : dp_rings) AddRingFlows(c, ring, dp_load);
  for (const auto& stages : pipelines)
    for (size_t s = 0; s + 1 < stages.size(); ++s) AddFlow(c, stages[s], stages[s + 1], pp_load);
  for (const auto& ring : tp_rings)
    m.tp_seconds = std::max(m.tp_seconds, RingAllreduceSeconds(c, ring, r.volume.tp_bytes, &tp_load));
  for (const auto& stages : pipelines) {
    double t = 0;
    for (size_t s = 0; s + 1 < stages.size(); ++s) t += PointToPointSeconds(c, stages[s], stages[s + 1], r.volume.pp_bytes, &pp_load);
    m.pp_seconds = std::max(m.pp_seconds, t);
  }
  for (const auto& ring : dp_rings)
    m.dp_seconds = std::max(m.dp_seconds, RingAllreduceSeconds(c, ring, r.volume.dp_bytes, &dp_load));
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
