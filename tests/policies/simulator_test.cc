// Traces (Tiresias, ElasticFlow and gpulaunch's own form), the synthetic
// trace generator, and the simulator over whole runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "policies/pool/job_trace.h"
#include "policies/pool/simulator.h"
#include "policies/pool/synthetic_trace.h"

#include "tests/policies/pool_testing.h"

namespace gpulaunch::pool {
namespace {

using namespace pool_testing;

TEST(Trace, ReadsTiresiasElasticFlowAndItsOwnFormWithFileLineErrors) {
  auto t = ParseTrace("job_id,num_gpu,submit_time,iterations,model_name,duration,interval\r\n"
                      "0,2,10,100,vgg16,125,5\r\n1,8,0,100,resnet50,300,5", "60_job.csv");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].gpus, 8);  // sorted by submit time, ids renumbered
  EXPECT_EQ((*t)[0].id, 0);
  EXPECT_DOUBLE_EQ((*t)[1].duration, 125);
  auto e = ParseTrace("job_id,submission_time,duration,num_gpu\nx,16566,4321,8\n", "cluster06.csv");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)[0].gpus, 8);
  auto own = ParseTrace("id,submit,duration,gpus,team,priority\n0,0,60,4,2,1\n", "own.csv");
  ASSERT_TRUE(own.ok());
  EXPECT_EQ((*own)[0].team, 2);
  EXPECT_EQ((*own)[0].priority, 1);
  auto bad = ParseTrace("id,submit,duration,gpus\n0,0,60,4\n1,0,x,4\n", "bad.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.csv:3: duration 'x'"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(ParseTrace("a,b,c\n1,2,3\n", "x.csv").ok());
  EXPECT_FALSE(ParseTrace("id,submit,duration,gpus\n0,0,60,0\n", "x.csv").ok());
}

TEST(Simulator, SmallTraceIsDeterministicAndEveryJobRunsItsDuration) {
  auto jobs = LoadTrace(std::string(GL_TEST_DATA) + "/traces/tiresias/60_job.csv");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 60u);
  for (const char* name : {"topology", "fifo-first-fit", "best-fit"}) {
    auto config = PolicyConfig(name, QuotaBook());
    ASSERT_TRUE(config.ok());
    auto a = Simulate(Pool("leaf:2 node:2 gpu:4"), *jobs, *config, name);
    auto b = Simulate(Pool("leaf:2 node:2 gpu:4"), *jobs, *config, name);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->jobs, 60);
    EXPECT_DOUBLE_EQ(a->avg_jct_s, b->avg_jct_s) << name;
    EXPECT_DOUBLE_EQ(a->stranded_gpus, b->stranded_gpus) << name;
    for (const JobOutcome& o : a->outcomes) {
      const TraceJob& j = (*jobs)[static_cast<size_t>(o.id)];
      EXPECT_GE(o.start, j.submit);
      // No preemption without quotas; a migration costs its checkpoint and restart.
      EXPECT_DOUBLE_EQ(o.end - o.start, j.duration + o.migrations * config->migration_cost_s) << name << " job " << o.id;
      EXPECT_GE(o.hosts, o.min_hosts);
    }
    EXPECT_GT(a->utilization, 0.1);
    EXPECT_LE(a->utilization, 1.0);
  }
  EXPECT_FALSE(PolicyConfig("round-robin", QuotaBook()).ok());
}

// With teams and quotas jobs are preempted; every GPU-second the pool was
// busy is either a job's own work or work lost (redone, or spent moving and
// restarting), and with checkpoints a preemption loses at most the work
// since the last one plus the restart.

TEST(Simulator, PreemptedWorkIsAccountedAndCheckpointsBoundTheLoss) {
  auto jobs = LoadTrace(std::string(GL_TEST_DATA) + "/traces/tiresias/60_job.csv");
  ASSERT_TRUE(jobs.ok());
  AssignTeams(*jobs, 2);
  auto config = PolicyConfig("topology", *QuotaBook::Parse("a:4/8/8,b:4/8/8"));
  ASSERT_TRUE(config.ok());
  config->grace_s = 30;
  config->migration_cost_s = 5;
  double own = 0;
  for (const TraceJob& j : *jobs) own += j.duration * j.gpus;
  for (double checkpoint : {0.0, 20.0}) {
    SimSetup setup;
    setup.checkpoint_interval_s = checkpoint;
    auto r = Simulate(Pool("leaf:2 node:2 gpu:4"), *jobs, *config, "topology", setup);
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_GT(r->preemptions, 0) << "the quotas make teams reclaim";
    EXPECT_EQ(r->guarantee_violations, 0);
    const double busy = r->utilization * 16 * r->makespan_s;
    EXPECT_NEAR(busy, own + r->gpu_hours_lost * 3600, busy * 1e-9) << "checkpoint " << checkpoint;
    if (checkpoint == 0) continue;
    for (const JobOutcome& o : r->outcomes) {
      const double bound = (o.preemptions * (checkpoint + config->migration_cost_s) +
                            o.migrations * config->migration_cost_s) * o.gpus;
      EXPECT_LE(o.gpu_seconds_lost, bound + 1e-6) << "job " << o.id;
    }
  }
}

// A reclaim as Slurm does it: the owner's job waits --reclaim-delay for the
// borrowed job to die (GraceTime + slurmctld's pass), and the GPU time in
// between is counted as lost.
// A 4-GPU trace job of `team`.
TraceJob FourGpuJob(int id, double submit, double duration, int team) {
  TraceJob j;
  j.id = id, j.submit = submit, j.duration = duration, j.gpus = 4, j.team = team;
  return j;
}

TEST(Simulator, AReclaimWaitsTheReclaimDelayForItsVictimsGpus) {
  const std::vector<TraceJob> jobs = {FourGpuJob(0, 0, 1000, 0),    // team a, within its nominal 4
                                      FourGpuJob(1, 0, 1000, 0),    // team a, borrowed
                                      FourGpuJob(2, 100, 100, 1)};  // team b, within its nominal: reclaims
  auto config = PolicyConfig("fifo-first-fit", *QuotaBook::Parse("a:4/4/4,b:4/4/0"));
  ASSERT_TRUE(config.ok());
  config->preempt = true;  // FIFO with quota reclaim, as the Slurm side
  config->grace_s = 0;
  for (double delay : {0.0, 25.0}) {
    SimSetup setup;
    setup.estimates = EstimateMode::kPerfect;
    config->reclaim.delay_s = delay;
    auto r = Simulate(Pool("leaf:1 node:2 gpu:4"), jobs, *config, "fifo-first-fit", setup);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->preemptions, 1);
    const JobOutcome& owner = r->outcomes[2];
    EXPECT_DOUBLE_EQ(owner.start, 100 + delay);
    EXPECT_DOUBLE_EQ(owner.end, 200 + delay);
    EXPECT_DOUBLE_EQ(owner.gpu_seconds_lost, delay * 4);
    EXPECT_DOUBLE_EQ(r->outcomes[0].end, 1000);  // within nominal: never reclaimed
  }
  // A scheduler's start latency: every job runs that much after its start
  // decision, its GPUs held meanwhile (so the borrowed job is still reclaimed).
  config->reclaim.delay_s = 0;
  SimSetup slow;
  slow.estimates = EstimateMode::kPerfect;
  slow.start_latency_s = 2;
  auto r = Simulate(Pool("leaf:1 node:2 gpu:4"), jobs, *config, "fifo-first-fit", slow);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->outcomes[0].start, 2);
  EXPECT_DOUBLE_EQ(r->outcomes[0].end, 1002);
  EXPECT_DOUBLE_EQ(r->outcomes[2].start, 102);
  EXPECT_DOUBLE_EQ(r->outcomes[2].gpu_seconds_lost, 2 * 4);
}

// Slurm holds a requeued job for the credential's lifetime (cred_expire):
// it may not start again before, and blocks no later job meanwhile.
TEST(Simulator, ARequeuedJobWaitsItsHoldAndBlocksNoOne) {
  const std::vector<TraceJob> jobs = {FourGpuJob(0, 0, 1000, 0),   // team a, within its nominal 4
                                      FourGpuJob(1, 0, 1000, 0),   // team a, borrowed: reclaimed at 100
                                      FourGpuJob(2, 100, 20, 1),   // team b, within its nominal
                                      FourGpuJob(3, 150, 10, 0)};  // team a again, after the reclaim
  auto config = PolicyConfig("fifo-first-fit", *QuotaBook::Parse("a:4/4/4,b:4/4/0"));
  ASSERT_TRUE(config.ok());
  config->preempt = true;
  config->grace_s = 0;
  SimSetup setup;
  setup.estimates = EstimateMode::kPerfect;
  config->requeue_hold_s = 0;
  auto at_once = Simulate(Pool("leaf:1 node:2 gpu:4"), jobs, *config, "fifo-first-fit", setup);
  ASSERT_TRUE(at_once.ok()) << at_once.status().message();
  EXPECT_EQ(at_once->preemptions, 1);
  EXPECT_DOUBLE_EQ(at_once->outcomes[1].end, 120 + 1000);  // again when job 2 ends
  EXPECT_DOUBLE_EQ(at_once->outcomes[3].start, 1000);      // behind it
  config->requeue_hold_s = 120;
  auto held = Simulate(Pool("leaf:1 node:2 gpu:4"), jobs, *config, "fifo-first-fit", setup);
  ASSERT_TRUE(held.ok()) << held.status().message();
  EXPECT_EQ(held->preemptions, 1);
  EXPECT_DOUBLE_EQ(held->outcomes[3].start, 150);          // the held job blocks no one
  EXPECT_DOUBLE_EQ(held->outcomes[1].end, 220 + 1000);     // again at 100 + 120
}

// Slurm with a GraceTime: the victim dies at slurmctld's time-limit pass,
// the first at least GraceTime after the preemption, so the owner's wait
// depends on the passes' phase; the victim's requeue hold runs from the kill.
TEST(Simulator, WithAGraceTimeAVictimDiesAtTheNextTimeLimitPass) {
  const std::vector<TraceJob> jobs = {FourGpuJob(0, 0, 1000, 0),   // team a, within its nominal 4
                                      FourGpuJob(1, 0, 1000, 0),   // team a, borrowed: reclaimed at 100
                                      FourGpuJob(2, 100, 20, 1)};  // team b, within its nominal
  auto config = PolicyConfig("fifo-first-fit", *QuotaBook::Parse("a:4/4/4,b:4/4/0"));
  ASSERT_TRUE(config.ok());
  config->preempt = true;
  config->grace_s = 0;
  config->requeue_hold_s = 120;
  config->reclaim.grace_time_s = 10;
  config->reclaim.pass_period_s = kSlurmKillPassSeconds;
  SimSetup setup;
  setup.estimates = EstimateMode::kPerfect;
  // (pass phase, the kill): the first pass at or after 100 + 10.
  for (const auto& [phase, kill] : {std::pair{0.0, 120.0}, std::pair{5.0, 125.0}, std::pair{20.0, 110.0},
                                    std::pair{-19.0, 131.0}}) {
    config->reclaim.pass_at_s = phase;
    auto r = Simulate(Pool("leaf:1 node:2 gpu:4"), jobs, *config, "fifo-first-fit", setup);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->preemptions, 1) << "phase " << phase;
    EXPECT_DOUBLE_EQ(r->outcomes[2].start, kill) << "phase " << phase;
    EXPECT_DOUBLE_EQ(r->outcomes[2].gpu_seconds_lost, (kill - 100) * 4) << "phase " << phase;
    // Held from the kill: it starts again 120 s after it, where job 2's GPUs are free.
    EXPECT_DOUBLE_EQ(r->outcomes[1].end, kill + 120 + 1000) << "phase " << phase;
  }
  // The GPUs come free delay_s after the kill.
  config->reclaim.pass_at_s = 0;
  config->reclaim.delay_s = 2;
  auto r = Simulate(Pool("leaf:1 node:2 gpu:4"), jobs, *config, "fifo-first-fit", setup);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->outcomes[2].start, 122);
}

// A burst of owner jobs that each need a victim, with a GraceTime: Slurm
// picks the first one's victims at once and the others' only once it has
// started, so they die a pass later (measured: docs/slurm.md).
TEST(Simulator, WithAGraceTimeABurstOfReclaimsTakesTwoRounds) {
  std::vector<TraceJob> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(FourGpuJob(i, 0, 1000, 0));          // team a: 4 within nominal, 12 borrowed
  for (int i = 4; i < 7; ++i) jobs.push_back(FourGpuJob(i, 100 + i, 50, 1));      // team b, within its nominal 12
  auto config = PolicyConfig("fifo-first-fit", *QuotaBook::Parse("a:4/4/12,b:12/12/0"));
  ASSERT_TRUE(config.ok());
  config->preempt = true;
  config->slurm_tiers = true;
  config->grace_s = 0;
  config->reclaim = ReclaimTiming{0, 10, kSlurmKillPassSeconds, 3};  // passes at 3, 33, ... 123, 153
  SimSetup setup;
  setup.estimates = EstimateMode::kPerfect;
  for (bool one_at_a_time : {true, false}) {
    config->reclaim.one_at_a_time = one_at_a_time;
    auto r = Simulate(Pool("leaf:2 node:2 gpu:4"), jobs, *config, "fifo-first-fit", setup);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->preemptions, 3);
    EXPECT_DOUBLE_EQ(r->outcomes[4].start, 123);
    // The others pick their victims at 123, who die at the first pass from 133.
    for (int i : {5, 6}) EXPECT_DOUBLE_EQ(r->outcomes[i].start, one_at_a_time ? 153 : 123) << "job " << i;
  }
}

// A victim whose own work ends before its kill is not preempted: it ends
// then (Slurm records it COMPLETED or, in a race, TIMEOUT, not requeued), and
// its preemptor starts then. The GPUs it held beyond the preemptor's stay
// its own until then.
TEST(Simulator, AVictimThatEndsBeforeItsKillIsNotRequeued) {
  std::vector<TraceJob> jobs = {FourGpuJob(0, 0, 1000, 0),   // team a, within its nominal 4
                                FourGpuJob(1, 0, 105, 0)};   // team a, borrowed: its work ends at 105
  TraceJob one = FourGpuJob(2, 100, 50, 1);                  // team b, 1 GPU: reclaims at 100
  one.gpus = 1;
  jobs.push_back(one);
  jobs.push_back(FourGpuJob(3, 101, 10, 1));                 // team b, 4 GPUs: no room until 105... or 120
  jobs[3].gpus = 3;
  auto config = PolicyConfig("fifo-first-fit", *QuotaBook::Parse("a:4/4/4,b:4/4/0"));
  ASSERT_TRUE(config.ok());
  config->preempt = true;
  config->slurm_tiers = true;
  config->grace_s = 0;
  config->requeue_hold_s = 120;
  config->reclaim = ReclaimTiming{0, 10, kSlurmKillPassSeconds, 0};  // the kill at 120
  SimSetup setup;
  setup.estimates = EstimateMode::kPerfect;
  auto r = Simulate(Pool("leaf:1 node:2 gpu:4"), jobs, *config, "fifo-first-fit", setup);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->preemptions, 0);
  EXPECT_EQ(r->outcomes[1].preemptions, 0);
  EXPECT_DOUBLE_EQ(r->outcomes[1].end, 105);   // its own end, not 120 + 120 + 105
  EXPECT_DOUBLE_EQ(r->outcomes[2].start, 105);
  // The 3 GPUs job 2 did not take stayed job 1's until it ended.
  EXPECT_DOUBLE_EQ(r->outcomes[3].start, 105);
  // Killed at 120 instead, the victim is requeued and held from the kill.
  jobs[1].duration = 200;
  r = Simulate(Pool("leaf:1 node:2 gpu:4"), jobs, *config, "fifo-first-fit", setup);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->preemptions, 1);
  EXPECT_DOUBLE_EQ(r->outcomes[2].start, 120);
  EXPECT_DOUBLE_EQ(r->outcomes[3].start, 120);
  EXPECT_DOUBLE_EQ(r->outcomes[1].end, 120 + 120 + 200);
}

TEST(ReclaimTiming, KillsAtTheFirstPassAtLeastTheGraceTimeLater) {
  ReclaimTiming at_once;
  EXPECT_DOUBLE_EQ(at_once.KilledAt(7), 7);
  at_once.delay_s = 2;
  EXPECT_DOUBLE_EQ(at_once.FreedAt(7), 9);
  ReclaimTiming passes{0, 10, 30, 3};  // passes at 3, 33, 63, ...
  EXPECT_DOUBLE_EQ(passes.KilledAt(0), 33);
  EXPECT_DOUBLE_EQ(passes.KilledAt(23), 33);      // exactly GraceTime before a pass: that pass
  EXPECT_DOUBLE_EQ(passes.KilledAt(23.5), 63);
  EXPECT_DOUBLE_EQ(passes.KilledAt(-100), -87);   // passes before the given one too
  EXPECT_DOUBLE_EQ(passes.FreedAt(0), 33);
}

// Backfill on a timer, as Slurm's (bf_interval): a job that may jump the
// blocked head starts at the next tick, not at its arrival.
TEST(Simulator, BackfillOnATimerWaitsForTheNextTick) {
  auto job = [](int id, double submit, double duration, int gpus) {
    TraceJob j;
    j.id = id, j.submit = submit, j.duration = duration, j.gpus = gpus;
    return j;
  };
  const std::vector<TraceJob> jobs = {job(0, 0, 100, 4),   // runs
                                      job(1, 1, 10, 8),    // blocked head: starts at 100
                                      job(2, 2, 50, 4)};   // ends before 100: may backfill
  for (double every : {0.0, 30.0}) {
    auto config = PolicyConfig("best-fit", QuotaBook());
    ASSERT_TRUE(config.ok());
    config->backfill_interval_s = every;
    SimSetup setup;
    setup.estimates = EstimateMode::kPerfect;
    auto r = Simulate(Pool("leaf:1 node:2 gpu:4"), jobs, *config, "best-fit", setup);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_DOUBLE_EQ(r->outcomes[2].start, every == 0 ? 2 : 30) << "interval " << every;
    EXPECT_DOUBLE_EQ(r->outcomes[1].start, 100);
  }
  // The timer runs from the last cycle before the trace (sdiag's): 25 s
  // before the first submission, the next cycle falls at 5.
  auto config = PolicyConfig("best-fit", QuotaBook());
  ASSERT_TRUE(config.ok());
  config->backfill_interval_s = 30;
  config->backfill_last_pass_s = -25;
  SimSetup setup;
  setup.estimates = EstimateMode::kPerfect;
  auto r = Simulate(Pool("leaf:1 node:2 gpu:4"), jobs, *config, "best-fit", setup);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->outcomes[2].start, 5);
}

TEST(SyntheticTrace, IsDeterministicAndHasUsersTeamsClassesAndTemplates) {
  auto spec = ParseSyntheticSpec("jobs:2000 days:10 seed:5 teams:3 users:12 high:0.25 templated:0.3");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  auto templates = ParseTemplates("big:gpus=16,mem=80,affinity=leaf;one:gpus=1,link=200");
  ASSERT_TRUE(templates.ok());
  auto a = SyntheticTrace(*spec, *templates);
  auto b = SyntheticTrace(*spec, *templates);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().message();
  ASSERT_EQ(a->size(), 2000u);
  int high = 0, templated = 0;
  for (size_t i = 0; i < a->size(); ++i) {
    const TraceJob& j = (*a)[i];
    EXPECT_EQ(j.submit, (*b)[i].submit);
    EXPECT_EQ(j.gpus, (*b)[i].gpus);
    ASSERT_GE(j.user, 0);
    ASSERT_LT(j.user, 12);
    EXPECT_EQ(j.team, j.user % 3);
    EXPECT_GE(j.duration, 300);
    EXPECT_LE(j.duration, 86400);
    if (i > 0) {
      EXPECT_GE(j.submit, (*a)[i - 1].submit);
    }
    high += j.priority;
    if (j.template_name == "big") {
      ++templated;
      EXPECT_EQ(j.gpus, 16);
      EXPECT_TRUE(j.one_leaf);
      EXPECT_EQ(j.min_gpu_memory_gib, 80);
    } else if (j.template_name == "one") {
      ++templated;
      EXPECT_EQ(j.min_link_gbps, 200);
    }
  }
  EXPECT_NEAR(high / 2000.0, 0.25, 0.04);
  EXPECT_NEAR(templated / 2000.0, 0.3, 0.04);
  EXPECT_LT(a->back().submit, 10 * 86400.0 * 1.2);
  spec->seed = 6;
  EXPECT_NE(SyntheticTrace(*spec, *templates)->front().submit, a->front().submit);
  EXPECT_FALSE(ParseSyntheticSpec("jobs:0").ok());
  EXPECT_FALSE(ParseSyntheticSpec("high:1.5").ok());
  EXPECT_FALSE(SyntheticTrace(*ParseSyntheticSpec("templated:0.1"), {}).ok());
}

TEST(Trace, UsersAndTemplatesFromItsOwnFormWithFileLineErrors) {
  auto t = ParseTrace("id,submit,duration,gpus,team,priority,user,template\n0,0,60,16,1,0,4,big\n1,5,60,2,0,1,4,\n",
                      "own.csv");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ((*t)[0].user, 4);
  EXPECT_EQ((*t)[0].template_name, "big");
  EXPECT_TRUE((*t)[1].template_name.empty());
  auto templates = ParseTemplates("big:gpus=16,mem=80,affinity=spread:2");
  ASSERT_TRUE(ApplyTemplates(*t, *templates, "own.csv").ok());
  EXPECT_EQ((*t)[0].min_leaves, 2);
  EXPECT_EQ((*t)[0].min_gpu_memory_gib, 80);
  auto wrong = ParseTrace("id,submit,duration,gpus,template\n0,0,60,8,big\n", "own.csv");
  ASSERT_TRUE(wrong.ok());
  Status s = ApplyTemplates(*wrong, *templates, "own.csv");
  EXPECT_NE(s.message().find("own.csv:2: the job asks for 8 GPUs but template 'big' is 16 GPUs"), std::string::npos)
      << s.message();
  auto unknown = ParseTrace("id,submit,duration,gpus,template\n0,0,60,8,small\n", "own.csv");
  s = ApplyTemplates(*unknown, *templates, "own.csv");
  EXPECT_NE(s.message().find("own.csv:2: template 'small' is not defined (defined: big)"), std::string::npos)
      << s.message();
  EXPECT_FALSE(ParseTrace("id,submit,duration,gpus,user\n0,0,60,8,1.5\n", "own.csv").ok());
}

// Host failures in the simulation: a host that stops heartbeating loses its
// jobs (requeued, keeping their checkpointed work), gets nothing new while
// suspect or bad, and comes back; every job still finishes, and the busy
// GPU time is still exactly the work plus the work lost.

TEST(Simulator, AFailingHostsJobsAreRequeuedAndNothingIsPlacedThereWhileItIsDown) {
  auto spec = ParseSyntheticSpec("jobs:300 days:2 seed:4");
  auto jobs = SyntheticTrace(*spec, {});
  ASSERT_TRUE(jobs.ok());
  double own = 0;
  for (const TraceJob& j : *jobs) own += j.duration * j.gpus;
  SimSetup setup;
  setup.checkpoint_interval_s = 600;
  setup.failures = {SimFailure{1, 6 * 3600, 30 * 3600}, SimFailure{4, 12 * 3600, 60 * 3600}};
  for (const char* name : {"topology", "fifo-first-fit", "best-fit"}) {
    auto config = PolicyConfig(name, QuotaBook());
    auto r = Simulate(Pool("leaf:2 node:4 gpu:8"), *jobs, *config, name, setup);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().message();
    EXPECT_GT(r->jobs_lost_to_failures, 0) << name;
    EXPECT_EQ(r->rules.unhealthy_placements, 0) << name;
    EXPECT_EQ(r->rules.total(), 0) << name;
    const double busy = r->utilization * 64 * r->makespan_s;
    EXPECT_NEAR(busy, own + r->gpu_hours_lost * 3600, busy * 1e-9) << name;
    int lost = 0;
    for (const JobOutcome& o : r->outcomes) {
      EXPECT_GE(o.end, o.start) << name << " job " << o.id;
      lost += o.lost_to_failures;
    }
    EXPECT_EQ(lost, r->jobs_lost_to_failures);
    EXPECT_EQ(r->never_started, 0) << name;
  }
  // A host gone for good: the 64-GPU jobs can never fit again, and say so.
  setup.failures = {SimFailure{4, 12 * 3600, -1}};
  auto gone = Simulate(Pool("leaf:2 node:4 gpu:8"), *jobs, *PolicyConfig("topology", QuotaBook()), "t", setup);
  ASSERT_TRUE(gone.ok()) << gone.status().message();
  int big_after = 0;
  for (const TraceJob& j : *jobs) big_after += j.gpus == 64 && j.submit > 12 * 3600 ? 1 : 0;
  EXPECT_GE(gone->never_started, big_after);
  EXPECT_GT(big_after, 0);
  setup.failures = {SimFailure{99, 0, -1}};
  EXPECT_FALSE(Simulate(Pool("leaf:2 node:4 gpu:8"), *jobs, *PolicyConfig("topology", QuotaBook()), "t", setup).ok());
}

// Templates and reservations in the simulation itself: jobs that need
// 80 GiB GPUs run only on the hosts that have them, and no other team's job
// is placed on the reserved hosts in the window.

TEST(Simulator, TemplatesAndReservationsHoldOverAWholeRun) {
  auto spec = ParseSyntheticSpec("jobs:400 days:3 seed:9 teams:2 users:6 high:0.2 templated:0.4");
  auto templates = ParseTemplates("fat:gpus=4,mem=80;pair:gpus=16,affinity=spread:2");
  auto jobs = SyntheticTrace(*spec, *templates);
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  GpuPool pool = Pool("leaf:2 node:3 gpu:8 mem:40 + leaf:1 node:3 gpu:8 mem:80");
  SimSetup setup;
  setup.reservations.push_back(SimReservation{"r", 1, 2, 86400, 2 * 86400});
  for (const char* name : {"topology", "fifo-first-fit", "best-fit"}) {
    auto config = PolicyConfig(name, QuotaBook());
    auto r = Simulate(pool, *jobs, *config, name, setup);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().message();
    EXPECT_EQ(r->rules.total(), 0) << name;
    EXPECT_EQ(r->jobs, 400);
  }
}

}  // namespace
}  // namespace gpulaunch::pool
