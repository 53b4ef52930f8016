#include "launcher/job/job_monitor.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

using std::chrono::seconds;

RankRecord Running(int rank, ControlClock::time_point at) {
  RankRecord r;
  r.rank = rank;
  r.pid = 100 + rank;
  r.host = "h";
  r.checked_in = at;
  return r;
}

TEST(JobMonitor, StartupTimeoutOnlyWhileRanksAreMissing) {
  const auto t0 = ControlClock::time_point{} + seconds(1000);
  std::map<int, RankRecord> ranks = {{0, Running(0, t0)}};
  const MonitorSettings s{2, 10, 0};
  EXPECT_EQ(WatchJob(s, ranks, t0, t0 + seconds(9)).stop, StopReason::kNone);
  EXPECT_EQ(WatchJob(s, ranks, t0, t0 + seconds(10)).stop, StopReason::kStartupTimeout);
  ranks[1] = Running(1, t0 + seconds(9));
  EXPECT_EQ(WatchJob(s, ranks, t0, t0 + seconds(60)).stop, StopReason::kNone);
}

TEST(JobMonitor, ARefusalStopsAtOnce) {
  const auto t0 = ControlClock::time_point{} + seconds(1000);
  RankRecord refused;
  refused.rank = 1;
  refused.refusal = "the engine started 1 ranks but the plan has 2";
  EXPECT_EQ(WatchJob({2, 0, 0}, {{1, refused}}, t0, t0).stop, StopReason::kRefused);
}

TEST(JobMonitor, StallCountsFromTheLastHeartbeatAndSkipsEndedRanks) {
  const auto t0 = ControlClock::time_point{} + seconds(1000);
  std::map<int, RankRecord> ranks = {{0, Running(0, t0)}, {1, Running(1, t0)}, {2, Running(2, t0)}};
  ranks[0].last_beat = t0 + seconds(8);
  ranks[2].ended = true;  // finished early: never stalled
  const MonitorSettings s{3, 0, 5};
  auto v = WatchJob(s, ranks, t0, t0 + seconds(4));
  EXPECT_EQ(v.stop, StopReason::kNone);
  v = WatchJob(s, ranks, t0, t0 + seconds(6));
  EXPECT_EQ(v.stop, StopReason::kStall);
  EXPECT_EQ(v.stalled, (std::set<int>{1}));
  v = WatchJob(s, ranks, t0, t0 + seconds(13));
  EXPECT_EQ(v.stalled, (std::set<int>{0, 1}));
  EXPECT_EQ(WatchJob({3, 0, 0}, ranks, t0, t0 + seconds(1000)).stop, StopReason::kNone);  // not watched
}

}  // namespace
}  // namespace gpulaunch
