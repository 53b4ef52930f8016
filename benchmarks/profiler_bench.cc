// The cost of --profile's step metrics (runtime/step_profiler.h), against the
// anchor of the same work unprofiled, in one run:
//   - a step with profiling off (the default): one branch;
//   - a 2-rank exchange of 4 KiB over the in-process thread communicator,
//     plain (anchor) and wrapped by the profiler (on);
//   - the same exchange under an enabled profiler whose records go nowhere.
// Report the ratio on/anchor; the contract is "negligible when off".
#include <benchmark/benchmark.h>

#include <thread>
#include <vector>

#include "runtime/step_profiler.h"
#include "runtime/thread_communicator.h"

namespace gpulaunch::rt {
namespace {

void BM_StepProfilingOff(benchmark::State& state) {
  StepProfiler off;
  int64_t step = 0;
  for (auto _ : state) {
    ProfiledStep s(step++, off);
    benchmark::DoNotOptimize(step);
  }
}
BENCHMARK(BM_StepProfilingOff);

void BM_EmptyLoopAnchor(benchmark::State& state) {
  int64_t step = 0;
  for (auto _ : state) benchmark::DoNotOptimize(step++);
}
BENCHMARK(BM_EmptyLoopAnchor);

// Rank 0 and rank 1 swap 4 KiB `iterations` times; `profiled` wraps both.
void Exchange(benchmark::State& state, bool profiled) {
  auto world = ThreadCommunicator::CreateWorld(2);
  StepProfiler p0(0, [](const StepMetrics&) {}), p1(1, [](const StepMetrics&) {});
  std::unique_ptr<Communicator> c0 = std::move(world[0]), c1 = std::move(world[1]);
  if (profiled) {
    c0 = ProfileCommunicator(std::move(c0), "dp", p0);
    c1 = ProfileCommunicator(std::move(c1), "dp", p1);
  }
  std::vector<char> a(4096), b(4096), ra(4096), rb(4096);
  for (auto _ : state) {
    std::thread peer([&] {
      ProfiledStep step(0, p1);
      for (int i = 0; i < 100; ++i) (void)c1->SendRecv(0, b.data(), b.size(), 0, rb.data(), rb.size(), 1);
    });
    {
      ProfiledStep step(0, p0);
      for (int i = 0; i < 100; ++i) (void)c0->SendRecv(1, a.data(), a.size(), 1, ra.data(), ra.size(), 1);
    }
    peer.join();
  }
  state.SetItemsProcessed(state.iterations() * 100);
}
void BM_Exchange4KiBAnchor(benchmark::State& state) { Exchange(state, false); }
void BM_Exchange4KiBProfiled(benchmark::State& state) { Exchange(state, true); }
BENCHMARK(BM_Exchange4KiBAnchor)->UseRealTime();
BENCHMARK(BM_Exchange4KiBProfiled)->UseRealTime();

}  // namespace
}  // namespace gpulaunch::rt

BENCHMARK_MAIN();
