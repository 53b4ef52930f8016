// Pipeline bubble: the real executor (runtime/pipeline_executor.h) over the
// in-process thread communicator, p = 4 ranks, on synthetic stages whose
// forward sleeps 50 ms and backward 100 ms (a fixed busy time that needs no
// CPU, so 4 ranks on a 2-core machine still overlap as on 4 GPUs; long
// enough that the sleeps' jitter, which 1F1B's slack-free steady state turns
// into bubble, stays small). About a minute in all.
//   build/bin/pipeline_bench
//
// Measured bubble = 1 - (mean busy time of a rank) / (wall time of the step); the
// anchor is the formula for the same shape, (p - 1) / (m + p - 1) for 1F1B
// and (p - 1) / (v m + p - 1) for interleaved 1F1B with v = 2 chunks.
// Reported per m in {4, 8, 16, 32}: measured, formula, measured / formula.
#include <benchmark/benchmark.h>
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>
#include <thread>

#include "runtime/pipeline_executor.h"
#include "runtime/thread_communicator.h"

using namespace gpulaunch::rt;

namespace {

constexpr int kRanks = 4;
constexpr double kForwardMs = 50, kBackwardMs = 100;

// Sleeps overshoot by tens of microseconds, so the busy time each rank
// really spent in its stages is measured rather than assumed.
class SleepingStages : public PipelineStages {
 public:
  explicit SleepingStages(int chunks) : chunks_(chunks) {}
  size_t ActivationFloats(int) const override { return 256; }
  gpulaunch::StatusOr<std::vector<float>> Forward(int mb, int stage, const std::vector<float>&) override {
    Busy(mb, stage, false, kForwardMs / chunks_);
    return std::vector<float>(256, 1.0f);
  }
  gpulaunch::StatusOr<std::vector<float>> Backward(int mb, int stage, const std::vector<float>&) override {
    Busy(mb, stage, true, kBackwardMs / chunks_);
    return std::vector<float>(256, 1.0f);
  }
  double busy_ms[kRanks] = {};  // each written by its rank's thread only
  // Each compute's measured duration, by (backward, micro-batch, stage).
  std::map<std::tuple<bool, int, int>, double> took_ms[kRanks];

 private:
  void Busy(int mb, int stage, bool backward, double ms) {
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // wake on time: the default 50 us slack varies per sleep
    const auto start = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
    const double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    busy_ms[stage % kRanks] += took;
    took_ms[stage % kRanks][{backward, mb, stage}] = took;
  }
  int chunks_;
};

// One-way latency of a message to a thread blocked in Recv: half the median
// round trip of 200 ping-pongs between two threads that sleep between them.
double WakeupLatencyMs() {
  static const double latency = [] {
    std::vector<double> rtt;
    RunOnThreads(2, [&](Communicator& comm) {
      int token = 0;
      for (int i = 0; i < 200; ++i) {
        if (comm.rank() == 0) {
          std::this_thread::sleep_for(std::chrono::microseconds(500));
          const auto t0 = std::chrono::steady_clock::now();
          (void)comm.Send(1, 1, &token, sizeof token);
          (void)comm.Recv(1, 2, &token, sizeof token);
          rtt.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        } else {
          (void)comm.Recv(0, 1, &token, sizeof token);
          (void)comm.Send(0, 2, &token, sizeof token);
        }
      }
    });
    std::sort(rtt.begin(), rtt.end());
    return rtt[rtt.size() / 2] / 2;
  }();
  return latency;
}

void BM_Bubble(benchmark::State& state, bool interleaved) {
  const int m = static_cast<int>(state.range(0)), chunks = interleaved ? 2 : 1;
  auto schedule = interleaved ? MakeInterleaved1F1B(kRanks, m, chunks) : Make1F1B(kRanks, m);
  std::vector<double> bubbles, overheads;
  for (auto _ : state) {
    SleepingStages stages(chunks);
    std::chrono::steady_clock::time_point begin[kRanks], end[kRanks];
    RunOnThreads(kRanks, [&](Communicator& comm) {
      if (!comm.Barrier().ok()) std::abort();  // every thread started: time the pipeline alone
      begin[comm.rank()] = std::chrono::steady_clock::now();
      if (!RunPipeline(*schedule, comm, stages).ok()) std::abort();
      end[comm.rank()] = std::chrono::steady_clock::now();
    });
    const double wall =
        std::chrono::duration<double, std::milli>(*std::max_element(end, end + kRanks) - *std::min_element(begin, begin + kRanks))
            .count();
    state.SetIterationTime(wall / 1e3);
    double busy = 0;
    for (double b : stages.busy_ms) busy += b / kRanks;
    bubbles.push_back(1 - busy / wall);
    // Replay: the step the table takes with these very stage times.
    const double replayed = SimulateSchedule(*schedule, [&](int r, const PipeAction& a) {
      return stages.took_ms[r].at({a.op == PipeOp::kBackward, a.microbatch, a.stage});
    }, WakeupLatencyMs()).makespan;
    overheads.push_back(wall / replayed);
  }
  std::sort(bubbles.begin(), bubbles.end());
  std::sort(overheads.begin(), overheads.end());
  const double measured = bubbles[bubbles.size() / 2];  // the median
  state.counters["wall_vs_replay"] = overheads[overheads.size() / 2];
  const double formula = TheoreticalBubble(*schedule);
  state.counters["bubble"] = measured;
  state.counters["formula"] = formula;
  state.counters["ratio"] = measured / formula;
  // The same table simulated with the wake-up latency measured below.
  const double latency_ms = WakeupLatencyMs();
  state.counters["latency_us"] = latency_ms * 1e3;
  state.counters["with_latency"] = SimulateSchedule(*schedule, kForwardMs, kBackwardMs, latency_ms).bubble_fraction;
}

}  // namespace

BENCHMARK_CAPTURE(BM_Bubble, one_f_one_b, false)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->Iterations(3)->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Bubble, interleaved_v2, true)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->Iterations(3)->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
