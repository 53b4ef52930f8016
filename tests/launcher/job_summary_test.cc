#include "launcher/job/job_summary.h"

#include <signal.h>

#include <gtest/gtest.h>

#include "common/json.h"

namespace gpulaunch {
namespace {

using std::chrono::milliseconds;

struct Fixture {
  JobOutcome job;
  std::map<int, RankRecord> ranks;
  ControlClock::time_point t0 = ControlClock::time_point{} + std::chrono::seconds(100);

  explicit Fixture(int world) {
    job.started = t0;
    job.ended = t0 + milliseconds(5000);
    for (int r = 0; r < world; ++r) {
      job.planned_hosts.push_back(r < world / 2 ? "node1" : "node2");
      RankRecord rec;
      rec.rank = r;
      rec.pid = 1000 + r;
      rec.host = job.planned_hosts.back();
      rec.checked_in = t0 + milliseconds(10);
      ranks[r] = rec;
    }
  }
  void End(int rank, int ms, bool signaled, int value) {
    ranks[rank].ended = true;
    ranks[rank].ended_at = t0 + milliseconds(ms);
    ranks[rank].signaled = signaled;
    ranks[rank].exit_value = value;
  }
};

TEST(JobSummary, NoRootCauseForASuccess) {
  Fixture f(2);
  f.End(0, 100, false, 0);
  f.End(1, 100, false, 0);
  EXPECT_FALSE(FindRootCause(f.job, f.ranks));
}

// Every rank an MPI singleton is the cause, named with the engine, whatever
// the ranks' codes; one singleton among ranks that joined is not.
TEST(JobSummary, EveryRankAnMpiSingletonIsTheCause) {
  Fixture f(3);
  f.job.engine = "hydra";
  for (int r = 0; r < 3; ++r) {
    f.End(r, 100 + r, false, 0);
    f.ranks[r].mpi_singleton = r != 1;
  }
  EXPECT_FALSE(EveryRankAnMpiSingleton(f.job, f.ranks));
  EXPECT_FALSE(FindRootCause(f.job, f.ranks));
  f.ranks[1].mpi_singleton = true;
  EXPECT_TRUE(EveryRankAnMpiSingleton(f.job, f.ranks));
  auto cause = FindRootCause(f.job, f.ranks);
  ASSERT_TRUE(cause);
  EXPECT_NE(cause->headline.find("the 3 ranks ran as 3 MPI singletons"), std::string::npos) << cause->headline;
  ASSERT_FALSE(cause->notes.empty());
  EXPECT_NE(cause->notes[0].find("hydra does not start"), std::string::npos) << cause->notes[0];
  Fixture one(1);
  one.ranks[0].mpi_singleton = true;
  EXPECT_FALSE(EveryRankAnMpiSingleton(one.job, one.ranks)) << "a world of 1 is one process, not a mismatch";
}

TEST(JobSummary, TheFirstFailureIsBlamedNotTheTeardown) {
  Fixture f(4);
  f.End(0, 900, true, SIGTERM);
  f.End(1, 910, true, SIGKILL);
  f.End(2, 500, true, SIGKILL);  // killed first: the cause
  f.End(3, 950, false, 0);
  f.ranks[2].stderr_tail = {"about to die"};
  f.job.exit_code = 137;
  auto cause = FindRootCause(f.job, f.ranks);
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->rank, 2);
  EXPECT_NE(cause->headline.find("rank 2 on node2 (pid 1002) was killed by SIGKILL"), std::string::npos)
      << cause->headline;
  ASSERT_EQ(cause->notes.size(), 1u);
  EXPECT_EQ(cause->notes[0], "of the other ranks, 1 ended normally, 2 were stopped (SIGTERM/SIGKILL) in the teardown");
  const std::string block = RenderRootCause(*cause, "/tmp/s.json");
  EXPECT_NE(block.find("gpulaunch: |  about to die\n"), std::string::npos) << block;
  EXPECT_NE(block.find("gpulaunch: every rank: /tmp/s.json\n"), std::string::npos);
}

// The failure seen in CI: gpulaunch read the teardown's victim (rank 0, on
// the healthy node1, SIGTERM passed on by its shim) before the rank whose
// death started the teardown, because both reports waited on their sockets
// when it woke. The victim's shim said it had told it to stop.
TEST(JobSummary, ARankToldToStopIsNotBlamedWhenAnotherFailedOnItsOwn) {
  Fixture f(2);
  f.End(0, 400, true, SIGTERM);
  f.ranks[0].told_to_stop = true;
  f.End(1, 400, true, SIGKILL);  // heard at the same instant, after rank 0
  f.job.exit_code = 137;
  auto cause = FindRootCause(f.job, f.ranks);
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->rank, 1);
  EXPECT_EQ(cause->notes.at(0), "of the other ranks, 1 was stopped (SIGTERM/SIGKILL) in the teardown");
  // Heard even well before: an exit code that followed a stop signal is
  // still the stop's doing (a rank that exits 1 from its SIGTERM handler).
  f.End(0, 100, false, 1);
  cause = FindRootCause(f.job, f.ranks);
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->rank, 1);
  auto json = ParseJson(SummaryJson(f.job, f.ranks, cause), "summary");
  ASSERT_TRUE(json.ok());
  EXPECT_TRUE(json->Find("ranks")->items()[0].Find("told_to_stop")->AsBool());
  EXPECT_EQ(json->Find("ranks")->items()[1].Find("told_to_stop"), nullptr);
}

TEST(JobSummary, WhenEveryFailedRankWasToldToStopTheFirstIsBlamed) {
  Fixture f(3);
  f.End(0, 300, true, SIGTERM);
  f.End(1, 200, true, SIGTERM);
  f.End(2, 250, false, 0);
  f.ranks[0].told_to_stop = f.ranks[1].told_to_stop = true;
  f.job.exit_code = 143;
  const auto cause = FindRootCause(f.job, f.ranks);
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->rank, 1);
}

// What an engine's 0 cannot hide: ranks that failed, ended after a stop
// signal (even with code 0), or vanished. Refused ranks, ranks never heard of
// and ranks whose report had not arrived are not counted.
TEST(JobSummary, RanksCutShortAreThoseThatDidNotEndOnTheirOwnWithZero) {
  Fixture f(7);
  f.End(0, 100, false, 0);  // fine
  f.End(1, 100, false, 3);  // failed
  f.End(2, 100, true, SIGTERM);
  f.End(3, 100, false, 0);
  f.ranks[3].told_to_stop = true;  // a SIGTERM handler that exits 0
  f.ranks[4].lost = true;
  f.ranks[5].refusal = "wrong host";
  f.ranks.erase(6);  // never reached gpulaunch
  EXPECT_EQ(RanksCutShort(f.ranks), (std::vector<int>{1, 2, 3, 4}));
  f.ranks.erase(4);
  f.ranks[6].rank = 6;  // checked in; its report not read yet
  f.ranks[6].pid = 1006;
  EXPECT_EQ(RanksCutShort(f.ranks), (std::vector<int>{1, 2, 3}));
}

// Open MPI 4.1's mpirun, taking its job for over early, stopped the ranks of
// node1 that still ran and exited 0 (seen on the netns rig: 8 ranks killed
// by SIGTERM, summary and exit code 0). With no rank failed on its own the
// cause names the engine and the stopped ranks, and blames no rank.
TEST(JobSummary, AnEngineThatExitedZeroWhileItStoppedRanksIsTheCause) {
  Fixture f(4);
  f.job.engine = "mpirun";
  f.End(0, 6000, true, SIGTERM);
  f.End(1, 6000, true, SIGTERM);
  f.ranks[0].told_to_stop = f.ranks[1].told_to_stop = true;
  f.End(2, 200, false, 0);
  f.End(3, 200, false, 0);
  f.job.engine_exited_zero = true;
  f.job.exit_code = 125;
  auto cause = FindRootCause(f.job, f.ranks);
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->rank, -1);
  EXPECT_EQ(cause->headline,
            "mpirun exited 0, but 2 of 4 ranks did not end on their own: they were stopped while they ran, or "
            "vanished (0, 1 on node1); the job did not complete");
  // A rank that failed on its own is still the cause, as for any engine code.
  f.End(2, 150, false, 7);
  cause = FindRootCause(f.job, f.ranks);
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->rank, 2);
  EXPECT_NE(cause->headline.find("exited with code 7"), std::string::npos) << cause->headline;
}

TEST(JobSummary, RanksLostAfterTheFirstFailureWereStoppedNotLost) {
  Fixture f(3);
  f.End(0, 100, false, 4);  // the cause
  f.ranks[1].lost = true;   // its shim was killed in the teardown
  f.ranks[1].ended_at = f.t0 + milliseconds(900);
  f.End(2, 950, true, SIGTERM);
  f.job.exit_code = 4;
  const auto cause = FindRootCause(f.job, f.ranks);
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->rank, 0);
  EXPECT_EQ(cause->notes.at(0), "of the other ranks, 2 were stopped (SIGTERM/SIGKILL) in the teardown");
  auto json = ParseJson(SummaryJson(f.job, f.ranks, cause), "summary");
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(json->Find("ranks")->items()[1].Find("state")->AsString(), "stopped-unreported");
}

TEST(JobSummary, ALostRankIsACause) {
  Fixture f(2);
  f.ranks[1].lost = true;
  f.ranks[1].ended_at = f.t0 + milliseconds(300);
  f.End(0, 800, true, SIGTERM);
  f.job.exit_code = 143;
  auto cause = FindRootCause(f.job, f.ranks);
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->rank, 1);
  EXPECT_NE(cause->headline.find("vanished without a report"), std::string::npos);
}

TEST(JobSummary, StopsByGpulaunchAreNamed) {
  Fixture f(4);
  f.job.exit_code = 125;
  f.job.stop = StopReason::kStartupTimeout;
  f.job.limit_s = 30;
  f.ranks.erase(3);
  f.ranks.erase(1);
  auto cause = FindRootCause(f.job, f.ranks);
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->headline, "2 of 4 ranks did not check in within --startup-timeout 30 s: 1 on node1; 3 on node2");

  // With cached topologies the ranks that reached gpulaunch were held for
  // those that never did: only the latter are named.
  Fixture held(4);
  held.job.exit_code = 125;
  held.job.stop = StopReason::kStartupTimeout;
  held.job.limit_s = 10;
  held.ranks.clear();
  held.job.held = {0, 1, 2};
  cause = FindRootCause(held.job, held.ranks);
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->headline, "1 of 4 ranks did not check in within --startup-timeout 10 s: 3 on node2");
  EXPECT_NE(RenderRootCause(*cause, "").find("the other 3 ranks reached gpulaunch and waited for them"),
            std::string::npos);

  Fixture g(2);
  g.job.exit_code = 124;
  g.job.stop = StopReason::kStall;
  g.job.limit_s = 5;
  g.job.stalled = {1};
  g.ranks[1].stacks = "#0 StallHere\n#1 main\n";
  cause = FindRootCause(g.job, g.ranks);
  ASSERT_TRUE(cause);
  EXPECT_EQ(cause->rank, 1);
  EXPECT_NE(cause->headline.find("made no progress for 5 s"), std::string::npos);
  EXPECT_NE(RenderRootCause(*cause, "").find("gpulaunch: |  #0 StallHere\n"), std::string::npos);

  Fixture h(2);
  h.ranks[0].refusal = "the engine started 1 ranks (OMPI_COMM_WORLD_SIZE) but the plan has 2";
  h.job.exit_code = 125;
  cause = FindRootCause(h.job, h.ranks);
  ASSERT_TRUE(cause);
  EXPECT_NE(cause->headline.find("refused to start: the engine started 1 ranks"), std::string::npos);
}

TEST(JobSummary, JsonHasEveryPlannedRank) {
  Fixture f(3);
  f.End(0, 100, false, 0);
  f.End(1, 200, true, SIGSEGV);
  f.ranks.erase(2);
  f.job.exit_code = 139;
  f.job.started_wall = std::chrono::system_clock::time_point{} + std::chrono::seconds(1'700'000'000);
  const auto cause = FindRootCause(f.job, f.ranks);
  auto json = ParseJson(SummaryJson(f.job, f.ranks, cause), "summary");
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ(json->Find("format")->AsString(), "gpulaunch-summary/v1");
  EXPECT_EQ(json->Find("started_at")->AsString(), "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(json->Find("root_cause")->Find("rank")->AsNumber(), 1);
  const auto& ranks = json->Find("ranks")->items();
  ASSERT_EQ(ranks.size(), 3u);
  EXPECT_EQ(ranks[0].Find("state")->AsString(), "exited");
  EXPECT_EQ(ranks[0].Find("exit_code")->AsNumber(), 0);
  EXPECT_EQ(ranks[1].Find("signal")->AsString(), "SIGSEGV");
  EXPECT_EQ(ranks[1].Find("ended_at")->AsString(), "2023-11-14T22:13:20.200Z");
  EXPECT_EQ(ranks[2].Find("state")->AsString(), "never-started");
  EXPECT_EQ(ranks[2].Find("host")->AsString(), "node2");
}

}  // namespace
}  // namespace gpulaunch
