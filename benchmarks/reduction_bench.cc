// Reduction benchmarks, each a ratio against its anchor measured in the same
// run. Run with any number of ranks on one host or several:
//   build/bin/gpulaunch -n 2 --allow-run-as-root build/bin/reduction_bench
//   build/bin/gpulaunch -n 8 --host node1:2,node2:2,node3:2,node4:2 ... reduction_bench
//
// 1. Deterministic allreduce (64 leaves, float32) vs MPI_Allreduce of the same
//    buffer, 64 KiB .. 64 MiB: the flat algorithm and the hierarchical one
//    (given the ranks' hosts; on one host it is the flat one) side by side,
//    with the bytes the busiest host sent to other hosts per allreduce, in
//    payloads. Target: at most 1.25x. Launched with a network tree
//    (gpulaunch --network, or inside Slurm) whose leaf switches hold several
//    hosts, also the hierarchy of hosts alone, and what the busiest switch
//    sent to other switches (across the uplink).
// 2. Local kernels vs memcpy of the same bytes: the fixed-lane vector sum
//    (reads the bytes) and the elementwise add (reads 2x, writes 1x).
//    Target for the fixed-order sum: at least 0.5x memcpy throughput.
// 3. Exact (superaccumulator) scalar allreduce of 1 Mi doubles per rank vs the
//    plain one (fixed-lane local sum + MPI_Allreduce of one double): reported.
//
// Both ranks run the same benchmarks with fixed iteration counts, so their
// collectives pair up; rank 0 reports.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "runtime/deterministic_reducer.h"
#include "runtime/gpurt.h"
#include "runtime/local_kernels.h"
#include "runtime/mpi_communicator.h"

using namespace gpulaunch;
using namespace gpulaunch::rt;

namespace {

Runtime* g_rt = nullptr;
constexpr int kLeaves = 64;

std::vector<float> Data(size_t count, int salt) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = std::ldexp(1.0f + float((i * 7 + salt) % 97) / 97.0f, int(i % 40) - 20);
  return v;
}

// --max-iterations N caps every allreduce's fixed count (a shaped network
// makes the small sizes' 400 take minutes).
int64_t g_max_iterations = 400;

int64_t IterationsFor(size_t bytes) {
  return std::min(std::clamp<int64_t>(int64_t(512) * 1024 * 1024 / int64_t(bytes), 5, 400), g_max_iterations);
}

void BM_MpiAllreduce(benchmark::State& state) {
  const size_t count = static_cast<size_t>(state.range(0)) / sizeof(float);
  const auto in = Data(count, g_rt->world().rank());
  std::vector<float> out(count);
  MPI_Barrier(MPI_COMM_WORLD);
  for (auto _ : state) {
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

// Payloads the busiest host (switch) sent to other hosts (switches) per
// allreduce, by benchmark name (rank 0's record; every rank computes it,
// collectively).
std::map<std::string, double> g_host_payloads, g_switch_payloads;

// The busiest group's bytes per allreduce, in payloads: every rank's count,
// summed by the group it belongs to.
double BusiestGroup(double mine, const std::vector<std::string>& group_of_rank, int64_t payload) {
  std::vector<double> all(group_of_rank.size());
  MPI_Allgather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
  std::map<std::string, double> by_group;
  for (size_t r = 0; r < all.size(); ++r) by_group[group_of_rank[r]] += all[r];
  double busiest = 0;
  for (const auto& [group, bytes] : by_group) busiest = std::max(busiest, bytes);
  return busiest / static_cast<double>(payload);
}

// Whether the plan's switches form a level of the hierarchy (several, each
// over more than one host).
bool SwitchesFormALevel() {
  if (g_rt->switches().empty()) return false;
  auto h = RankHierarchy::Make(HostIndices(g_rt->hosts()), HostIndices(g_rt->switches()));
  return h.ok() && h->has_switches();
}

void DeterministicAllreduce(benchmark::State& state, ReduceAlgorithm algorithm, const char* name) {
  Communicator& world = g_rt->world();
  const size_t count = static_cast<size_t>(state.range(0)) / sizeof(float);
  auto reducer = DeterministicReducer::Create(
      world, {kLeaves, ElementType::kFloat32, algorithm, HostIndices(g_rt->hosts()), HostIndices(g_rt->switches())});
  if (!reducer.ok()) {
    state.SkipWithError(reducer.status().message().c_str());
    return;
  }
  auto sum = LeafSum<float>::ForRank(count, kLeaves, world.rank(), world.size());
  for (int l = sum.first_leaf(); l < sum.end_leaf(); ++l) (void)sum.AddLeaf(Data(count, l).data());
  std::vector<float> out(count);
  MPI_Barrier(MPI_COMM_WORLD);
  for (auto _ : state) {
    if (!reducer->Allreduce(sum, out.data()).ok()) state.SkipWithError("allreduce failed");
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
  // Bytes to other hosts (switches), per allreduce.
  const double calls = static_cast<double>(std::max<int64_t>(state.iterations(), 1));
  const std::string key = std::string(name) + "/" + std::to_string(state.range(0));
  g_host_payloads[key] =
      BusiestGroup(static_cast<double>(reducer->traffic().inter_host_bytes) / calls, g_rt->hosts(), state.range(0));
  state.counters["host_payloads"] = g_host_payloads[key];
  if (!g_rt->switches().empty()) {
    g_switch_payloads[key] = BusiestGroup(static_cast<double>(reducer->traffic().inter_switch_bytes) / calls,
                                          g_rt->switches(), state.range(0));
    state.counters["switch_payloads"] = g_switch_payloads[key];
  }
}

void BM_DeterministicAllreduce(benchmark::State& state) {
  DeterministicAllreduce(state, ReduceAlgorithm::kAuto, "BM_DeterministicAllreduce");
}
void BM_FlatAllreduce(benchmark::State& state) {
  DeterministicAllreduce(state, ReduceAlgorithm::kFlat, "BM_FlatAllreduce");
}
void BM_HostsOnlyAllreduce(benchmark::State& state) {
  DeterministicAllreduce(state, ReduceAlgorithm::kHierarchicalHostsOnly, "BM_HostsOnlyAllreduce");
}

constexpr size_t kLocalBytes = 64 << 20;

void BM_Memcpy(benchmark::State& state) {
  std::vector<char> a(kLocalBytes, 1), b(kLocalBytes);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), kLocalBytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kLocalBytes);
}

void BM_FixedLaneSum(benchmark::State& state) {
  const auto x = Data(kLocalBytes / sizeof(float), 3);
  for (auto _ : state) benchmark::DoNotOptimize(FixedLaneSum(x.data(), x.size(), 0));
  state.SetBytesProcessed(state.iterations() * kLocalBytes);
}

void BM_ElementwiseAdd(benchmark::State& state) {
  const auto a = Data(kLocalBytes / sizeof(float), 1), b = Data(kLocalBytes / sizeof(float), 2);
  std::vector<float> out(a.size());
  for (auto _ : state) {
    AddInto(a.data(), b.data(), out.data(), a.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kLocalBytes);
}

constexpr size_t kScalarCount = 1 << 20;

void BM_PlainScalarAllreduce(benchmark::State& state) {
  std::vector<double> x(kScalarCount);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::ldexp(1.0 + i % 13, int(i % 600) - 300);
  MPI_Barrier(MPI_COMM_WORLD);
  for (auto _ : state) {
    double local = FixedLaneSum(x.data(), x.size(), 0), total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    benchmark::DoNotOptimize(total);
  }
}

void BM_ExactScalarAllreduce(benchmark::State& state) {
  std::vector<double> x(kScalarCount);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::ldexp(1.0 + i % 13, int(i % 600) - 300);
  MPI_Barrier(MPI_COMM_WORLD);
  for (auto _ : state) {
    Superaccumulator acc;
    acc.Add(x.data(), x.size());
    auto total = ExactAllreduceSum(g_rt->world(), acc);
    benchmark::DoNotOptimize(total);
  }
}

// Keeps rank 0's medians and prints the ratios at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const std::string name = r.run_name.function_name + "/" + r.run_name.args;
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median") {
        median_ms_[name] = r.GetAdjustedRealTime();
      } else if (r.run_type == Run::RT_Iteration && !median_ms_.count(name)) {
        median_ms_[name] = r.GetAdjustedRealTime();  // --benchmark_repetitions=1: no aggregate comes
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double Get(const std::string& name) const {
    auto it = median_ms_.find(name);
    return it == median_ms_.end() ? NAN : it->second;
  }
  void Summary() const {
    const std::vector<int> hosts = HostIndices(g_rt->hosts());
    const int host_count = hosts.empty() ? 1 : *std::max_element(hosts.begin(), hosts.end()) + 1;
    std::printf("\ndeterministic allreduce vs MPI_Allreduce (%d ranks on %d host(s), float32, medians; "
                "det = %s; to hosts = payloads the busiest host sent to other hosts):\n",
                g_rt->world().size(), host_count, host_count > 1 ? "hierarchical" : "flat (one host)");
    std::printf("  %10s %12s %12s %8s %12s %8s %9s %9s\n", "bytes", "MPI (us)", "det (us)", "ratio", "flat (us)",
                "ratio", "det hosts", "flat hosts");
    double worst = 0;
    for (int64_t bytes = 64 << 10; bytes <= 64 << 20; bytes *= 4) {
      const std::string arg = std::to_string(bytes);
      const double mpi = Get("BM_MpiAllreduce/" + arg), det = Get("BM_DeterministicAllreduce/" + arg);
      const double flat = Get("BM_FlatAllreduce/" + arg);
      auto payloads = [&](const std::string& name) {
        auto it = g_host_payloads.find(name + "/" + arg);
        return it == g_host_payloads.end() ? NAN : it->second;
      };
      worst = std::max(worst, det / mpi);
      std::printf("  %10lld %12.1f %12.1f %8.3f %12.1f %8.3f %9.3f %9.3f\n", static_cast<long long>(bytes), mpi, det,
                  det / mpi, flat, flat / mpi, payloads("BM_DeterministicAllreduce"), payloads("BM_FlatAllreduce"));
    }
    std::printf("  worst ratio %.3f; target <= 1.25: %s\n", worst, worst <= 1.25 ? "met" : "NOT met");
    if (SwitchesFormALevel()) {
      const std::vector<int> switches = HostIndices(g_rt->switches());
      std::printf("\nwith the plan's %d leaf switches (det climbs hosts then switches; hosts = the hierarchy of hosts "
                  "alone; to switches = payloads the busiest switch sent to other switches):\n",
                  *std::max_element(switches.begin(), switches.end()) + 1);
      std::printf("  %10s %12s %8s %12s %8s %9s %9s %9s\n", "bytes", "det (us)", "ratio", "hosts (us)", "ratio",
                  "det sw", "hosts sw", "flat sw");
      for (int64_t bytes = 64 << 10; bytes <= 64 << 20; bytes *= 4) {
        const std::string arg = std::to_string(bytes);
        const double mpi = Get("BM_MpiAllreduce/" + arg), det = Get("BM_DeterministicAllreduce/" + arg);
        const double hosts = Get("BM_HostsOnlyAllreduce/" + arg);
        auto payloads = [&](const std::string& name) {
          auto it = g_switch_payloads.find(name + "/" + arg);
          return it == g_switch_payloads.end() ? NAN : it->second;
        };
        std::printf("  %10lld %12.1f %8.3f %12.1f %8.3f %9.3f %9.3f %9.3f\n", static_cast<long long>(bytes), det,
                    det / mpi, hosts, hosts / mpi, payloads("BM_DeterministicAllreduce"),
                    payloads("BM_HostsOnlyAllreduce"), payloads("BM_FlatAllreduce"));
      }
    }
    const double copy = Get("BM_Memcpy/"), lane = Get("BM_FixedLaneSum/"), add = Get("BM_ElementwiseAdd/");
    std::printf("\nlocal kernels on 64 MiB vs memcpy of the same bytes (throughput ratio, higher is faster):\n");
    std::printf("  fixed-lane sum  %.3f x (target >= 0.5: %s)\n", copy / lane, copy / lane >= 0.5 ? "met" : "NOT met");
    std::printf("  elementwise add %.3f x\n", copy / add);
    const double plain = Get("BM_PlainScalarAllreduce/"), exact = Get("BM_ExactScalarAllreduce/");
    std::printf("\nexact scalar allreduce of %zu doubles per rank vs plain: %.2f x the time (%.2f ms vs %.2f ms)\n",
                kScalarCount, exact / plain, exact / 1000, plain / 1000);
  }

 private:
  std::map<std::string, double> median_ms_;
};

class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  auto rt = Init(&argc, &argv);
  if (!rt.ok()) {
    std::fprintf(stderr, "reduction_bench: %s\n", rt.status().message().c_str());
    return 1;
  }
  g_rt = rt->get();
  std::vector<char*> args(argv, argv + argc);
  // Rank 0 reports; another rank writing the same --benchmark_out file would
  // garble it.
  if (g_rt->world().rank() != 0) {
    std::erase_if(args, [](const char* a) { return std::strncmp(a, "--benchmark_out", 15) == 0; });
  }
  for (size_t i = 1; i + 1 < args.size(); ++i) {
    if (std::strcmp(args[i], "--max-iterations") != 0) continue;
    g_max_iterations = std::max<int64_t>(1, std::atoll(args[i + 1]));
    args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
    break;
  }
  std::string reps = "--benchmark_repetitions=3", agg = "--benchmark_report_aggregates_only=true";
  args.insert(args.begin() + 1, {reps.data(), agg.data()});
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  for (int64_t bytes = 64 << 10; bytes <= 64 << 20; bytes *= 4) {
    benchmark::RegisterBenchmark("BM_MpiAllreduce", BM_MpiAllreduce)->Arg(bytes)->Iterations(IterationsFor(bytes))
        ->UseRealTime()->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("BM_DeterministicAllreduce", BM_DeterministicAllreduce)->Arg(bytes)
        ->Iterations(IterationsFor(bytes))->UseRealTime()->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("BM_FlatAllreduce", BM_FlatAllreduce)->Arg(bytes)
        ->Iterations(IterationsFor(bytes))->UseRealTime()->Unit(benchmark::kMicrosecond);
    if (SwitchesFormALevel()) {
      benchmark::RegisterBenchmark("BM_HostsOnlyAllreduce", BM_HostsOnlyAllreduce)->Arg(bytes)
          ->Iterations(IterationsFor(bytes))->UseRealTime()->Unit(benchmark::kMicrosecond);
    }
  }
  for (auto* b : {benchmark::RegisterBenchmark("BM_Memcpy", BM_Memcpy),
                  benchmark::RegisterBenchmark("BM_FixedLaneSum", BM_FixedLaneSum),
                  benchmark::RegisterBenchmark("BM_ElementwiseAdd", BM_ElementwiseAdd)}) {
    b->Iterations(20)->UseRealTime()->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark("BM_PlainScalarAllreduce", BM_PlainScalarAllreduce)->Iterations(20)->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_ExactScalarAllreduce", BM_ExactScalarAllreduce)->Iterations(20)->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  if (g_rt->world().rank() == 0) {
    RatioReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    reporter.Summary();
  } else {
    SilentReporter silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  return 0;
}
