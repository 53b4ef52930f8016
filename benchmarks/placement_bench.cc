// Planning time of the placement engine against cluster size: half of every
// 8-GPU host's GPUs requested (4 ranks per host) under a 3-level switch tree,
// 8 -> 4,096 hosts, with Google Benchmark's complexity fit. Target: 4,096
// ranks on 1,024 hosts in at most 50 ms, and growth no faster than n log n.
// BM_PlaceMeasured: the same with a linkcheck file covering every host (its
// leaves, and every pair within a leaf), whose figures the model looks up on
// every ring edge of every candidate; its anchor is BM_Place at the same size.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>

#include "common/synthetic_cluster.h"
#include "policies/placement_engine.h"

namespace {

gpulaunch::ClusterTopology ClusterOf(int hosts) {
  // pods x leaves x nodes = hosts, 16 nodes per leaf, up to 16 leaves per pod.
  const int nodes = std::min(hosts, 16), leaves = std::min(std::max(hosts / 16, 1), 16);
  const int pods = std::max(hosts / (nodes * leaves), 1);
  char spec[128];
  std::snprintf(spec, sizeof spec, "pod:%d switch:%d node:%d gpu:8 nic:8", pods, leaves, nodes);
  return *gpulaunch::MakeSyntheticCluster(spec);
}

// Places 4 ranks per host (TP groups of 4) on `cluster`, once per iteration.
void PlaceFourPerHost(benchmark::State& state, const gpulaunch::ClusterTopology& cluster) {
  const int hosts = static_cast<int>(cluster.hosts.size());
  gpulaunch::JobRequest r;
  r.ranks = hosts * 4;
  r.layout = *gpulaunch::ParseLayout("tp=4", r.ranks);
  for (auto _ : state) {
    auto p = gpulaunch::Place(r, cluster);
    if (!p.ok()) state.SkipWithError(p.status().message().c_str());
    benchmark::DoNotOptimize(p);
  }
  state.SetComplexityN(hosts);
  state.counters["ranks"] = r.ranks;
}

void BM_Place(benchmark::State& state) { PlaceFourPerHost(state, ClusterOf(static_cast<int>(state.range(0)))); }
BENCHMARK(BM_Place)->RangeMultiplier(2)->Range(8, 4096)->Unit(benchmark::kMillisecond)->Complexity();

// What linkcheck's concurrent mode saves for the synthetic cluster: each
// leaf switch's hosts as a measured leaf, every pair under one leaf measured.
gpulaunch::LinkTable MeasuredLinksOf(const gpulaunch::ClusterTopology& c) {
  gpulaunch::LinkTable t;
  std::map<std::string, gpulaunch::MeasuredLeaf> leaves;
  for (const gpulaunch::ClusterHost& h : c.hosts) {
    const gpulaunch::NetworkSwitch* leaf = c.network.LeafOf(h.name);
    gpulaunch::MeasuredLeaf& l = leaves[leaf ? leaf->name : "all"];
    l.name = leaf ? leaf->name : "all";
    l.uplink_gbyte_per_s = 12.5;
    l.hosts.push_back(h.name);
  }
  for (auto& [name, leaf] : leaves) {
    for (size_t i = 0; i < leaf.hosts.size(); ++i)
      for (size_t j = i + 1; j < leaf.hosts.size(); ++j) t.AddPair(leaf.hosts[i], leaf.hosts[j], {23.0, 3.5});
    t.leaves.push_back(std::move(leaf));
  }
  return t;
}

void BM_PlaceMeasured(benchmark::State& state) {
  auto cluster = ClusterOf(static_cast<int>(state.range(0)));
  cluster.links = MeasuredLinksOf(cluster);
  PlaceFourPerHost(state, cluster);
  state.counters["pairs"] = static_cast<double>(cluster.links.pairs.size());
}
BENCHMARK(BM_PlaceMeasured)->RangeMultiplier(4)->Range(8, 1024)->Unit(benchmark::kMillisecond)->Complexity();

}  // namespace

BENCHMARK_MAIN();
