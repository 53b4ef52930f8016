#include "launcher/sim/replay_export.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

SacctJob Job(const std::string& id, double submit, double start, double end, int gpus, const std::string& account,
             int line) {
  SacctJob j;
  j.id = id;
  j.submit = submit;
  j.start = start;
  j.end = end;
  j.last_run_s = end - start;
  j.gpus = gpus;
  j.limit_s = 120;
  j.account = account;
  j.line = line;
  return j;
}

TEST(RecordedFromExport, JobsInSubmitOrderOnTheClockOfTheFirstSubmissionWithTheirAccountsTeams) {
  auto quotas = pool::QuotaBook::Parse("ra:8/8/8,rb:8/8/8");
  ASSERT_TRUE(quotas.ok()) << quotas.status().ToString();
  SacctJob requeued = Job("12", 1005, 1140, 1150, 2, "ra", 3);
  requeued.runs = 2;
  const std::vector<SacctJob> jobs = {requeued, Job("10", 1000, 1001, 1011, 8, "rb", 2),
                                      Job("13", 1007, -1, -1, 4, "ra", 4),  // cancelled while pending
                                      Job("14", 1008, 1009, 1010, 0, "ra", 5)};  // no GPUs
  auto r = RecordedFromExport(jobs, *quotas, "run.sacct");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->t0, 1000);
  EXPECT_EQ(r->skipped, 2);
  ASSERT_EQ(r->trace.size(), 2u);
  EXPECT_EQ(r->trace[0].team, 1);  // rb, the second team of --quota
  EXPECT_EQ(r->trace[0].submit, 0);
  EXPECT_EQ(r->trace[0].gpus, 8);
  EXPECT_EQ(r->trace[1].team, 0);
  EXPECT_EQ(r->trace[1].submit, 5);
  EXPECT_EQ(r->trace[1].duration, 10);  // its last run
  EXPECT_EQ(r->trace[1].limit, 120);
  ASSERT_EQ(r->observed.size(), 2u);
  EXPECT_EQ(r->observed[1].name, "12");
  EXPECT_EQ(r->observed[1].start, 140);
  EXPECT_EQ(r->observed[1].end, 150);
  EXPECT_TRUE(r->observed[1].requeued);
  EXPECT_FALSE(r->observed[0].requeued);
}

// The passes' phase comes from the run's first kill; with GraceTime 0, or no
// kill recorded, a delay.
TEST(ReclaimOfRun, GraceTimePassesInThePhaseOfTheFirstKill) {
  SacctJob victim = Job("11", 1000, 1001, 1200, 8, "", 2);
  victim.cpus = 2;
  victim.preempted_ends = {1069, 1039};
  auto r = RecordedFromExport({victim, Job("10", 1002, 1003, 1013, 1, "", 3)}, pool::QuotaBook(), "run.sacct");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->trace[0].cpus, 2);
  ASSERT_EQ(r->kills.size(), 2u);
  EXPECT_DOUBLE_EQ(r->kills[0], 39);  // on the run's clock, earliest first
  std::string from;
  const pool::ReclaimTiming passes = ReclaimOfRun(*r, 10, 0, 25, &from);
  EXPECT_TRUE(passes.passes());
  EXPECT_DOUBLE_EQ(passes.pass_at_s, 39);
  EXPECT_DOUBLE_EQ(passes.KilledAt(50), 69);
  EXPECT_EQ(from, "the run's first kill");
  const pool::ReclaimTiming at_once = ReclaimOfRun(*r, 0, 2, 25);
  EXPECT_FALSE(at_once.passes());
  EXPECT_DOUBLE_EQ(at_once.FreedAt(50), 52);
  RecordedJobs no_kills = *r;
  no_kills.kills.clear();
  const pool::ReclaimTiming mean = ReclaimOfRun(no_kills, 10, 0, 25, &from);
  EXPECT_FALSE(mean.passes());
  EXPECT_DOUBLE_EQ(mean.FreedAt(50), 75);
  EXPECT_EQ(from, "no kill recorded: the mean wait");
}

TEST(RecordedFromExport, AnAccountThatIsNoTeamNamesItsLine) {
  auto quotas = pool::QuotaBook::Parse("ra:8/8/8,rb:8/8/8");
  ASSERT_TRUE(quotas.ok());
  auto r = RecordedFromExport({Job("10", 0, 1, 2, 1, "ra", 2), Job("11", 0, 1, 2, 1, "other", 3)}, *quotas, "x.sacct");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "x.sacct:3: job 11's account 'other' is no team of --quota");
  auto none = RecordedFromExport({Job("10", 0, 1, 2, 1, "", 2)}, *quotas, "y.sacct");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("y.sacct:2: job 10's account '' is no team of --quota (the export needs an "
                                         "Account column: sacct -P"),
            std::string::npos)
      << none.status().message();
}

TEST(RecordedFromExport, WithoutQuotasAccountsAreNotRead) {
  auto r = RecordedFromExport({Job("10", 0, 1, 2, 1, "anyone", 2)}, pool::QuotaBook(), "z.sacct");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->trace.at(0).team, 0);
}

// Two runs of one trace match job for job; another trace, or jobs that
// differ in GPUs or submission, are refused naming both files and lines.
TEST(SameJobs, TwoRunsOfOneTraceMatchAndAnotherTraceIsNamed) {
  const pool::QuotaBook none;
  auto first = RecordedFromExport({Job("10", 100, 101, 111, 8, "a1", 2), Job("11", 107, 111, 130, 2, "a1", 3)}, none,
                                  "one.sacct");
  auto second = RecordedFromExport({Job("52", 500, 501, 511, 8, "b7", 2), Job("53", 508, 540, 560, 2, "b7", 3)}, none,
                                   "two.sacct");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_TRUE(SameJobs(*first, "one.sacct", *second, "two.sacct").ok());  // each on its own clock; 1 s apart
  auto shifted = RecordedFromExport({Job("52", 500, 501, 511, 8, "b7", 2), Job("53", 520, 540, 560, 2, "b7", 4)}, none,
                                    "late.sacct");
  ASSERT_TRUE(shifted.ok());
  const Status late = SameJobs(*first, "one.sacct", *shifted, "late.sacct");
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.message(), "late.sacct:4: not the jobs of one.sacct:3 (job 1 in submit order: 2 GPUs submitted at 7 s "
                            "there, 2 GPUs at 20 s here): compare two runs of the same trace (sim --replay --trace T "
                            "--save FILE, twice)");
  auto wider = RecordedFromExport({Job("52", 500, 501, 511, 4, "b7", 2), Job("53", 508, 540, 560, 2, "b7", 3)}, none,
                                  "wide.sacct");
  ASSERT_TRUE(wider.ok());
  EXPECT_NE(SameJobs(*first, "one.sacct", *wider, "wide.sacct").message().find("wide.sacct:2: not the jobs of one.sacct:2"),
            std::string::npos);
  auto fewer = RecordedFromExport({Job("52", 500, 501, 511, 8, "b7", 2)}, none, "few.sacct");
  ASSERT_TRUE(fewer.ok());
  EXPECT_NE(SameJobs(*first, "one.sacct", *fewer, "few.sacct").message().find("few.sacct holds 1 jobs that ran on "
                                                                               "GPUs, one.sacct 2"),
            std::string::npos);
}

}  // namespace
}  // namespace gpulaunch
