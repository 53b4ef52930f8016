#include "policies/placement_engine.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "common/strings.h"
#include "policies/exact_assignment.h"
#include "policies/host_selection.h"
#include "policies/link_model.h"
#include "policies/gpu_pick.h"
#include "policies/host_resources.h"
#include "policies/nic_choice.h"
#include "policies/slot_placement.h"

namespace gpulaunch {
namespace {

bool AnyGpus(const ClusterTopology& c) {
  return std::any_of(c.hosts.begin(), c.hosts.end(), [](const ClusterHost& h) { return !h.topology->gpus.empty(); });
}

int RanksThatFit(const ClusterHost& h, const JobRequest& r) {
  int fit = r.gpus_per_rank > 0 ? h.FreeGpus() / r.gpus_per_rank
                                : static_cast<int>(h.topology->cores.size()) / std::max(1, r.cores_per_rank);
  if (h.slots) fit = std::min(fit, *h.slots);
  return fit;
}

// Builds the placement from slots in fill order. Hosts are numbered by first
// appearance.
Placement Assemble(const ClusterTopology& c, const JobRequest& r, const std::vector<SlotChoice>& slots,
                   bool tp_innermost_fill) {
  Placement p;
  const ParallelLayout& L = r.layout;
  p.ranks.resize(r.ranks);
  std::map<int, std::vector<RankSlot*>> on_host;
  std::map<int, int> node_of_host;
  for (size_t slot = 0; slot < slots.size(); ++slot) {
    const int h = slots[slot].host;
    if (!node_of_host.count(h)) {
      node_of_host[h] = static_cast<int>(p.hosts.size());
      p.hosts.push_back(c.hosts[h].name);
    }
    // Fill order: tp innermost, then pp, then dp (or plain rank order).
    const int i = static_cast<int>(slot);
    std::array<int, 3> coords;
    int rank;
    if (tp_innermost_fill) {
      coords = {i % L.extent[kTp], (i / L.extent[kTp]) % L.extent[kPp], i / (L.extent[kTp] * L.extent[kPp])};
      rank = L.RankOf(coords);
    } else {
      rank = i;
      coords = L.CoordsOf(rank);
    }
    RankSlot& s = p.ranks[rank];
    s.rank = rank;
    s.host = c.hosts[h].name;
    s.node_rank = node_of_host[h];
    s.gpus = slots[slot].gpus;
    s.host_has_gpus = !c.hosts[h].topology->gpus.empty();
    s.coords = coords;
    on_host[h].push_back(&s);
  }
  NicAssignerCache nics;
  for (auto& [h, ranks] : on_host) {
    std::sort(ranks.begin(), ranks.end(), [](const RankSlot* a, const RankSlot* b) { return a->rank < b->rank; });
    for (size_t k = 0; k < ranks.size(); ++k) {
      ranks[k]->local_rank = static_cast<int>(k);
      ranks[k]->local_size = static_cast<int>(ranks.size());
    }
    FillHostResources(c.hosts[h].topology, ranks, r, nics);
  }
  return p;
}

std::string Shortfall(const JobRequest& r, int have_units_in_ranks, int eligible_hosts) {
  if (r.gpus_per_rank > 0) {
    const int need = r.ranks * r.gpus_per_rank, have = have_units_in_ranks * r.gpus_per_rank;
    return "needs " + std::to_string(need) + " GPUs (" + std::to_string(r.ranks) + " ranks x " +
           std::to_string(r.gpus_per_rank) + ") but the " + std::to_string(eligible_hosts) +
           " eligible hosts offer " + std::to_string(have) + " usable free GPUs: short by " +
           std::to_string(need - have);
  }
  return "needs " + std::to_string(r.ranks) + " ranks of " + std::to_string(r.cores_per_rank) +
         " cores but the eligible hosts fit " + std::to_string(have_units_in_ranks) + ": short by " +
         std::to_string(r.ranks - have_units_in_ranks) + " ranks";
}

}  // namespace

StatusOr<JobRequest> Normalise(const JobRequest& in, const ClusterTopology& c) {
  JobRequest r = in;
  if (r.ranks < 1) return InvalidArgument("the job needs at least one rank");
  if (r.gpus_per_rank < 0) r.gpus_per_rank = AnyGpus(c) ? 1 : 0;
  if (r.cores_per_rank < 0) return InvalidArgument("--cores-per-rank must not be negative");
  if (r.layout.world_size() == 1 && r.ranks > 1) r.layout.extent[kDp] = r.ranks;
  if (r.layout.world_size() != r.ranks) {
    return InvalidArgument("layout " + r.layout.ToString() + " has " + std::to_string(r.layout.world_size()) +
                           " ranks but the job has " + std::to_string(r.ranks));
  }
  return r;
}

namespace {

// Filter: how many of the job's ranks fit on each host (0 for a host a
// filter passes over, with the reason in `explain`). Returns the most.
int FilterHosts(const JobRequest& r, const ClusterTopology& c, std::vector<std::string>& explain,
                std::vector<int>& fit) {
  int max_fit = 0;
  for (size_t h = 0; h < c.hosts.size(); ++h) {
    for (const HostFilter& f : HostFilters()) {
      if (const std::string why = f.reject(c, static_cast<int>(h), r); !why.empty()) {
        explain[h] = "passed over: " + why;
        break;
      }
    }
    if (!explain[h].empty()) continue;
    fit[h] = RanksThatFit(c.hosts[h], r);
    if (fit[h] == 0) {
      explain[h] = r.gpus_per_rank > 0 ? "passed over: " + std::to_string(c.hosts[h].FreeGpus()) +
                                             " free GPUs, fewer than " + std::to_string(r.gpus_per_rank) + " per rank"
                                       : "passed over: too few cores";
    }
    max_fit = std::max(max_fit, fit[h]);
  }
  return max_fit;
}

// Each chosen host's slots: its GPUs (or plain core slots), the last unit
// trimmed to the job.
std::vector<SlotChoice> PickSlots(const JobRequest& r, const ClusterTopology& c, const Selection& sel, int unit,
                                  std::vector<int>& chosen_hosts) {
  std::vector<SlotChoice> slots;
  int left = r.ranks;
  for (const Candidate& ch : sel.chosen) {
    const int ranks_here = std::min(ch.units * unit, left);
    left -= ranks_here;
    chosen_hosts.push_back(ch.host);
    const std::vector<int> gpus =
        r.gpus_per_rank > 0 ? PickGpus(c.hosts[ch.host], ranks_here * r.gpus_per_rank) : std::vector<int>{};
    for (int i = 0; i < ranks_here; ++i) {
      std::vector<int> mine;
      if (r.gpus_per_rank > 0) mine.assign(gpus.begin() + i * r.gpus_per_rank, gpus.begin() + (i + 1) * r.gpus_per_rank);
      slots.push_back({ch.host, std::move(mine)});
    }
  }
  return slots;
}

// One line per host: chosen (with its ranks), passed over, or not needed.
void ExplainHosts(const ClusterTopology& c, const std::vector<std::string>& explain, const std::string& why,
                  Placement& p) {
  std::map<std::string, int> ranks_on;
  for (const RankSlot& s : p.ranks) ++ranks_on[s.host];
  for (size_t h = 0; h < c.hosts.size(); ++h) {
    const auto it = ranks_on.find(c.hosts[h].name);
    const std::string line = it != ranks_on.end() ? "chosen: " + std::to_string(it->second) + " ranks (" + why + ")"
                             : explain[h].rfind("passed over", 0) == 0 ? explain[h]
                                                                       : "not needed (" + why + ")";
    p.explain.push_back(c.hosts[h].name + ": " + line);
  }
}

// One candidate plan: hosts chosen in units of `unit` ranks (a TP group, or 1).
StatusOr<Placement> PlaceWithUnit(const JobRequest& r, const ClusterTopology& c, int unit_wanted) {
  const HostSelector* selector = FindHostSelector(r.comm == "compute" && r.policy == "compact" ? "fragmented" : r.policy);
  if (!selector) {
    return InvalidArgument("unknown policy '" + r.policy + "' (choose from " + Join(HostSelectorNames(), ", ") + ", or " +
                           kBySlotPolicy + ")");
  }
  std::vector<std::string> explain(c.hosts.size());
  std::vector<int> fit(c.hosts.size(), 0);
  const int max_fit = FilterHosts(r, c, explain, fit);
  // Units: whole TP groups when a TP group fits on a host.
  const int tp = r.layout.extent[kTp];
  const int unit = unit_wanted <= max_fit ? unit_wanted : 1;
  std::vector<Candidate> cands;
  int capacity = 0;
  for (size_t h = 0; h < c.hosts.size(); ++h) {
    if (fit[h] / unit > 0) cands.push_back({static_cast<int>(h), fit[h] / unit});
    capacity += fit[h] / unit * unit;
  }
  if (capacity < r.ranks) return Infeasible(Shortfall(r, capacity, static_cast<int>(cands.size())));
  auto sel = selector->Select(c, cands, r.ranks / unit + (r.ranks % unit ? 1 : 0));
  if (!sel.ok()) return Infeasible(Shortfall(r, capacity, static_cast<int>(cands.size())));
  std::vector<int> chosen_hosts;
  std::vector<SlotChoice> slots = PickSlots(r, c, *sel, unit, chosen_hosts);
  // A small search space: take the model's optimum outright. Only with TP or PP
  // structure: for pure data parallelism the collective library builds its
  // own rings, so rank order buys nothing and contiguous ranks per host (what
  // mpirun users expect) stay. Within the hosts the selector chose: more
  // hosts would break its promise (and the by-slot guard below).
  const bool structured = r.layout.extent[kTp] > 1 || r.layout.extent[kPp] > 1;
  if (r.gpus_per_rank == 1 && structured) {
    std::vector<SlotChoice> exact = ExactAssignment(c, chosen_hosts, r, slots);
    if (!exact.empty()) slots = std::move(exact);
  }
  Placement p = Assemble(c, r, slots, /*tp_innermost_fill=*/true);
  ExplainHosts(c, explain, sel->why, p);
  if (unit == 1 && tp > 1) {
    p.notes.push_back("TP groups of " + std::to_string(tp) + " are not kept whole on hosts: some span hosts");
  }
  return p;
}

// The topology-aware engine (the presets compact, spread, fault-domain,
// fragmented).
StatusOr<Placement> PlaceByTopology(const JobRequest& request, const ClusterTopology& c) {
  GL_ASSIGN_OR_RETURN(const JobRequest r, Normalise(request, c));
  // Candidates: whole TP groups per host (the preference), plain ranks, and
  // what Open MPI's by-slot mapping would do. The plan never spans more hosts
  // than by-slot and, among those, is the fastest by the model (ties: the
  // earlier candidate), so it is never worse on either count.
  GL_ASSIGN_OR_RETURN(Placement best, PlaceWithUnit(r, c, r.layout.extent[kTp]));
  if (r.policy != "compact") return best;
  std::vector<Placement> others;
  if (r.layout.extent[kTp] > 1) {
    if (auto p = PlaceWithUnit(r, c, 1); p.ok()) others.push_back(std::move(p).value());
  }
  auto baseline = PlaceLikeOpenMpiBySlot(r, c);
  if (!baseline.ok()) return best;
  const size_t max_hosts = baseline->hosts.size();
  StepModel best_model = ModelStep(best, c, r);
  bool best_ok = best.hosts.size() <= max_hosts;
  for (Placement& cand : others) {
    const StepModel m = ModelStep(cand, c, r);
    const bool ok = cand.hosts.size() <= max_hosts;
    if ((ok && !best_ok) || (ok == best_ok && m.total_seconds() < best_model.total_seconds() * (1 - 1e-12))) {
      cand.explain = best.explain;
      best = std::move(cand);
      best_model = m;
      best_ok = ok;
    }
  }
  const StepModel base_model = ModelStep(*baseline, c, r);
  if (!best_ok || base_model.total_seconds() < best_model.total_seconds() * (1 - 1e-12)) {
    baseline->explain = best.explain;
    baseline->notes.push_back("the by-slot order is the best plan here");
    return std::move(baseline).value();
  }
  return best;
}

// Each rank's leaf switch, for the runtime's hierarchical reductions
// (GPULAUNCH_SWITCH).
void NameLeafSwitches(const NetworkTree& network, Placement& p) {
  for (RankSlot& r : p.ranks) {
    const NetworkSwitch* leaf = network.LeafOf(r.host);
    r.leaf_switch = leaf ? leaf->name : "";
  }
}

StatusOr<Placement> PlaceOnce(const JobRequest& request, const ClusterTopology& c) {
  auto placed = request.policy == kBySlotPolicy ? PlaceLikeOpenMpiBySlot(request, c) : PlaceByTopology(request, c);
  if (placed.ok()) ExplainNics(c, *placed);  // nic_choice.h
  if (placed.ok() || placed.status().code() != StatusCode::kInfeasible || !request.unbound_when_unbindable ||
      request.policy == kBySlotPolicy) {
    return placed;
  }
  // More ranks than GPUs or cores to bind them to: what mpirun would run,
  // slot by slot and unbound (slot_placement.h), when the slots allow it.
  JobRequest slots;
  slots.ranks = request.ranks;
  slots.oversubscribe = request.oversubscribe;
  return PlaceBySlot(slots, c.hosts);
}

}  // namespace

StatusOr<Placement> Place(const JobRequest& request, const ClusterTopology& c) {
  auto placed = PlaceOnce(request, c);
  if (placed.ok()) NameLeafSwitches(c.network, *placed);
  return placed;
}

StatusOr<Placement> PlaceLikeOpenMpiBySlot(const JobRequest& request, const ClusterTopology& c) {
  GL_ASSIGN_OR_RETURN(const JobRequest r, Normalise(request, c));
  std::vector<std::pair<int, std::vector<std::vector<int>>>> host_slots;
  int left = r.ranks, capacity = 0;
  for (size_t h = 0; h < c.hosts.size() && left > 0; ++h) {
    bool rejected = false;
    for (const HostFilter& f : HostFilters()) rejected |= !f.reject(c, static_cast<int>(h), r).empty();
    if (rejected) continue;
    const int here = std::min(RanksThatFit(c.hosts[h], r), left);
    capacity += here;
    if (here == 0) continue;
    std::vector<int> free;
    for (const Gpu& g : c.hosts[h].topology->gpus)
      if (c.hosts[h].GpuFree(g.index)) free.push_back(g.index);
    std::vector<std::vector<int>> slots(here);
    for (int i = 0; i < here && r.gpus_per_rank > 0; ++i) {
      slots[i].assign(free.begin() + i * r.gpus_per_rank, free.begin() + (i + 1) * r.gpus_per_rank);
    }
    host_slots.push_back({static_cast<int>(h), slots});
    left -= here;
  }
  if (left > 0) return Infeasible(Shortfall(r, capacity, static_cast<int>(c.hosts.size())));
  std::vector<SlotChoice> slots;
  for (const auto& [h, gpu_sets] : host_slots)
    for (const auto& gpus : gpu_sets) slots.push_back({h, gpus});
  Placement p = Assemble(c, r, slots, /*tp_innermost_fill=*/false);
  NameLeafSwitches(c.network, p);
  return p;
}

}  // namespace gpulaunch
