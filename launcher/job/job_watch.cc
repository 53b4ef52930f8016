#include "launcher/job/job_watch.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>

namespace fs = std::filesystem;

namespace gpulaunch {
namespace {

// How long the shims of stalled ranks get to send their stacks.
constexpr int kStackWaitMs = 20000;
// With --profile, how often the metrics files are refreshed while the job runs.
constexpr auto kProfileRefresh = std::chrono::seconds(10);
// How long after the teardown's SIGKILL a rank's shim has to report before a
// rank on a host that already lost a connection counts as vanished with it.
constexpr auto kReportAfterKill = std::chrono::seconds(1);
// How long the engine may stay idle after a failure's teardown.
constexpr auto kEngineExitAfterTeardown = std::chrono::seconds(2);
// How long the engine may stay idle once every rank ended by itself: far
// beyond the time mpirun took to exit after its last rank here (2 s at most,
// 1,024 ranks on one host), since killing it sooner could lose the ranks'
// last output. An engine still busy with that output is not idle.
constexpr auto kEngineExitGrace = std::chrono::seconds(10);

}  // namespace

JobWatch::JobWatch(const LaunchPlan& plan, const RunSettings& o, ControlServer& control, const JobOutcome& job,
                   int kill_grace_ms)
    : o_(o),
      control_(control),
      job_(job),
      kill_grace_(std::chrono::milliseconds(kill_grace_ms)),
      monitor_{static_cast<int>(plan.placement.ranks.size()), o.startup_timeout_s, o.stall_timeout_s},
      ranks_(plan.placement.ranks.size()) {
  profile_.job_id = job.job_id;
  profile_.layout = plan.layout;
  profile_.host_of_rank = job.planned_hosts;
}

bool JobWatch::Poll() {
  const auto now = ControlClock::now();
  if (o_.profile && now - profile_written_ >= kProfileRefresh) {
    WriteProfile(false);
    profile_written_ = now;
  }
  const auto records = control_.Records();
  verdict_ = WatchJob(monitor_, records, job_.started, now);
  every_rank_ended_ = records.size() >= ranks_ &&
                      std::all_of(records.begin(), records.end(), [](const auto& entry) { return entry.second.ended; });
  if (verdict_.failed_rank >= 0 && !teardown_since_) {
    teardown_since_ = now;
    control_.SignalAllRanks(SIGTERM);
  } else if (teardown_since_ && !teardown_killed_ && now - *teardown_since_ >= kill_grace_) {
    teardown_killed_ = true;
    control_.SignalAllRanks(SIGKILL);
  }
  if (verdict_.stop == StopReason::kStall) control_.CollectStacks(verdict_.stalled, kStackWaitMs);
  return verdict_.stop != StopReason::kNone;
}

std::optional<EngineLinger> JobWatch::Over() const {
  if (!teardown_since_) {
    if (!every_rank_ended_) return std::nullopt;
    return EngineLinger{kEngineExitGrace, /*term_first=*/true};
  }
  const auto records = control_.Records();
  if (records.size() < ranks_) return std::nullopt;
  std::set<std::string> hosts_lost;
  for (const auto& [rank, r] : records)
    if (r.lost) hosts_lost.insert(r.host);
  const bool stop_sequence_done =
      teardown_killed_ && ControlClock::now() - *teardown_since_ >= kill_grace_ + kReportAfterKill;
  for (const auto& [rank, r] : records) {
    if (r.ended || r.lost || !r.refusal.empty()) continue;
    if (stop_sequence_done && hosts_lost.count(r.host)) continue;
    return std::nullopt;
  }
  return EngineLinger{kEngineExitAfterTeardown, /*term_first=*/false};
}

void JobWatch::WriteProfile(bool final) {
  profile_.steps = control_.Metrics();
  const RunReport report = AnalyzeRun(profile_);
  if (Status s = WriteProfileFiles(o_.profile_dir, profile_, report); !s.ok()) {
    if (final) std::cerr << "gpulaunch: warning: " << s.message() << "\n";
  }
  if (!final) return;
  std::cerr << RenderRunReport(report);
  std::cerr << "gpulaunch: metrics in " << fs::absolute(o_.profile_dir).string()
            << " (rank-<R>.jsonl, metrics.prom, run-report.json)\n";
  if (const int bad = control_.MalformedMetrics(); bad > 0) {
    std::cerr << "gpulaunch: warning: " << bad << " metrics record(s) from ranks did not parse and were left out\n";
  }
}

}  // namespace gpulaunch
