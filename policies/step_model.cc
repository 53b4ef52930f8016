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
  const ParallelLayout& L = r.layout;
  for (int rank = 0; rank < L.world_size(); ++rank) {
    const auto coords = L.CoordsOf(rank);
    if (coords[kTp] == 0) {
      std::vector<SlotRef> ring;
      for (int m2 : L.GroupOf(kTp, rank)) ring.push_back(slot(m2));
      m.tp_seconds = std::max(m.tp_seconds, RingAllreduceSeconds(c, ring, r.volume.tp_bytes));
    }
    if (coords[kPp] == 0) {
      const auto stages = L.GroupOf(kPp, rank);
      double t = 0;
      for (size_t s = 0; s + 1 < stages.size(); ++s) t += PointToPointSeconds(c, slot(stages[s]), slot(stages[s + 1]), r.volume.pp_bytes);
      m.pp_seconds = std::max(m.pp_seconds, t);
    }
    if (coords[kDp] == 0) {
      std::vector<SlotRef> ring;
      for (int m2 : L.GroupOf(kDp, rank)) ring.push_back(slot(m2));
      m.dp_seconds = std::max(m.dp_seconds, RingAllreduceSeconds(c, ring, r.volume.dp_bytes));
    }
  }
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
