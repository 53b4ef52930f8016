// What gpulaunch does once per rank after the ranks ran, at 256 to 16,384
// ranks: the --tag demux of mpirun's tagged output, the root-cause search and
// block, gpulaunch-summary.json, and --profile's run report. Each benchmark
// reports its time per rank (the counter per_rank, in seconds) and Google
// Benchmark's growth fit over N (BigO). The anchor of each is itself at 256
// ranks: per-rank cost that stays flat as N grows is linear work, and the
// suite (section scale) reports the 2,048-rank figure against it.
//
//   build/bin/per_rank_bench [google benchmark flags]
#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <vector>

#include "common/step_metrics.h"
#include "launcher/base/tag_demux.h"
#include "launcher/job/job_summary.h"
#include "launcher/job/run_report.h"

namespace gpulaunch {
namespace {

constexpr int kHostSlots = 8;  // ranks per host in the synthetic jobs

std::string HostOf(int rank) { return "node" + std::to_string(rank / kHostSlots + 1); }

// A finished job of `ranks` ranks: rank ranks/2 failed on its own (exit 3,
// three stderr lines), the engine then stopped the others.
std::map<int, RankRecord> FailedJob(int ranks, JobOutcome& job) {
  const auto t0 = ControlClock::now();
  job.job_id = "bench";
  job.plan_hash = std::string(64, 'a');
  job.program = {"./train", "--steps", "100"};
  job.exit_code = 3;
  job.started = t0;
  job.ended = t0 + std::chrono::seconds(30);
  std::map<int, RankRecord> records;
  for (int r = 0; r < ranks; ++r) {
    job.planned_hosts.push_back(HostOf(r));
    RankRecord& rec = records[r];
    rec.rank = r;
    rec.pid = 10000 + r;
    rec.world = ranks;
    rec.host = HostOf(r);
    rec.plan_hash = job.plan_hash;
    rec.checked_in = t0 + std::chrono::milliseconds(r % 500);
    rec.last_beat = t0 + std::chrono::seconds(20);
    rec.ended = true;
    rec.signaled = r != ranks / 2;
    rec.exit_value = rec.signaled ? 15 : 3;
    rec.told_to_stop = rec.signaled;
    rec.ended_at = t0 + std::chrono::seconds(rec.signaled ? 21 : 20);
    if (!rec.signaled) rec.stderr_tail = {"loading shard 7", "step 41", "CUDA error: an illegal memory access"};
  }
  return records;
}

void SetPerRank(benchmark::State& state) {
  const double ranks = static_cast<double>(state.range(0));
  state.counters["per_rank"] =
      benchmark::Counter(ranks, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.SetComplexityN(state.range(0));
}

void BM_RootCause(benchmark::State& state) {
  JobOutcome job;
  const auto records = FailedJob(static_cast<int>(state.range(0)), job);
  for (auto _ : state) {
    const auto cause = FindRootCause(job, records);
    std::string block = RenderRootCause(*cause, "/tmp/gpulaunch-summary.json");
    benchmark::DoNotOptimize(block);
  }
  SetPerRank(state);
}

void BM_SummaryJson(benchmark::State& state) {
  JobOutcome job;
  const auto records = FailedJob(static_cast<int>(state.range(0)), job);
  const auto cause = FindRootCause(job, records);
  size_t bytes = 0;
  for (auto _ : state) {
    std::string json = SummaryJson(job, records, cause);
    bytes = json.size();
    benchmark::DoNotOptimize(json);
  }
  state.counters["bytes_per_rank"] = static_cast<double>(bytes) / static_cast<double>(state.range(0));
  SetPerRank(state);
}

// mpirun's --tag-output stream of 10 lines a rank, interleaved as it
// forwards them: chunks of a few lines, cut at 4 KiB reads.
std::string TaggedStream(int ranks) {
  std::string out;
  for (int line = 0; line < 10; line += 2) {
    for (int r = 0; r < ranks; ++r) {
      for (int i = line; i < line + 2; ++i) {
        out += "[1," + std::to_string(r) + "]<stdout>:rank " + std::to_string(r) + " step " + std::to_string(i) +
               " loss 0.4182\n";
      }
    }
  }
  return out;
}

void BM_TagDemux(benchmark::State& state) {
  const std::string stream = TaggedStream(static_cast<int>(state.range(0)));
  size_t lines = 0;
  for (auto _ : state) {
    lines = 0;
    TagDemux demux([&](int, const std::string& line) { lines += line.size() > 0; });
    for (size_t at = 0; at < stream.size(); at += 4096) {
      demux.Feed(stream.data() + at, std::min<size_t>(4096, stream.size() - at));
    }
    demux.Finish();
  }
  if (lines != static_cast<size_t>(state.range(0)) * 10) state.SkipWithError("the demux lost lines");
  SetPerRank(state);
}

// --profile's metrics: 20 steps a rank with dp and tp traffic.
RunProfile ProfileOf(int ranks) {
  RunProfile p;
  p.job_id = "bench";
  p.layout = "tp=8,pp=1,dp=" + std::to_string(ranks / 8);
  for (int r = 0; r < ranks; ++r) {
    p.host_of_rank.push_back(HostOf(r));
    for (int64_t s = 0; s < 20; ++s) {
      StepMetrics m;
      m.rank = r;
      m.step = s;
      m.compute_s = 0.080 + 0.001 * (r % 7);
      m.groups = {{"dp", 0.012, 64u << 20, 2}, {"tp", 0.004, 8u << 20, 40}};
      m.step_s = m.compute_s + 0.016;
      p.steps[r].push_back(m);
    }
  }
  return p;
}

void BM_RunReport(benchmark::State& state) {
  const RunProfile profile = ProfileOf(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    const RunReport report = AnalyzeRun(profile);
    std::string text = RenderRunReport(report) + RunReportJson(report) + PrometheusText(profile, report);
    benchmark::DoNotOptimize(text);
  }
  SetPerRank(state);
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->Arg(256)->Arg(2048)->Arg(16384)->Complexity(benchmark::oN)->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_TagDemux)->Apply(Sizes);
BENCHMARK(BM_RootCause)->Apply(Sizes);
BENCHMARK(BM_SummaryJson)->Apply(Sizes);
BENCHMARK(BM_RunReport)->Apply(Sizes);

}  // namespace
}  // namespace gpulaunch

BENCHMARK_MAIN();
