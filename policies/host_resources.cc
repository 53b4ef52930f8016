#include "policies/host_resources.h"

#include <algorithm>
#include <map>
#include <set>

#include "policies/nic_choice.h"

namespace gpulaunch {
namespace {

// `pool`'s cores split in order among `members`, each a contiguous share
// (at least one core while there are cores), memory bound to `mem_node`.
void SplitCores(const std::vector<const Core*>& pool, const std::vector<RankSlot*>& members, int mem_node) {
  const size_t k = members.size();
  for (size_t j = 0; j < k; ++j) {
    RankSlot& s = *members[j];
    s.cpus.clear();
    s.cores.clear();
    const size_t lo = pool.size() * j / k, hi = pool.size() * (j + 1) / k;
    for (size_t i = lo; i < std::max(hi, lo + 1) && i < pool.size(); ++i) {
      s.cpus.insert(s.cpus.end(), pool[i]->pus.begin(), pool[i]->pus.end());
      s.cores.push_back(pool[i]->logical_index);
    }
    std::sort(s.cpus.begin(), s.cpus.end());
    s.bound = !s.cpus.empty();
    s.mem_node = mem_node;
  }
}

// GPU ranks: the cores of each GPU's NUMA node split among the ranks whose
// GPU is there. A GPU of unknown locality (NUMA -1) or on a NUMA node
// without cores gets the cores no such group claims. When that cannot give
// every rank cores of its own (a node with more of these ranks than cores,
// none left over), the host's cores are split evenly over all its ranks
// instead; with more ranks than cores they run unbound. So no two bound
// ranks ever share a core, and a bound rank always has one.
void FillGpuRankCores(const HostTopology& t, const std::vector<RankSlot*>& ranks) {
  auto whole_host = [&] {
    if (t.cores.size() < ranks.size()) {
      for (RankSlot* s : ranks) {
        s->cpus = t.AllPus();
        s->cores.clear();
        s->bound = false;
        s->mem_node = -1;
      }
      return;
    }
    std::vector<const Core*> all;
    for (const Core& c : t.cores) all.push_back(&c);
    SplitCores(all, ranks, -1);
  };
  std::map<int, std::vector<const Core*>> cores_of;
  for (const Core& c : t.cores) cores_of[c.numa_node].push_back(&c);
  std::map<int, std::vector<RankSlot*>> by_numa;
  std::vector<RankSlot*> elsewhere;
  for (RankSlot* s : ranks) {
    const int numa = t.gpus[s->gpus.front()].numa_node;
    if (numa >= 0 && cores_of.count(numa)) {
      by_numa[numa].push_back(s);
    } else {
      elsewhere.push_back(s);
    }
  }
  for (const auto& [numa, members] : by_numa) {
    if (members.size() > cores_of[numa].size()) return whole_host();
  }
  for (const auto& [numa, members] : by_numa) SplitCores(cores_of[numa], members, numa);
  if (elsewhere.empty()) return;
  std::vector<const Core*> unclaimed;
  std::set<int> numas;
  for (const Core& c : t.cores) {
    if (!by_numa.count(c.numa_node)) {
      unclaimed.push_back(&c);
      numas.insert(c.numa_node);
    }
  }
  if (unclaimed.size() < elsewhere.size()) return whole_host();
  SplitCores(unclaimed, elsewhere, numas.size() == 1 ? *numas.begin() : -1);
}

}  // namespace

// Fills cpus, memory node and NIC of the ranks on one host (GPUs chosen).
void FillHostResources(const HostTopology& t, std::vector<RankSlot*>& ranks, const JobRequest& r,
                       NicAssignerCache& nic_cache) {
  if (r.gpus_per_rank > 0) {
    FillGpuRankCores(t, ranks);
    if (t.nics.empty()) return;
    NicAssigner nics = nic_cache.Fresh(t);
    for (RankSlot* s : ranks) s->nic = t.nics[nics.Choose(t.gpus[s->gpus.front()])].name;
    return;
  }
  // CPU ranks: contiguous blocks of cores_per_rank cores in core order, or
  // the host's cores split evenly (sizes differ by at most one) when 0.
  size_t next = 0;
  const size_t k = ranks.size(), n = t.cores.size();
  for (size_t j = 0; j < k; ++j) {
    RankSlot* s = ranks[j];
    const size_t take = r.cores_per_rank > 0 ? static_cast<size_t>(r.cores_per_rank) : n / k + (j < n % k ? 1 : 0);
    for (size_t i = 0; i < take && next < n; ++i, ++next) {
      s->cpus.insert(s->cpus.end(), t.cores[next].pus.begin(), t.cores[next].pus.end());
      s->cores.push_back(t.cores[next].logical_index);
    }
    std::sort(s->cpus.begin(), s->cpus.end());
    s->bound = true;
    s->mem_node = t.cores[next - 1].numa_node;
  }
}

}  // namespace gpulaunch
