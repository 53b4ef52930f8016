#include "policies/pool/replay_compare.h"

#include <gtest/gtest.h>

#include <map>

namespace gpulaunch::pool {
namespace {

JobOutcome Sim(int id, double submit, double start, double end, int preemptions = 0) {
  JobOutcome o;
  o.id = id, o.submit = submit, o.start = start, o.end = end, o.preemptions = preemptions;
  return o;
}

TEST(ReplayCompare, StartDifferencesJctErrorAndTheWorstJobsWithReasons) {
  const std::vector<ObservedRun> observed = {
      {0, "100", 0, 1, 11, false},    // sim: at once, 1 s early
      {1, "101", 1, 30, 40, false},   // waited for job 0's GPUs; sim started it at 11
      {2, "102", 2, 5, 15, false},    // started before job 1 (submitted earlier): backfilled
      {3, "103", 3, 20, 60, true},    // requeued
      {4, "104", 4, -1, -1, false}};  // never started: not compared
  const std::vector<JobOutcome> simulated = {Sim(0, 0, 0, 10), Sim(1, 1, 11, 21), Sim(2, 2, 12, 22),
                                             Sim(3, 3, 20, 60, 1), Sim(4, 4, 50, 60)};
  const ReplayComparison c = CompareReplay(observed, simulated, 30, 3);
  EXPECT_EQ(c.jobs, 5);
  EXPECT_EQ(c.compared, 4);
  EXPECT_DOUBLE_EQ(c.mean_abs_start_diff, (1 + 19 + 7 + 0) / 4.0);
  EXPECT_DOUBLE_EQ(c.max_abs_start_diff, 19);
  EXPECT_EQ(c.within_1s, 2);
  EXPECT_EQ(c.within_3s, 2);
  EXPECT_DOUBLE_EQ(c.avg_jct_observed, (11 + 39 + 13 + 57) / 4.0);
  EXPECT_DOUBLE_EQ(c.avg_jct_simulated, (10 + 20 + 20 + 57) / 4.0);
  EXPECT_NEAR(c.jct_error, 107.0 / 120 - 1, 1e-12);
  ASSERT_EQ(c.worst.size(), 3u);
  EXPECT_EQ(c.worst[0].id, 1);
  EXPECT_DOUBLE_EQ(c.worst[0].start_diff, -19);
  EXPECT_EQ(c.worst[1].id, 2);
  EXPECT_EQ(c.worst[1].reason, "backfilled");  // Slurm started it earlier than the sim did
  EXPECT_EQ(c.worst[2].id, 0);
  const ReplayComparison all = CompareReplay(observed, simulated, 30, 10);
  EXPECT_EQ(all.worst.back().reason,  // started before job 1, submitted earlier
            "backfilled; preempted in both: the reclaim delay, and a requeued job starts again later");
  const std::string text = ReplayComparisonText(c);
  EXPECT_NE(text.find("start difference: mean |d| 6.8 s, max 19.0 s; within 1 s: 2, within 3 s: 2 of 4\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  job 1 (101): observed 30.0 s, simulated 11.0 s, -19.0 s\n"), std::string::npos) << text;
  // Jobs 1 and 2 are more than 3 s apart; job 2 started first (at 5 s on the
  // real run): that is where the runs part.
  ASSERT_TRUE(c.first_apart.has_value());
  EXPECT_EQ(c.first_apart->id, 2);
  EXPECT_NE(text.find("the runs part at job 2 (102): observed 5.0 s, simulated 12.0 s, +7.0 s; backfilled\n"),
            std::string::npos)
      << text;
  EXPECT_FALSE(CompareReplay({{0, "a", 0, 1, 2, false}}, {Sim(0, 0, 3, 4)}, 30).first_apart);  // 2 s: together
}

TEST(ReplayCompare, ALaterBackfillIsNamedWithTheInterval) {
  // Job 1 was submitted after job 0 and started before it, later than the
  // simulator started it: the real backfill pass came later.
  const std::vector<ObservedRun> observed = {{0, "a", 0, 40, 50, false}, {1, "b", 1, 25, 30, false}};
  const std::vector<JobOutcome> simulated = {Sim(0, 0, 40, 50), Sim(1, 1, 2, 7)};
  const ReplayComparison c = CompareReplay(observed, simulated, 30);
  ASSERT_FALSE(c.worst.empty());
  EXPECT_EQ(c.worst[0].reason, "backfilled: the real backfill pass runs every 30 s");
}

// The reasons say which run preempted a job, and a start the real
// scheduler's backfill made (sacct's Flags) is named as such even in order.
TEST(ReplayCompare, ReasonsNameWhoPreemptedAndTheRecordedBackfill) {
  const std::vector<ObservedRun> observed = {{0, "a", 0, 0, 10, true},
                                             {1, "b", 1, 5, 20, false},
                                             {2, "c", 2, 40, 50, false, true},
                                             {3, "d", 3, 41, 50, false, true}};
  const std::vector<JobOutcome> simulated = {Sim(0, 0, 0, 10), Sim(1, 1, 2, 20, 1), Sim(2, 2, 10, 20),
                                             Sim(3, 3, 41, 50)};
  const ReplayComparison c = CompareReplay(observed, simulated, 30, 4);
  std::map<int, std::string> reason;
  for (const ReplayJobDiff& d : c.worst) reason[d.id] = d.reason;
  EXPECT_EQ(reason[0], "preempted by the real scheduler only: a requeued job starts again later");
  EXPECT_EQ(reason[1], "preempted in the simulation only (a start before a reclaim that the real run did not make)");
  EXPECT_EQ(reason[2], "started by the real scheduler's backfill: the real backfill pass runs every 30 s");
  EXPECT_EQ(reason[3], "started by the real scheduler's backfill");
}

// Two real runs of the same jobs: the second in the simulation's place,
// labelled as a run, named by both runs' job ids, and the reasons say which
// run's backfill started a job and which run preempted it.
TEST(ReplayCompare, TwoRunsSayWhichRunBackfilledOrPreempted) {
  const std::vector<ObservedRun> first = {{0, "10", 0, 1, 11, false},
                                          {1, "11", 1, 12, 30, true},
                                          {2, "12", 2, 40, 50, false, true},
                                          {3, "13", 3, 20, 25, false}};
  const std::vector<ObservedRun> second = {{0, "70", 0, 1, 11, false},
                                           {1, "71", 1, 2, 20, false, true},
                                           {2, "72", 2, 40, 50, false},
                                           {3, "73", 3, 35, 41, true, true}};
  const ReplayComparison c = CompareRuns(first, second, 4);
  EXPECT_EQ(c.compared, 4);
  EXPECT_DOUBLE_EQ(c.mean_abs_start_diff, (0 + 10 + 0 + 15) / 4.0);
  EXPECT_EQ(c.within_1s, 2);
  EXPECT_DOUBLE_EQ(c.avg_jct_observed, (11 + 29 + 48 + 22) / 4.0);
  EXPECT_DOUBLE_EQ(c.avg_jct_simulated, (11 + 19 + 48 + 38) / 4.0);
  std::map<int, std::string> reason;
  for (const ReplayJobDiff& d : c.worst) reason[d.id] = d.reason;
  EXPECT_EQ(reason[1], "started by the backfill in the second run only; preempted in the first run only: a requeued "
                       "job starts again later");
  EXPECT_EQ(reason[2], "started by the backfill in the first run only");
  EXPECT_EQ(reason[3], "started by the backfill in the second run only; preempted in the second run only: a requeued "
                       "job starts again later");
  const std::string text = ReplayComparisonText(c);
  EXPECT_NE(text.find("average JCT: first run 27.5 s, second run 29.0 s (+5.5 %)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("jobs that differ most (second run - first run start):\n  job 3 (13/73): first run 20.0 s, "
                      "second run 35.0 s, +15.0 s;"),
            std::string::npos)
      << text;
  ASSERT_TRUE(c.first_apart.has_value());
  EXPECT_EQ(c.first_apart->id, 1);  // apart from 2 s on (the second run's backfill)
  EXPECT_EQ(CompareRuns(first, first).mean_abs_start_diff, 0);
}

}  // namespace
}  // namespace gpulaunch::pool
