#include "slurm/sacct_export.h"

#include <gtest/gtest.h>

#include "slurm/policy_slurm_side.h"
#include "slurm/scheduler_timing.h"

namespace gpulaunch {
namespace {

TEST(SacctExport, ReadsJobsMergesRequeuedRunsAndSkipsSteps) {
  auto jobs = ParseSacctExport(
      "State|JobIDRaw|Submit|Start|End|AllocTRES|Timelimit\n"
      "COMPLETED|10|2026-12-05T11:00:00|2026-12-05T11:00:01|2026-12-05T11:00:13|cpu=1,gres/gpu=4,node=1|00:01:00\n"
      "COMPLETED|10.batch|2026-12-05T11:00:00|2026-12-05T11:00:01|2026-12-05T11:00:13|cpu=1|\n"
      "PREEMPTED|11|2026-12-05T11:00:02|2026-12-05T11:00:02|2026-12-05T11:00:20|gres/gpu=8,node=2|1-00:00:00\n"
      "COMPLETED|11|2026-12-05T11:00:02|2026-12-05T11:02:30|2026-12-05T11:03:00|gres/gpu=8,node=2|1-00:00:00\n"
      "CANCELLED|12|2026-12-05T11:00:03|None|2026-12-05T11:00:04||UNLIMITED\n",
      "x.sacct");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 3u);
  const SacctJob& a = (*jobs)[0];
  EXPECT_EQ(a.id, "10");
  EXPECT_EQ(a.gpus, 4);
  EXPECT_DOUBLE_EQ(a.start - a.submit, 1);
  EXPECT_DOUBLE_EQ(a.last_run_s, 12);
  EXPECT_DOUBLE_EQ(a.limit_s, 60);
  const SacctJob& b = (*jobs)[1];  // requeued: first start, last end, last run's length
  EXPECT_EQ(b.runs, 2);
  EXPECT_DOUBLE_EQ(b.start - b.submit, 0);
  EXPECT_DOUBLE_EQ(b.end - b.submit, 178);
  EXPECT_DOUBLE_EQ(b.last_run_s, 30);
  EXPECT_DOUBLE_EQ(b.limit_s, 86400);
  EXPECT_EQ(b.state, "COMPLETED");
  // The preempted run's End is its kill (a time-limit pass, with a GraceTime).
  ASSERT_EQ(b.preempted_ends.size(), 1u);
  EXPECT_DOUBLE_EQ(b.preempted_ends[0] - b.submit, 18);
  EXPECT_TRUE(a.preempted_ends.empty());
  EXPECT_EQ(a.cpus, 1);
  EXPECT_EQ(b.cpus, 0);  // no cpu= in its TRES
  EXPECT_DOUBLE_EQ((*jobs)[2].start, -1);  // never started
  EXPECT_DOUBLE_EQ((*jobs)[2].limit_s, 0);
  EXPECT_EQ(a.account, "");  // no Account column
  auto with_accounts = ParseSacctExport(
      "JobIDRaw|Submit|Start|End|AllocTRES|Account\n"
      "20|2026-12-05T11:00:00|2026-12-05T11:00:01|2026-12-05T11:00:13|gres/gpu=4|ml\n",
      "y.sacct");
  ASSERT_TRUE(with_accounts.ok()) << with_accounts.status().message();
  EXPECT_EQ((*with_accounts)[0].account, "ml");
  EXPECT_FALSE((*with_accounts)[0].backfilled);  // no Flags column
}

// Flags says which scheduler started a run; a requeued job is backfilled
// when its first run was.
TEST(SacctExport, FlagsSayWhetherSlurmsBackfillStartedTheFirstRun) {
  auto jobs = ParseSacctExport(
      "JobIDRaw|Submit|Start|End|AllocTRES|Flags\n"
      "30|2026-12-05T11:00:00|2026-12-05T11:00:01|2026-12-05T11:00:13|gres/gpu=4|SchedMain,StartRecieved\n"
      "31|2026-12-05T11:00:00|2026-12-05T11:00:30|2026-12-05T11:00:40|gres/gpu=2|SchedBackfill,StartRecieved\n"
      "31|2026-12-05T11:00:40|2026-12-05T11:02:45|2026-12-05T11:03:00|gres/gpu=2|SchedMain,StartRecieved\n"
      "32|2026-12-05T11:00:00|2026-12-05T11:00:31|2026-12-05T11:00:40|gres/gpu=2|SchedMain\n"
      "32|2026-12-05T11:00:40|2026-12-05T11:03:01|2026-12-05T11:03:10|gres/gpu=2|SchedBackfill\n",
      "f.sacct");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_FALSE((*jobs)[0].backfilled);
  EXPECT_TRUE((*jobs)[1].backfilled);
  EXPECT_FALSE((*jobs)[2].backfilled);
}

TEST(SacctExport, BadExportsSayWhereAndHowToMakeOne) {
  EXPECT_EQ(ParseSacctExport("10 COMPLETED\n", "a.txt").status().message(),
            "a.txt:1: not a sacct -P export with a header line; make one with: sacct -P -X -D -o "
            "JobIDRaw,Submit,Start,End,State,AllocTRES,Timelimit,Account,Flags");
  EXPECT_NE(ParseSacctExport("JobIDRaw|Submit|Start|End\n", "b.txt").status().message().find(
                "b.txt:1: the export has no AllocTRES column"),
            std::string::npos);
  EXPECT_EQ(ParseSacctExport("JobIDRaw|Submit|Start|End|AllocTRES\n1|2026-12-05T11:00:00|x|y\n", "c.txt")
                .status()
                .message(),
            "c.txt:2: 4 fields, the header has 5");
  EXPECT_EQ(ParseSacctExport("JobIDRaw|Submit|Start|End|AllocTRES\n1|yesterday|None|None|\n", "d.txt")
                .status()
                .message(),
            "d.txt:2: time 'yesterday' is not YYYY-MM-DDTHH:MM:SS");
  EXPECT_EQ(ParseSacctExport("JobIDRaw|Submit|Start|End|AllocTRES\n|2026-12-05T11:00:00|None|None|\n", "e.txt")
                .status()
                .message(),
            "e.txt:2: a job without a JobIDRaw");
}

// What sim --replay reads of a running cluster: bf_interval, cred_expire
// and gl-borrowed's GraceTime, with Slurm's defaults where unset.
TEST(SchedulerTiming, ReadFromTheRunningConfigWithSlurmsDefaults) {
  auto site = ParseRunningSlurmConfig(
      "Configuration data as of 2026-12-05T13:00:00\n"
      "AuthInfo                = socket=/run/munge.sock,cred_expire=45\n"
      "SchedulerParameters     = bf_continue,bf_interval=10,default_queue_depth=50\n",
      "PartitionName=gl-ml AllowAccounts=ml PriorityTier=1 PreemptMode=OFF\n"
      "PartitionName=gl-borrowed AllowAccounts=ml,cv PriorityTier=0 PreemptMode=REQUEUE GraceTime=20\n");
  ASSERT_TRUE(site.ok()) << site.status().message();
  const SlurmSchedulerTiming t = SchedulerTimingOf(*site);
  EXPECT_DOUBLE_EQ(t.backfill_interval_s, 10);
  EXPECT_DOUBLE_EQ(t.requeue_hold_s, 45);
  EXPECT_DOUBLE_EQ(t.reclaim_delay_s, SlurmMeanReclaimDelayForGraceTime(20));
  auto plain = ParseRunningSlurmConfig("AuthInfo = socket=/run/munge.sock\nSchedulerParameters = (null)\n",
                                       "PartitionName=debug Default=YES\n");
  ASSERT_TRUE(plain.ok());
  const SlurmSchedulerTiming d = SchedulerTimingOf(*plain);
  EXPECT_DOUBLE_EQ(d.backfill_interval_s, 30);
  EXPECT_DOUBLE_EQ(d.requeue_hold_s, 120);
  EXPECT_DOUBLE_EQ(d.reclaim_delay_s, -1);  // no borrowed tier
  EXPECT_DOUBLE_EQ(t.grace_time_s, 20);
  EXPECT_DOUBLE_EQ(t.tier_cpu_billing, 0);  // gl-ml bills GPUs alone
  EXPECT_DOUBLE_EQ(d.grace_time_s, -1);
  auto billed = ParseRunningSlurmConfig(
      "AuthInfo = socket=/run/munge.sock\n",
      "PartitionName=gl-ml AllowAccounts=ml PriorityTier=1 TRESBillingWeights=CPU=2,GRES/gpu=1\n"
      "PartitionName=gl-cv AllowAccounts=cv PriorityTier=1 TRESBillingWeights=cpu=0.5,GRES/gpu=1\n"
      "PartitionName=gl-borrowed PriorityTier=0 PreemptMode=REQUEUE TRESBillingWeights=CPU=9\n"
      "PartitionName=debug TRESBillingWeights=CPU=7\n");
  ASSERT_TRUE(billed.ok()) << billed.status().message();
  EXPECT_DOUBLE_EQ(SchedulerTimingOf(*billed).tier_cpu_billing, 2);  // the teams' tiers only, the largest
  EXPECT_DOUBLE_EQ(SchedulerTimingOf(*billed).grace_time_s, 0);      // no GraceTime: 0
  EXPECT_EQ(OptionValue("a=1,bf_interval=x", "bf_interval"), -1);
  EXPECT_EQ(OptionValue("BF_INTERVAL=7", "bf_interval"), 7);
}

}  // namespace
}  // namespace gpulaunch
