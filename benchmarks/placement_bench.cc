// Planning time of the placement engine against cluster size: half of every
// 8-GPU host's GPUs requested (4 ranks per host) under a 3-level switch tree,
// 8 -> 4,096 hosts, with Google Benchmark's complexity fit. Target: 4,096
// ranks on 1,024 hosts in at most 50 ms, and growth no faster than n log n.
#include <benchmark/benchmark.h>

#include <cstdio>

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

void BM_Place(benchmark::State& state) {
  const int hosts = static_cast<int>(state.range(0));
  const auto cluster = ClusterOf(hosts);
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
BENCHMARK(BM_Place)->RangeMultiplier(2)->Range(8, 4096)->Unit(benchmark::kMillisecond)->Complexity();

}  // namespace

BENCHMARK_MAIN();
