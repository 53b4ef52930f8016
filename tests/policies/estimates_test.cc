// What policies may know of run times (issue: policies that win without
// knowing the future): user time limits and their model, 2D-LAS and the
// size order with suspension, Slurm's multifactor order, limits that end
// runs, the `none` mode's blindness to durations, dataset caches, and the
// story --explain tells.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "policies/pool/data_cache.h"
#include "policies/pool/job_trace.h"
#include "policies/pool/runtime_estimates.h"
#include "policies/pool/scheduler.h"
#include "policies/pool/simulator.h"
#include "policies/pool/synthetic_trace.h"

#include "tests/policies/pool_testing.h"

namespace gpulaunch::pool {
namespace {

using namespace pool_testing;

std::vector<TraceJob> MediumTrace() {
  auto jobs = LoadTrace(std::string(GL_TEST_DATA) + "/traces/elasticflow-itp/cluster06.csv");
  EXPECT_TRUE(jobs.ok()) << jobs.status().message();
  return jobs.ok() ? *jobs : std::vector<TraceJob>{};
}

TEST(UserLimits, FollowTheModelAndAreTheSameForAJobWhateverTheRestOfTheTrace) {
  std::vector<TraceJob> jobs = MediumTrace();
  ASSERT_EQ(jobs.size(), 2396u);
  DrawUserLimits(jobs);
  int reached = 0, site_max = 0;
  for (const TraceJob& j : jobs) {
    ASSERT_GE(j.limit, j.duration) << "job " << j.id;  // the model never limits below what ran
    if (j.limit == j.duration) {
      ++reached;
    } else {
      EXPECT_EQ(j.limit, RoundUpToCommonLimit(j.limit)) << "job " << j.id << ": a limit users would type";
      EXPECT_LE(j.limit, std::max(7.0 * 86400, RoundUpToCommonLimit(j.duration))) << "job " << j.id;
      site_max += j.limit == std::max(7.0 * 86400, RoundUpToCommonLimit(j.duration)) ? 1 : 0;
    }
  }
  // 10% and 20% of 2,396 jobs, within sampling noise (about 3 standard deviations).
  EXPECT_NEAR(reached, 240, 45);
  EXPECT_GE(site_max, 479 - 60);
  // Over-estimates: the median limit is several times the median run time.
  std::vector<double> ratio;
  for (const TraceJob& j : jobs) ratio.push_back(j.limit / std::max(1.0, j.duration));
  std::nth_element(ratio.begin(), ratio.begin() + static_cast<long>(ratio.size() / 2), ratio.end());
  EXPECT_GT(ratio[ratio.size() / 2], 2.0);
  // The same job gets the same limit in a trace of itself alone, and a limit
  // the trace gives is kept.
  std::vector<TraceJob> one = {MediumTrace()[100]};
  DrawUserLimits(one);
  EXPECT_EQ(one[0].limit, jobs[100].limit);
  one[0].limit = 1234;
  DrawUserLimits(one);
  EXPECT_EQ(one[0].limit, 1234);
  EXPECT_EQ(RoundUpToCommonLimit(61 * 60), 2 * 3600);
  EXPECT_EQ(RoundUpToCommonLimit(8 * 86400), 14 * 86400);
  EXPECT_FALSE(ParseEstimateMode("oracle").ok());
}

TEST(Trace, ReadsALimitColumnAndAlibabaOpenbPods) {
  auto own = ParseTrace("id,submit,duration,gpus,limit\n0,0,600,4,3600\n1,5,60,1,\n", "own.csv");
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_EQ((*own)[0].limit, 3600);
  EXPECT_EQ((*own)[1].limit, 0);
  auto zero = ParseTrace("id,submit,duration,gpus,limit\n0,0,600,4,0\n", "zero.csv");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("zero.csv:2: time limit 0"), std::string::npos) << zero.status().message();
  const std::string header =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";
  auto pods = ParseTrace(header +
                             "p0,1000,0,1,460,,LS,Running,100,900,130\n"   // shared GPU: one whole
                             "p1,1000,0,0,0,,BE,Running,0,50,0\n"          // CPU only: out
                             "p2,1000,0,8,1000,,LS,Pending,10,20,\n"       // never scheduled: out
                             "p3,1000,0,8,1000,,BE,Succeeded,50,5050,60\n",
                         "openb.csv");
  ASSERT_TRUE(pods.ok()) << pods.status().message();
  ASSERT_EQ(pods->size(), 2u);
  EXPECT_EQ((*pods)[0].gpus, 8);  // sorted by creation time
  EXPECT_EQ((*pods)[0].submit, 50);
  EXPECT_EQ((*pods)[0].duration, 4990);
  EXPECT_EQ((*pods)[1].gpus, 1);
  EXPECT_EQ((*pods)[1].duration, 770);
  auto bad = ParseTrace(header + "p0,1000,0,1,1000,,LS,Running,100,90,130\n", "openb.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("openb.csv:2"), std::string::npos);
}

SchedulerConfig LasConfig() {
  SchedulerConfig c = Config();
  c.order = QueueOrder::kLeastAttained;
  c.service_levels_gpu_s = {1000, 10000};
  c.preempt = false;
  c.preempt_by_service = true;
  c.skip_blocked = true;
  return c;
}

TEST(Scheduler, LeastAttainedSuspendsTheMostServedJobAfterItsGraceAndSaysWhenLevelsChange) {
  Scheduler s(Pool("leaf:1 node:1 gpu:4"), LasConfig());
  s.Submit(PoolJob{1, 0, 4, 0, 0, 0});  // no estimate: LAS needs none
  ASSERT_EQ(s.Schedule(0)->size(), 1u);
  EXPECT_DOUBLE_EQ(s.NextServiceLevelChange(0), 250);  // 1000 GPU-s on 4 GPUs
  EXPECT_EQ(s.ServiceLevel(999), 0);
  EXPECT_EQ(s.ServiceLevel(1000), 1);
  EXPECT_EQ(s.ServiceLevel(1e9), 2);
  // A new job at level 0 while job 1 is still at level 0: no suspension.
  s.Submit(PoolJob{2, 0, 2, 0, 100, 0});
  EXPECT_TRUE(s.Schedule(100)->empty());
  // Job 1 passed 1000 GPU-s (level 1) and its grace: job 2 suspends it.
  auto d = s.Schedule(300);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].kind, Decision::Kind::kPreempt);
  EXPECT_EQ((*d)[0].job, 1);
  EXPECT_TRUE((*d)[0].checkpointed);
  EXPECT_EQ((*d)[1].job, 2);
  // It goes back with the service it had, and ranks behind fresh jobs.
  ASSERT_EQ(s.queue().size(), 1u);
  EXPECT_DOUBLE_EQ(s.queue()[0].attained_gpu_s, 1200);
  s.Submit(PoolJob{3, 0, 2, 0, 310, 0});
  EXPECT_GT(s.EffectivePriority(s.queue()[1], 310), s.EffectivePriority(s.queue()[0], 310));
  // Greedy: the 2 free GPUs go to job 3 though job 1 came first.
  d = s.Schedule(310);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ((*d)[0].job, 3);
}

TEST(Scheduler, TheSizeOrderSuspendsAJobTwiceAsBigAndSizesUnknownJobsByTheirService) {
  SchedulerConfig c = Config();
  c.order = QueueOrder::kPriorityAging;
  c.size_reference = 1e9;
  c.aging_s = 1e9;
  c.preempt = false;
  c.preempt_by_service = true;
  c.skip_blocked = true;
  c.uninformative_limit_s = 7 * 86400;
  Scheduler s(Pool("leaf:1 node:1 gpu:4"), c);
  s.Submit(PoolJob{1, 0, 4, 0, 0, 10000});
  ASSERT_EQ(s.Schedule(0)->size(), 1u);
  // 4 x 9,000 s left against 4 x 3,000: two levels lower, past its grace.
  s.Submit(PoolJob{2, 0, 4, 0, 1000, 3000});
  auto d = s.Schedule(1000);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].job, 1);
  EXPECT_TRUE((*d)[0].checkpointed);
  // Not for a job that is not a level smaller (4 x 2,500 against 4 x 3,000 left).
  s.Submit(PoolJob{3, 0, 4, 0, 1000, 2500});
  EXPECT_TRUE(s.Schedule(1000)->empty());
  // A limit at the site's maximum tells nothing: sized by service, at least an hour.
  PoolJob vague{4, 0, 4, 0, 0, 7 * 86400};
  vague.limit = 7 * 86400;
  PoolJob hour{5, 0, 4, 0, 0, 3600};
  EXPECT_EQ(s.EffectivePriority(vague, 0), s.EffectivePriority(hour, 0));
  vague.attained_gpu_s = 4 * 36000;  // ran 10 hours: sized as 20
  PoolJob twenty{6, 0, 4, 0, 0, 20 * 3600};
  EXPECT_EQ(s.EffectivePriority(vague, 36000), s.EffectivePriority(twenty, 0));
}

TEST(Scheduler, SlurmMultifactorRanksByAgeAndSizeWithTheDocumentedWeights) {
  SchedulerConfig c = Config();
  c.order = QueueOrder::kSlurmMultifactor;
  Scheduler s(Pool("leaf:1 node:4 gpu:8"), c);  // 32 GPUs
  const PoolJob old_small{1, 0, 1, 0, 0, 0}, new_big{2, 0, 32, 0, 6 * 86400, 0};
  const double week = 7 * 86400;
  EXPECT_NEAR(s.EffectivePriority(old_small, week), 1000 * 1.0 + 1000 * 1.0 / 32, 1e-9);
  EXPECT_NEAR(s.EffectivePriority(new_big, week), 1000 * (1.0 / 7) + 1000 * 1.0, 1e-9);
  EXPECT_NEAR(s.EffectivePriority(old_small, 2 * week), s.EffectivePriority(old_small, week), 1e-9);  // PriorityMaxAge
  EXPECT_STREQ(QueueOrderName(c.order), "slurm-multifactor");
}

// A run that reaches its limit ends there, counted; without user estimates
// limits are not enforced.
TEST(Simulator, UserLimitsEndRunsAtTheLimitAndCountThem) {
  auto jobs = ParseTrace("id,submit,duration,gpus,limit\n0,0,1000,4,400\n1,0,500,4,500\n2,0,300,4,3600\n", "l.csv");
  ASSERT_TRUE(jobs.ok());
  const SchedulerConfig config = *PolicyConfig("best-fit", QuotaBook());
  SimSetup setup;
  setup.estimates = EstimateMode::kUser;
  auto r = Simulate(Pool("leaf:1 node:3 gpu:4"), *jobs, config, "best-fit", setup);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->estimates, "user");
  EXPECT_EQ(r->reached_limit, 2);  // job 0 cut at 400 s, job 1 ends at its limit
  EXPECT_NEAR(r->gpu_hours_cut, 600.0 * 4 / 3600, 1e-9);
  EXPECT_TRUE(r->outcomes[0].reached_limit);
  EXPECT_DOUBLE_EQ(r->outcomes[0].end, 400);
  EXPECT_FALSE(r->outcomes[2].reached_limit);
  setup.estimates = EstimateMode::kPerfect;
  auto p = Simulate(Pool("leaf:1 node:3 gpu:4"), *jobs, config, "best-fit", setup);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->reached_limit, 0);
  EXPECT_DOUBLE_EQ(p->outcomes[0].end, 1000);
}

// A suspended job keeps what its limit has left, and a job without a limit
// never gets one.
TEST(Simulator, ASuspensionKeepsTheLimitItHadLeft) {
  // Job 0 has no limit, job 1 a limit of its run time; each is suspended by
  // a newcomer once past 1 GPU-hour (Tiresias) and resumed later.
  auto jobs = ParseTrace("id,submit,duration,gpus,limit\n0,0,5000,4,\n1,10,4000,4,4000\n2,1000,600,8,\n",
                         "s.csv");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  SimSetup setup;
  setup.estimates = EstimateMode::kUser;
  auto r = Simulate(Pool("leaf:1 node:1 gpu:8"), *jobs, *PolicyConfig("tiresias", QuotaBook()), "tiresias", setup);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GE(r->checkpointed_preemptions, 2);
  EXPECT_FALSE(r->outcomes[0].reached_limit);
  EXPECT_GE(r->outcomes[0].end - r->outcomes[0].start, 5000 + 600);  // all its work, after job 2
  EXPECT_TRUE(r->outcomes[1].reached_limit);  // its limit was its run time: it ends when done
  EXPECT_EQ(r->gpu_hours_cut, 0);
}

// With `none`, no decision can depend on a run time not yet over: two
// traces that differ only in one job's duration take the same decisions
// until that job ends in the shorter one. The same check with perfect
// estimates sees a difference (so the check can fail).
TEST(Simulator, WithNoEstimatesNoDecisionDependsOnAFutureDuration) {
  SyntheticSpec spec;
  spec.jobs = 300;
  spec.days = 2;
  spec.seed = 5;
  auto jobs = SyntheticTrace(spec, {});
  ASSERT_TRUE(jobs.ok());
  // The longest job among the first 50: it runs long past many decisions.
  auto longest = std::max_element(jobs->begin(), jobs->begin() + 50,
                                  [](const TraceJob& a, const TraceJob& b) { return a.duration < b.duration; });
  std::vector<TraceJob> changed = *jobs;
  changed[static_cast<size_t>(longest->id)].duration *= 3;
  auto differs_before = [&](EstimateMode mode, const std::string& policy) {
    SimSetup setup;
    setup.estimates = mode;
    const SchedulerConfig config = *PolicyConfig(policy, QuotaBook());
    auto a = Simulate(Pool("leaf:2 node:4 gpu:8"), *jobs, config, policy, setup);
    auto b = Simulate(Pool("leaf:2 node:4 gpu:8"), changed, config, policy, setup);
    EXPECT_TRUE(a.ok() && b.ok());
    const JobOutcome& mine = a->outcomes[static_cast<size_t>(longest->id)];
    const double known_from = mine.end;  // in the shorter trace it is over here
    int differ = 0;
    for (size_t i = 0; i < a->outcomes.size(); ++i) {
      const JobOutcome &x = a->outcomes[i], &y = b->outcomes[i];
      if (x.start >= 0 && x.start < known_from && x.start != y.start) ++differ;
    }
    return differ;
  };
  for (const char* policy : {"topology", "tiresias", "slurm-multifactor"})
    EXPECT_EQ(differs_before(EstimateMode::kNone, policy), 0) << policy;
  EXPECT_GT(differs_before(EstimateMode::kPerfect, "topology"), 0);
}

TEST(DataCache, KeepsTheMostRecentDatasetsWithinItsSizeAndCountsHitsPerHost) {
  DataCache c(2, 4, 100);
  EXPECT_TRUE(c.Use(0, 60, {0, 1}));   // both miss
  EXPECT_FALSE(c.Use(0, 60, {0}));     // hit
  EXPECT_TRUE(c.Use(1, 30, {0}));      // fits beside 0
  EXPECT_TRUE(c.Use(2, 50, {0}));      // evicts 0 (least recent), keeps 1
  EXPECT_EQ(c.holders()[0], std::vector<int>{1});
  EXPECT_EQ(c.holders()[1], std::vector<int>{0});
  EXPECT_EQ(c.holders()[2], std::vector<int>{0});
  EXPECT_TRUE(c.Use(3, 500, {1}));     // too big to keep: copied for the run only
  EXPECT_TRUE(c.holders()[3].empty());
  EXPECT_EQ(c.hits(), 1);
  EXPECT_EQ(c.misses(), 5);
  EXPECT_FALSE(c.Use(-1, 1, {0}));     // no dataset: nothing to copy
}

// The locality model over a whole run: preferring hosts that hold a job's
// dataset raises the hit rate and cuts the copying, without stranding GPUs;
// the same run without caches copies nothing.
TEST(Simulator, PreferringCachedDataRaisesTheHitRate) {
  SyntheticSpec spec;  // half the pool busy: hosts to choose from
  spec.jobs = 1000;
  spec.days = 14;
  spec.seed = 3;
  spec.datasets = 100;
  auto jobs = SyntheticTrace(spec, {});
  ASSERT_TRUE(jobs.ok());
  for (const TraceJob& j : *jobs) {
    ASSERT_GE(j.dataset, 0);
    ASSERT_GE(j.dataset_gb, kDatasetMinGb);
    ASSERT_LE(j.dataset_gb, kDatasetMaxGb);
  }
  SimSetup setup;
  setup.datasets = spec.datasets;
  setup.locality.cache_gb = 2000;
  const SchedulerConfig config = *PolicyConfig("topology", QuotaBook());
  auto with = Simulate(Pool("leaf:2 node:8 gpu:8"), *jobs, config, "topology", setup);
  setup.locality.prefer = false;
  auto without = Simulate(Pool("leaf:2 node:8 gpu:8"), *jobs, config, "topology", setup);
  setup.locality.cache_gb = 0;
  auto none = Simulate(Pool("leaf:2 node:8 gpu:8"), *jobs, config, "topology", setup);
  ASSERT_TRUE(with.ok() && without.ok() && none.ok());
  auto rate = [](const SimReport& r) {
    return static_cast<double>(r.cache_hits) / static_cast<double>(r.cache_hits + r.cache_misses);
  };
  EXPECT_GT(rate(*with), rate(*without) + 0.05) << rate(*with) << " against " << rate(*without);
  EXPECT_LT(with->staging_hours, without->staging_hours);
  EXPECT_EQ(none->staging_hours, 0);
  EXPECT_EQ(none->cache_hits + none->cache_misses, 0);
  EXPECT_LE(with->stranded_gpus, without->stranded_gpus + 0.05);
  EXPECT_EQ(with->rules.total(), 0);
  EXPECT_EQ(without->rules.total(), 0);
}

TEST(Simulator, ExplainTellsWhyAJobWaitedAndWhereItWent) {
  // One 8-GPU host; job 1 (8 GPUs) waits behind job 0 until it ends.
  auto jobs = ParseTrace("id,submit,duration,gpus\n0,0,1000,4\n1,10,500,8\n", "e.csv");
  ASSERT_TRUE(jobs.ok());
  SimSetup setup;
  setup.explain_job = 1;
  auto r = Simulate(Pool("leaf:1 node:1 gpu:8"), *jobs, *PolicyConfig("best-fit", QuotaBook()), "best-fit", setup);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->explain.size(), 3u);
  EXPECT_NE(r->explain[0].find("waits at position 1 of 1"), std::string::npos) << r->explain[0];
  EXPECT_NE(r->explain[0].find("placement: needs 8 GPUs on one host; 4 free"), std::string::npos) << r->explain[0];
  EXPECT_NE(r->explain[1].find("started on s0n0 (took 8 of 8 free); leaf 0 had 8 GPUs free"), std::string::npos) << r->explain[1];
  EXPECT_NE(r->explain[1].find("submit +0.28 h"), std::string::npos) << r->explain[1];  // waited 990 s
  EXPECT_NE(r->explain[1].find("no other host could take it"), std::string::npos) << r->explain[1];
  EXPECT_NE(r->explain[2].find("finished"), std::string::npos) << r->explain[2];
}

}  // namespace
}  // namespace gpulaunch::pool
