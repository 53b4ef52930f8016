#include "policies/slot_placement.h"

#include <algorithm>
#include <climits>
#include <map>

#include "common/strings.h"
#include "policies/nic_choice.h"

namespace gpulaunch {
namespace {

// Counts of ranks per host, or an error naming what is short.
StatusOr<std::vector<int>> RanksPerHost(const JobRequest& req, const std::vector<ClusterHost>& hosts, int ranks,
                                        bool& oversubscribed) {
  std::vector<int> slots;
  int total = 0;
  for (const auto& h : hosts) {
    slots.push_back(EffectiveSlots(h));
    total += slots.back();
  }
  std::vector<int> counts(hosts.size(), 0);
  oversubscribed = ranks > total;
  if (!oversubscribed) {
    int left = ranks;
    for (size_t i = 0; i < hosts.size() && left > 0; ++i) {
      counts[i] = std::min(slots[i], left);
      left -= counts[i];
    }
    return counts;
  }
  if (!req.oversubscribe) {
    return Infeasible(std::to_string(ranks) + " ranks requested but only " + std::to_string(total) + " slot" +
                      (total == 1 ? "" : "s") + " available on " + std::to_string(hosts.size()) + " host" +
                      (hosts.size() == 1 ? "" : "s") + " (short by " + std::to_string(ranks - total) +
                      "); pass --oversubscribe to run more ranks than slots (unbound), "
                      "lower -n, or add hosts/slots with --host or --hostfile");
  }
  // Even spread, honouring max_slots; repeat rounds so capped hosts shed
  // their excess onto the others.
  int left = ranks;
  int capacity = 0;
  for (const auto& h : hosts) capacity += h.max_slots ? *h.max_slots : INT_MAX / 4;
  if (capacity < ranks) {
    return Infeasible(std::to_string(ranks) + " ranks requested but the hosts' max_slots allow only " +
                      std::to_string(capacity) + "; raise max_slots in the hostfile or lower -n");
  }
  while (left > 0) {
    std::vector<size_t> open;
    for (size_t i = 0; i < hosts.size(); ++i)
      if (!hosts[i].max_slots || counts[i] < *hosts[i].max_slots) open.push_back(i);
    const int share = std::max<int>(1, left / static_cast<int>(open.size()));
    for (size_t i : open) {
      if (left == 0) break;
      const int cap = hosts[i].max_slots ? *hosts[i].max_slots - counts[i] : INT_MAX;
      const int take = std::min({share, cap, left});
      counts[i] += take;
      left -= take;
    }
  }
  return counts;
}

std::vector<int> CoresCovering(const HostTopology& topo, const std::vector<int>& cpus) {
  std::vector<int> cores;
  for (const Core& c : topo.cores) {
    for (int pu : c.pus) {
      if (std::binary_search(cpus.begin(), cpus.end(), pu)) {
        cores.push_back(c.logical_index);
        break;
      }
    }
  }
  return cores;
}

// Splits `cores` into `parts` contiguous blocks, sizes differing by at most one.
std::vector<std::vector<const Core*>> SplitEvenly(const std::vector<const Core*>& cores, int parts) {
  std::vector<std::vector<const Core*>> out(parts);
  const int n = static_cast<int>(cores.size());
  int pos = 0;
  for (int p = 0; p < parts; ++p) {
    const int size = n / parts + (p < n % parts ? 1 : 0);
    for (int k = 0; k < size; ++k) out[p].push_back(cores[pos++]);
  }
  return out;
}

std::vector<int> PusOf(const std::vector<const Core*>& cores) {
  std::vector<int> pus;
  for (const Core* c : cores) pus.insert(pus.end(), c->pus.begin(), c->pus.end());
  std::sort(pus.begin(), pus.end());
  return pus;
}

void PlaceGpuRanks(const HostTopology& topo, std::vector<RankSlot*>& ranks) {
  const int k = static_cast<int>(ranks.size());
  // Ranks per NUMA node (by their GPU), to split that node's cores evenly.
  std::map<int, std::vector<int>> ranks_of_numa;
  for (int i = 0; i < k; ++i) ranks_of_numa[topo.gpus[i].numa_node].push_back(i);
  NicAssigner nics(topo);
  for (const auto& [numa, locals] : ranks_of_numa) {
    std::vector<const Core*> pool;
    for (const Core& c : topo.cores)
      if (numa < 0 || c.numa_node == numa) pool.push_back(&c);
    if (pool.empty()) for (const Core& c : topo.cores) pool.push_back(&c);
    const int parts = static_cast<int>(locals.size());
    const bool enough = static_cast<int>(pool.size()) >= parts;
    const auto blocks = enough ? SplitEvenly(pool, parts) : std::vector<std::vector<const Core*>>(parts, pool);
    for (int j = 0; j < parts; ++j) {
      RankSlot& r = *ranks[locals[j]];
      const Gpu& gpu = topo.gpus[locals[j]];
      r.gpus = {gpu.index};
      r.cpus = PusOf(blocks[j]);
      r.bound = true;
      r.mem_node = numa;
    }
  }
  for (int i = 0; i < k && !topo.nics.empty(); ++i)
    ranks[i]->nic = topo.nics[nics.Choose(topo.gpus[i])].name;
}

void PlaceCpuRanks(const HostTopology& topo, std::vector<RankSlot*>& ranks) {
  std::vector<const Core*> pool;
  for (const Core& c : topo.cores) pool.push_back(&c);
  const int k = static_cast<int>(ranks.size());
  if (k > static_cast<int>(pool.size())) return;  // more ranks than cores: leave unbound
  const auto blocks = SplitEvenly(pool, k);
  for (int i = 0; i < k; ++i) {
    RankSlot& r = *ranks[i];
    r.cpus = PusOf(blocks[i]);
    r.bound = true;
    const int numa = blocks[i].front()->numa_node;
    const bool one_node = std::all_of(blocks[i].begin(), blocks[i].end(), [&](const Core* c) { return c->numa_node == numa; });
    r.mem_node = one_node ? numa : -1;
  }
}

// The host's hardware without the GPUs other jobs hold. The GPUs keep their
// index; the code above looks them up by position.
HostTopology UsableTopology(const ClusterHost& host) {
  HostTopology t = host.topology;
  if (host.gpu_busy.empty()) return t;
  std::vector<Gpu> free;
  for (const Gpu& g : t.gpus)
    if (g.index >= static_cast<int>(host.gpu_busy.size()) || !host.gpu_busy[g.index]) free.push_back(g);
  t.gpus = std::move(free);
  t.gpu_link_gbps.clear();
  return t;
}

}  // namespace

int EffectiveSlots(const ClusterHost& host) {
  if (host.slots) return *host.slots;
  const HostTopology usable = UsableTopology(host);
  if (!usable.gpus.empty()) return static_cast<int>(usable.gpus.size());
  return std::max<int>(1, static_cast<int>(usable.cores.size()));
}

StatusOr<Placement> PlaceBySlot(const JobRequest& request, const std::vector<ClusterHost>& hosts) {
  if (hosts.empty()) return InvalidArgument("no hosts to place ranks on");
  if (request.ranks < 0) return InvalidArgument("-n must be at least 1, got " + std::to_string(request.ranks));
  int ranks = request.ranks;
  if (ranks == 0) {
    for (const auto& h : hosts) ranks += EffectiveSlots(h);
  }
  Placement placement;
  GL_ASSIGN_OR_RETURN(std::vector<int> counts, RanksPerHost(request, hosts, ranks, placement.oversubscribed));
  if (placement.oversubscribed) {
    placement.notes.push_back("oversubscribed: " + std::to_string(ranks) +
                              " ranks exceed the slots, so they are spread evenly and share their host's CPUs "
                              "(no rank has cores of its own)");
  }
  placement.ranks.resize(ranks);
  int next_rank = 0;
  for (size_t h = 0; h < hosts.size(); ++h) {
    if (counts[h] == 0) continue;
    const HostTopology topo = UsableTopology(hosts[h]);
    const int node_rank = static_cast<int>(placement.hosts.size());
    placement.hosts.push_back(hosts[h].name);
    std::vector<RankSlot*> local;
    for (int i = 0; i < counts[h]; ++i) {
      RankSlot& r = placement.ranks[next_rank];
      r.rank = next_rank++;
      r.host = hosts[h].name;
      r.node_rank = node_rank;
      r.local_rank = i;
      r.local_size = counts[h];
      r.cpus = topo.AllPus();
      r.host_has_gpus = !topo.gpus.empty();
      local.push_back(&r);
    }
    const bool gpu_mode = !topo.gpus.empty() && counts[h] <= static_cast<int>(topo.gpus.size());
    if (placement.oversubscribed) {
      // unbound, no GPU ownership
    } else if (gpu_mode) {
      PlaceGpuRanks(topo, local);
    } else {
      if (!topo.gpus.empty()) {
        placement.notes.push_back(hosts[h].name + ": " + std::to_string(counts[h]) + " ranks for " +
                                  std::to_string(topo.gpus.size()) + " GPUs, so no rank owns a GPU");
      }
      PlaceCpuRanks(topo, local);
      if (counts[h] > static_cast<int>(topo.cores.size())) {
        placement.notes.push_back(hosts[h].name + ": " + std::to_string(counts[h]) + " ranks on " +
                                  std::to_string(topo.cores.size()) + (topo.cores.size() == 1 ? " core" : " cores") +
                                  ", so they share its CPUs " + FormatIdList(topo.AllPus()) +
                                  " (no rank has cores of its own)");
      }
    }
    for (RankSlot* r : local) r->cores = CoresCovering(topo, r->cpus);
  }
  return placement;
}

}  // namespace gpulaunch
