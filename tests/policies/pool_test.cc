// The multi-tenant pool: GPU bookkeeping, gang placement styles, quotas,
// the scheduler (backfill, aging, reclaim), traces and the simulator.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <random>

#include "policies/pool/gang_placement.h"
#include "policies/pool/job_trace.h"
#include "policies/pool/quota.h"
#include "policies/pool/resource_template.h"
#include "policies/pool/scheduler.h"
#include "policies/pool/rule_audit.h"
#include "policies/pool/simulator.h"
#include "policies/pool/synthetic_trace.h"

namespace gpulaunch::pool {
namespace {

GpuPool Pool(const std::string& spec) {
  auto p = GpuPool::FromSpec(spec);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

Allocation On(int host, uint64_t mask) { return Allocation{{HostShare{host, mask}}}; }

TEST(GpuPool, NeverHoldsAGpuTwice) {
  GpuPool p = Pool("leaf:2 node:2 gpu:4");
  EXPECT_EQ(p.total_gpus(), 16);
  EXPECT_EQ(p.leaves(), 2);
  ASSERT_TRUE(p.Take(On(1, 0b0011)).ok());
  EXPECT_EQ(p.free_on(1), 2);
  EXPECT_EQ(p.free_gpus(), 14);
  const Status twice = p.Take(On(1, 0b0110));
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.message().find("a GPU would be assigned twice"), std::string::npos);
  EXPECT_EQ(p.free_gpus(), 14);  // nothing changed
  EXPECT_FALSE(p.Give(On(1, 0b0100)).ok());
  EXPECT_FALSE(p.Take(On(1, 0b10000)).ok());  // GPU 4 of a 4-GPU host
  ASSERT_TRUE(p.Give(On(1, 0b0011)).ok());
  EXPECT_EQ(p.free_gpus(), 16);
  for (const char* bad : {"node:0", "leaf:2", "leaf:x node:2", "rack:2 node:2", "node:2 gpu:65"}) {
    EXPECT_FALSE(GpuPool::FromSpec(bad).ok()) << bad;
  }
}

TEST(GangPlacement, StylesChooseTheirHosts) {
  GpuPool p = Pool("leaf:2 node:2 gpu:4");  // hosts 0,1 under leaf 0; 2,3 under leaf 1
  ASSERT_TRUE(p.Take(On(0, 0b0001)).ok());  // host 0: 3 free
  ASSERT_TRUE(p.Take(On(2, 0b0011)).ok());  // host 2: 2 free
  // 2 GPUs: first fit takes host 0; best fit and topology the fullest, host 2.
  EXPECT_EQ(PlaceGang(p, 2, PlacementStyle::kFirstFit)->shares[0].host, 0);
  EXPECT_EQ(PlaceGang(p, 2, PlacementStyle::kBestFit)->shares[0].host, 2);
  EXPECT_EQ(PlaceGang(p, 2, PlacementStyle::kTopology)->shares[0].host, 2);
  // 8 GPUs need two whole hosts: only hosts 1 and 3 are whole.
  auto eight = PlaceGang(p, 8, PlacementStyle::kTopology);
  ASSERT_TRUE(eight);
  EXPECT_EQ(eight->hosts(), 2);
  EXPECT_EQ(eight->gpus(), 8);
  EXPECT_EQ(LeavesOf(p, *eight), 2);
  EXPECT_FALSE(PlaceGang(p, 12, PlacementStyle::kTopology));  // 13 free, but only 2 whole hosts
  // Hard: avoided hosts are never used; preferred ones only among those that fit.
  GangConstraints c;
  c.avoid = {false, false, true, false};
  EXPECT_EQ(PlaceGang(p, 2, PlacementStyle::kTopology, c)->shares[0].host, 0);
  c.avoid.clear();
  c.preferred = {false, false, false, true};
  EXPECT_EQ(PlaceGang(p, 2, PlacementStyle::kTopology, c)->shares[0].host, 3);
  c.preferred = {false, false, true, false};
  EXPECT_EQ(PlaceGang(p, 3, PlacementStyle::kTopology, c)->shares[0].host, 0);  // host 2 cannot take 3
}

TEST(GangPlacement, TopologyKeepsAMultiHostJobUnderOneLeaf) {
  GpuPool p = Pool("leaf:2 node:4 gpu:8");
  ASSERT_TRUE(p.Take(On(0, 0xff)).ok());  // leaf 0: 3 whole hosts left; leaf 1: 4
  ASSERT_TRUE(p.Take(On(5, 0x01)).ok());  // leaf 1: 3 whole hosts left
  // 16 GPUs: first fit takes hosts 1 and 2 (leaf 0); topology the leaf with
  // the least room that fits; best fit ignores leaves.
  auto a = PlaceGang(p, 16, PlacementStyle::kTopology);
  ASSERT_TRUE(a);
  EXPECT_EQ(LeavesOf(p, *a), 1);
  // 24 + 4: three whole hosts and 4 more, all in one leaf when one can.
  auto b = PlaceGang(p, 28, PlacementStyle::kTopology);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->gpus(), 28);
  EXPECT_EQ(b->hosts(), 4);
  EXPECT_EQ(LeavesOf(p, *b), 1);
  EXPECT_EQ(MinHosts(p, 28), 4);
  EXPECT_EQ(MinLeaves(p, 28), 1);
  EXPECT_EQ(MinLeaves(p, 40), 2);
}

TEST(Quota, VerdictsAndParsing) {
  auto book = QuotaBook::Parse("a:4/8/4,b:4/8/0/2");
  ASSERT_TRUE(book.ok()) << book.status().message();
  QuotaBook q = *book;
  EXPECT_EQ(q.Check(0, 8), QuotaVerdict::kWithinNominal);
  EXPECT_EQ(q.Check(0, 10), QuotaVerdict::kBorrowed);          // b lends at most 2
  EXPECT_EQ(q.Check(0, 11), QuotaVerdict::kNothingToBorrow);
  EXPECT_EQ(q.Check(0, 13), QuotaVerdict::kOverBorrowLimit);
  EXPECT_EQ(q.Check(1, 9), QuotaVerdict::kOverBorrowLimit);    // b may not borrow
  q.Add(1, 7);                                                 // b idle: 1
  EXPECT_EQ(q.Check(0, 10), QuotaVerdict::kNothingToBorrow);
  EXPECT_EQ(q.Check(0, 9), QuotaVerdict::kBorrowed);
  for (const char* bad : {"a:4/8", "a:9/8/0", "a:x/8/0", ":1/2/3", "a:1/2/3/4/5"}) {
    EXPECT_FALSE(QuotaBook::Parse(bad).ok()) << bad;
  }
  EXPECT_EQ(QuotaBook().Check(0, 1000), QuotaVerdict::kWithinNominal);  // no quotas
}

SchedulerConfig Config(PlacementStyle style = PlacementStyle::kTopology) {
  SchedulerConfig c;
  c.style = style;
  c.order = QueueOrder::kFifo;
  c.grace_s = 10;
  return c;
}

TEST(Scheduler, BackfillNeverDelaysTheFirstBlockedJob) {
  Scheduler s(Pool("leaf:1 node:2 gpu:4"), Config());
  s.Submit(PoolJob{1, 0, 4, 0, 0, 100});  // ends at 100
  s.Submit(PoolJob{2, 0, 2, 0, 0, 300});  // ends at 300: 2 GPUs left
  ASSERT_EQ(s.Schedule(0)->size(), 2u);
  s.Submit(PoolJob{3, 0, 8, 0, 1, 50});   // needs both hosts: shadow time 300
  s.Submit(PoolJob{4, 0, 2, 0, 2, 500});  // would end after 300 on GPUs job 3 needs
  s.Submit(PoolJob{5, 0, 2, 0, 3, 200});  // ends by 300: may go first
  auto d = s.Schedule(3);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ((*d)[0].job, 5);
  EXPECT_TRUE((*d)[0].backfilled);
  const auto waiting = s.Waiting(3);
  ASSERT_EQ(waiting.size(), 2u);
  EXPECT_EQ(waiting[0].job, 3);
  EXPECT_EQ(waiting[0].constraint, "placement");
  EXPECT_NE(waiting[0].detail.find("needs 8 GPUs on 2 whole hosts"), std::string::npos) << waiting[0].detail;
}

TEST(Scheduler, AgingLetsABigJobPassAStreamOfSmallOnes) {
  SchedulerConfig c = Config();
  c.order = QueueOrder::kPriorityAging;
  c.size_reference = 1e6;
  c.aging_s = 100;
  c.backfill = false;
  Scheduler s(Pool("leaf:1 node:1 gpu:4"), c);
  s.Submit(PoolJob{1, 0, 4, 0, 0, 1000});  // big: few levels
  // Small jobs keep arriving and are ahead by size...
  int started_big_at = -1;
  for (int t = 0, id = 2; t < 2000 && started_big_at < 0; t += 10) {
    s.Submit(PoolJob{id++, 0, 1, 0, static_cast<double>(t), 10});
    auto d = s.Schedule(t);
    ASSERT_TRUE(d.ok());
    for (const Decision& x : *d) {
      if (x.job == 1) started_big_at = t;
    }
    std::vector<int> done;
    for (const auto& [id2, r] : s.running())
      if (r.start + r.job.estimate <= t + 10) done.push_back(id2);
    for (int j : done) ASSERT_TRUE(s.Finish(j).ok());
  }
  // ... until it has waited enough levels to come first.
  EXPECT_GT(started_big_at, 0);
  EXPECT_LT(started_big_at, 2000);
}

TEST(Scheduler, ReclaimPreemptsTheCheapestBorrowedJobsAndNeverBelowAGuarantee) {
  SchedulerConfig c = Config();
  c.quotas = *QuotaBook::Parse("a:0/4/8,b:2/4/0");
  Scheduler s(Pool("leaf:1 node:2 gpu:4"), c);
  s.Submit(PoolJob{1, 0, 4, 0, 0, 1000});  // a within nominal
  s.Submit(PoolJob{2, 0, 2, 0, 0, 1000});  // a borrows 2
  s.Submit(PoolJob{3, 0, 2, 0, 0, 1000});  // a borrows 2 more
  ASSERT_EQ(s.Schedule(0)->size(), 3u);
  EXPECT_TRUE(s.running().at(2).borrowed && s.running().at(3).borrowed);
  EXPECT_FALSE(s.running().at(1).borrowed);
  s.Submit(PoolJob{4, 1, 2, 0, 5, 100});  // b wants its quota back
  ASSERT_TRUE(s.Schedule(5)->empty());    // the borrowed jobs are inside their grace period
  auto d = s.Schedule(20);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].kind, Decision::Kind::kPreempt);
  EXPECT_EQ((*d)[0].preempted_by, 4);
  EXPECT_EQ((*d)[1].kind, Decision::Kind::kStart);
  EXPECT_EQ((*d)[1].job, 4);
  EXPECT_TRUE(s.running().count(1));  // within nominal: never a victim
  EXPECT_EQ(s.queue().size(), 1u);    // the victim waits again
  EXPECT_EQ(s.quotas().used(1), 2);
  // b's job is within nominal: a cannot take it back by borrowing.
  s.Submit(PoolJob{5, 0, 2, 0, 30, 100});
  auto again = s.Schedule(100);
  ASSERT_TRUE(again.ok());
  for (const Decision& x : *again) EXPECT_NE(x.kind, Decision::Kind::kPreempt);
}

PoolJob On(int id, int gpus, double submit, int host) {
  PoolJob j{id, 0, gpus, 0, submit, 1000};
  j.data_hosts = {host};
  return j;
}

TEST(Scheduler, DefragmentMovesTheFewestGpusToStartAJobBlockedByShapeAndNeverTheSameJobTwiceInTheGrace) {
  SchedulerConfig c = Config();
  c.defragment = true;
  c.migration_cost_s = 60;
  c.backfill = false;
  auto filled = [](const SchedulerConfig& config) {
    Scheduler s(Pool("leaf:1 node:3 gpu:4"), config);
    for (const PoolJob& j : {On(1, 1, 0, 0), On(2, 3, 0, 1), On(3, 4, 0, 2)}) s.Submit(j);
    EXPECT_EQ(s.Schedule(0)->size(), 3u);
    // 4 GPUs are free (3 on host 0, 1 on host 1) but no host has 4.
    s.Submit(PoolJob{4, 0, 4, 0, 5, 100});
    return s;
  };
  SchedulerConfig off = c;
  off.defragment = false;
  Scheduler without = filled(off);
  auto none = without.Schedule(5);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());  // without defragmentation it waits, and says why
  EXPECT_EQ(without.Waiting(5)[0].constraint, "placement");
  Scheduler s = filled(c);
  auto d = s.Schedule(5);
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->size(), 2u);
  // Emptying host 0 moves 1 GPU (job 1), host 1 would move 3: job 1 moves.
  EXPECT_EQ((*d)[0].kind, Decision::Kind::kMigrate);
  EXPECT_EQ((*d)[0].job, 1);
  EXPECT_EQ((*d)[0].previous.shares[0].host, 0);
  EXPECT_EQ((*d)[0].allocation.shares[0].host, 1);
  EXPECT_EQ((*d)[0].preempted_by, 4);
  EXPECT_EQ((*d)[1].kind, Decision::Kind::kStart);
  EXPECT_EQ((*d)[1].job, 4);
  EXPECT_EQ((*d)[1].allocation.shares[0].host, 0);
  EXPECT_DOUBLE_EQ(s.running().at(1).ExpectedEnd(), 0 + 1000 + 60);  // it pays the migration
  EXPECT_EQ(s.pool().free_gpus(), 0);
  // Hosts 0 and 2 empty again; jobs 5 and 6 leave 1 GPU free on each; job 2
  // ends, so host 1 has job 1 and 3 free GPUs.
  for (int id : {4, 3}) ASSERT_TRUE(s.Finish(id).ok());
  for (const PoolJob& j : {On(5, 3, 7, 0), On(6, 3, 7, 2)}) s.Submit(j);
  ASSERT_EQ(s.Schedule(7)->size(), 2u);
  ASSERT_TRUE(s.Finish(2).ok());
  s.Submit(PoolJob{7, 0, 4, 0, 8, 100});
  auto again = s.Schedule(8);
  ASSERT_TRUE(again.ok());
  // Moving job 1 again (1 GPU) would be cheapest, but it moved 3 s ago,
  // within the grace period: job 5 (3 GPUs, host 0) moves instead.
  ASSERT_EQ(again->size(), 2u);
  EXPECT_EQ((*again)[0].job, 5);
  EXPECT_EQ((*again)[0].allocation.shares[0].host, 1);
  EXPECT_EQ((*again)[1].job, 7);
  EXPECT_EQ((*again)[1].allocation.shares[0].host, 0);
}

TEST(Scheduler, ReclaimSparesTeamsBelowTheirGuaranteeFirstButStillReclaimsAJobAboveNominal) {
  SchedulerConfig c = Config();
  c.quotas = *QuotaBook::Parse("a:4/4/4,b:4/8/0,c:2/2/4");
  Scheduler s(Pool("leaf:1 node:3 gpu:4"), c);
  s.Submit(PoolJob{1, 0, 4, 0, 0, 1000});  // a within nominal
  s.Submit(PoolJob{2, 0, 4, 0, 0, 1000});  // a borrows 4
  ASSERT_EQ(s.Schedule(0)->size(), 2u);
  s.Submit(PoolJob{3, 2, 4, 0, 5, 1000});  // c: 2 of its 4 GPUs borrowed
  ASSERT_EQ(s.Schedule(5)->size(), 1u);
  ASSERT_TRUE(s.running().at(2).borrowed && s.running().at(3).borrowed);
  s.Submit(PoolJob{4, 1, 4, 0, 20, 100});  // b wants its guarantee
  auto d = s.Schedule(20);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 2u);
  // Job 3 lost less work (started later), but without it c would hold less
  // than its guarantee: job 2 goes, and a keeps its 4.
  EXPECT_EQ((*d)[0].kind, Decision::Kind::kPreempt);
  EXPECT_EQ((*d)[0].job, 2);
  EXPECT_EQ((*d)[1].job, 4);
  EXPECT_EQ(s.quotas().used(0), 4);
  // When the only borrowed job is one whose team then holds less than its
  // guarantee, it is still reclaimed: its GPUs beyond nominal were borrowed,
  // and a team owed its nominal quota gets it.
  SchedulerConfig c2 = Config();
  c2.quotas = *QuotaBook::Parse("a:2/2/2,b:4/6/0");
  Scheduler t(Pool("leaf:1 node:2 gpu:4"), c2);
  t.Submit(PoolJob{1, 0, 4, 0, 0, 1000});  // a: 2 of 4 borrowed
  t.Submit(PoolJob{2, 1, 4, 0, 1, 1000});  // b within nominal
  ASSERT_EQ(t.Schedule(1)->size(), 2u);
  t.Submit(PoolJob{3, 1, 2, 0, 20, 100});  // b: 6 of its nominal 6
  auto r = t.Schedule(20);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].job, 1);
  EXPECT_EQ((*r)[0].kind, Decision::Kind::kPreempt);
  EXPECT_EQ((*r)[1].job, 3);
  EXPECT_EQ(t.quotas().used(0), 0);
}

TEST(Scheduler, AJobPastItsQueueTimeoutLeavesTheQueueButAPreemptedOneWaits) {
  SchedulerConfig c = Config();
  c.quotas = *QuotaBook::Parse("a:0/2/4,b:4/4/0");
  Scheduler s(Pool("leaf:1 node:1 gpu:4"), c);
  PoolJob borrower(1, 0, 4, 0, 0, 1000);  // a takes the whole pool, 2 GPUs borrowed
  borrower.max_wait_s = 50;
  s.Submit(borrower);
  ASSERT_EQ(s.Schedule(0)->size(), 1u);
  PoolJob late(2, 0, 2, 0, 1, 100);  // a would borrow 2 more, but the pool is full
  late.max_wait_s = 50;
  s.Submit(late);
  ASSERT_TRUE(s.Schedule(40)->empty());
  s.Submit(PoolJob{3, 1, 4, 0, 45, 100});  // b reclaims the pool
  auto d = s.Schedule(51);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 3u);
  EXPECT_EQ((*d)[0].kind, Decision::Kind::kExpire);  // job 2, 50 s after its submission
  EXPECT_EQ((*d)[0].job, 2);
  EXPECT_EQ((*d)[1].kind, Decision::Kind::kPreempt);
  EXPECT_EQ((*d)[1].job, 1);
  EXPECT_EQ((*d)[2].job, 3);
  // Job 1 ran: requeued, it waits however long it takes.
  ASSERT_TRUE(s.Schedule(500)->empty());
  ASSERT_EQ(s.queue().size(), 1u);
  EXPECT_EQ(s.queue()[0].id, 1);
}

// Property: over random job streams, styles and quotas, no GPU is ever held
// twice, every decision is applied to the pool, and every job ends.
TEST(Scheduler, RandomStreamsNeverAssignAGpuTwice) {
  int migrations = 0;
  for (int seed = 1; seed <= 30; ++seed) {
    std::mt19937 rng(seed);
    SchedulerConfig c = Config(static_cast<PlacementStyle>(seed % 3));
    c.order = seed % 2 ? QueueOrder::kPriorityAging : QueueOrder::kFifo;
    c.size_reference = 1e6;
    if (seed % 4 == 0) c.quotas = *QuotaBook::Parse("a:8/16/16,b:8/16/8,c:0/0/32");
    c.defragment = seed % 5 != 0;
    c.migration_cost_s = 2;
    Scheduler s(Pool("leaf:2 node:3 gpu:8"), c);
    std::map<int, double> ends;
    int next = 0, finished = 0;
    const int jobs = 200;
    for (double t = 0; finished < jobs; t += 1) {
      if (next < jobs && rng() % 3 == 0) {
        const int sizes[] = {1, 1, 2, 4, 8, 8, 16, 24, 48};
        // With quotas, 48 GPUs is beyond every team's nominal + borrow limit:
        // such a job could never start.
        const int g = sizes[rng() % (c.quotas.enabled() ? 8 : 9)];
        s.Submit(PoolJob{next, static_cast<int>(rng() % 3), g, static_cast<int>(rng() % 2), t,
                         static_cast<double>(5 + rng() % 60)});
        ++next;
      }
      for (auto it = ends.begin(); it != ends.end();) {
        if (it->second <= t) {
          ASSERT_TRUE(s.Finish(it->first).ok());
          ++finished;
          it = ends.erase(it);
        } else {
          ++it;
        }
      }
      auto d = s.Schedule(t);
      ASSERT_TRUE(d.ok()) << "seed " << seed << ": " << d.status().message();
      for (const Decision& x : *d) {
        if (x.kind == Decision::Kind::kPreempt) {
          ends.erase(x.job);
        } else if (x.kind == Decision::Kind::kMigrate) {
          ASSERT_TRUE(s.running().count(x.job)) << "seed " << seed << ": job " << x.job << " moved, then stopped";
          ASSERT_EQ(s.running().at(x.job).allocation.shares, x.allocation.shares);
          ASSERT_EQ(x.previous.gpus(), x.allocation.gpus());
          ends[x.job] += c.migration_cost_s;
          ++migrations;
        } else {
          ends[x.job] = t + s.running().at(x.job).job.estimate;
        }
      }
      // Independently of the pool's own check: the running jobs' GPUs are disjoint.
      std::vector<uint64_t> held(s.pool().hosts().size(), 0);
      int total = 0;
      for (const auto& [id, r] : s.running()) {
        for (const HostShare& share : r.allocation.shares) {
          ASSERT_EQ(held[static_cast<size_t>(share.host)] & share.gpus, 0u) << "seed " << seed << " job " << id;
          held[static_cast<size_t>(share.host)] |= share.gpus;
        }
        total += r.allocation.gpus();
        ASSERT_EQ(r.allocation.gpus(), r.job.gpus);
      }
      ASSERT_EQ(total, s.pool().total_gpus() - s.pool().free_gpus());
      ASSERT_LT(t, 100000) << "seed " << seed << ": jobs never finish";
    }
  }
  EXPECT_GT(migrations, 0);  // the streams do exercise defragmentation
}

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


TEST(Scheduler, AUsersJobsOfTwoPriorityClassesNeverShareAHost) {
  Scheduler s(Pool("leaf:1 node:2 gpu:4"), Config());
  PoolJob low(1, 0, 2, 0, 0, 100);
  low.user = 7;
  s.Submit(low);
  ASSERT_EQ(s.Schedule(0)->size(), 1u);
  const int low_host = s.running().at(1).allocation.shares[0].host;
  PoolJob high(2, 0, 2, 1, 1, 100);
  high.user = 7;
  PoolJob other(3, 0, 2, 1, 1, 50);  // another user, ending first: best fit puts it beside job 1
  s.Submit(high);
  s.Submit(other);
  ASSERT_EQ(s.Schedule(1)->size(), 2u);
  EXPECT_NE(s.running().at(2).allocation.shares[0].host, low_host);
  EXPECT_EQ(s.running().at(3).allocation.shares[0].host, low_host);
}

TEST(Scheduler, FaultDomainSpreadAndDataLocality) {
  Scheduler s(Pool("leaf:2 node:2 gpu:4"), Config());
  PoolJob spread(1, 0, 8, 0, 0, 100);
  spread.min_leaves = 2;
  s.Submit(spread);
  ASSERT_EQ(s.Schedule(0)->size(), 1u);
  EXPECT_EQ(LeavesOf(s.pool(), s.running().at(1).allocation), 2);
  PoolJob single(2, 0, 4, 0, 1, 100);
  single.min_leaves = 2;  // one host cannot span two leaves: it waits, with the reason
  s.Submit(single);
  ASSERT_TRUE(s.Schedule(1)->empty());
  EXPECT_NE(s.Waiting(1)[0].detail.find("spread over 2 leaf switches"), std::string::npos);
  // Locality: the data's host when it fits, and nothing more.
  const int free_host = [&] {
    for (int h = 0; h < 4; ++h)
      if (s.pool().free_on(h) == 4) return h;
    return -1;
  }();
  ASSERT_GE(free_host, 0);
  PoolJob local(3, 0, 2, 0, 2, 100);
  local.data_hosts = {free_host};
  s.Submit(local);
  ASSERT_EQ(s.Schedule(2)->size(), 1u);
  EXPECT_EQ(s.running().at(3).allocation.shares[0].host, free_host);
}

TEST(NodeHealth, SuspectThenBadAndLostJobsGpusReturnWhenTheLeaseExpires) {
  HealthConfig hc;  // heartbeats every 4 s, suspect after 2 missed, bad at 15 s, lease 30 s
  NodeHealth health(4, hc, 0);
  Scheduler s(Pool("leaf:1 node:4 gpu:4"), Config());
  s.Submit(PoolJob(1, 0, 8, 0, 0, 1000));  // hosts 0 and 1 (whole)
  ASSERT_EQ(s.Schedule(0)->size(), 1u);
  const Allocation a = s.running().at(1).allocation;
  const int dying = a.shares[0].host, other = a.shares[1].host;
  for (int t = 4; t <= 8; t += 4)
    for (int h = 0; h < 4; ++h)
      if (h != dying) health.Heartbeat(h, t);
  EXPECT_EQ(health.State(dying, 7.9), NodeState::kHealthy);
  EXPECT_EQ(health.State(dying, 8.0), NodeState::kSuspect);
  ASSERT_TRUE(s.ApplyHealth(health, 8)->empty());  // suspect: no new work, jobs keep running
  EXPECT_FALSE(s.pool().usable(dying));
  EXPECT_EQ(health.State(dying, 15), NodeState::kBad);
  for (int h = 0; h < 4; ++h)
    if (h != dying) health.Heartbeat(h, 15);
  auto lost = s.ApplyHealth(health, 15);
  ASSERT_TRUE(lost.ok());
  EXPECT_EQ(*lost, std::vector<int>{1});
  EXPECT_EQ(s.pool().free_on(other), 4);   // freed at once
  EXPECT_EQ(s.pool().free_on(dying), 0);   // still leased: the host may still run the job
  for (int h = 0; h < 4; ++h)
    if (h != dying) health.Heartbeat(h, 29);
  ASSERT_TRUE(s.ApplyHealth(health, 29).ok());
  EXPECT_EQ(s.pool().free_on(dying), 0);   // lease: last heartbeat 0 + 30 s
  health.Heartbeat(dying, 31);             // back, after the lease ran out
  for (int h = 0; h < 4; ++h) health.Heartbeat(h, 31);
  ASSERT_TRUE(s.ApplyHealth(health, 31).ok());
  EXPECT_EQ(s.pool().free_on(dying), 4);
  EXPECT_TRUE(s.pool().usable(dying));
  EXPECT_EQ(s.pool().free_gpus(), 16);
}


TEST(Scheduler, ReservationsHoldWholeHostsAndBackfillRespectsThem) {
  Scheduler s(Pool("leaf:2 node:2 gpu:4"), Config());
  auto r = s.Reserve("demo", 1, 2, 100, 200);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->hosts.size(), 2u);
  EXPECT_EQ(s.pool().hosts()[static_cast<size_t>(r->hosts[0])].leaf,
            s.pool().hosts()[static_cast<size_t>(r->hosts[1])].leaf);  // one leaf
  auto reserved = [&](int job) {
    const int h = s.running().at(job).allocation.shares[0].host;
    return std::find(r->hosts.begin(), r->hosts.end(), h) != r->hosts.end();
  };
  // Before the window: a job that ends before it may use the reserved hosts ...
  s.Submit(PoolJob(1, 0, 4, 0, 0, 50));
  s.Submit(PoolJob(2, 0, 4, 0, 0, 50));
  s.Submit(PoolJob(3, 0, 4, 0, 0, 50));
  ASSERT_EQ(s.Schedule(0)->size(), 3u);
  EXPECT_TRUE(reserved(1) || reserved(2) || reserved(3));
  for (int j : {1, 2, 3}) ASSERT_TRUE(s.Finish(j).ok());
  // ... one that would run into it may not.
  s.Submit(PoolJob(4, 0, 4, 0, 60, 150));
  s.Submit(PoolJob(5, 0, 4, 0, 60, 150));
  s.Submit(PoolJob(6, 0, 4, 0, 60, 150));
  ASSERT_EQ(s.Schedule(60)->size(), 2u);
  EXPECT_FALSE(reserved(4));
  EXPECT_FALSE(reserved(5));
  EXPECT_NE(s.Waiting(60)[0].detail.find("reserved hosts excluded"), std::string::npos);
  // In the window only the team's jobs start there.
  s.Submit(PoolJob(7, 1, 4, 0, 100, 50));
  auto d = s.Schedule(100);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ((*d)[0].job, 7);
  EXPECT_TRUE(reserved(7));
  // After it, everyone again.
  ASSERT_TRUE(s.Finish(7).ok());
  auto after = s.Schedule(200);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].job, 6);
  // A second reservation cannot take the same hosts in an overlapping window.
  EXPECT_TRUE(s.Reserve("again", 0, 2, 150, 250).ok());  // the other leaf
  auto none = s.Reserve("third", 0, 1, 150, 250);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInfeasible);
  EXPECT_FALSE(s.Reserve("bad", 0, 1, 300, 300).ok());
}


TEST(ResourceTemplate, GpusMemoryLinkAndAffinityBecomeHardConstraints) {
  // Leaf 0: two hosts of 40 GiB GPUs on 100 Gb/s; leaf 1: two of 80 GiB on 400 Gb/s.
  GpuPool pool({{"a0", 0, 4, 40, 100}, {"a1", 0, 4, 40, 100}, {"b0", 1, 4, 80, 400}, {"b1", 1, 4, 80, 400}});
  auto templates = ParseTemplates("infer:gpus=2,mem=80;train:gpus=8,link=200,affinity=leaf;safe:gpus=8,affinity=spread:2");
  ASSERT_TRUE(templates.ok()) << templates.status().message();
  ASSERT_EQ(templates->size(), 3u);
  Scheduler s(pool, Config(PlacementStyle::kFirstFit));  // first fit would pick leaf 0 without the constraints
  s.Submit(WithTemplate(PoolJob(1, 0, 0, 0, 0, 100), (*templates)[0]));
  ASSERT_EQ(s.Schedule(0)->size(), 1u);
  EXPECT_EQ(s.pool().hosts()[static_cast<size_t>(s.running().at(1).allocation.shares[0].host)].leaf, 1);
  ASSERT_TRUE(s.Finish(1).ok());
  s.Submit(WithTemplate(PoolJob(2, 0, 0, 0, 1, 100), (*templates)[1]));
  ASSERT_EQ(s.Schedule(1)->size(), 1u);
  EXPECT_EQ(LeavesOf(s.pool(), s.running().at(2).allocation), 1);
  EXPECT_EQ(s.running().at(2).allocation.shares[0].host, 2);
  ASSERT_TRUE(s.Finish(2).ok());
  s.Submit(WithTemplate(PoolJob(3, 0, 0, 0, 2, 100), (*templates)[2]));
  ASSERT_EQ(s.Schedule(2)->size(), 1u);
  EXPECT_EQ(LeavesOf(s.pool(), s.running().at(3).allocation), 2);
  // 40 GiB hosts can never hold an 80 GiB template job, however free.
  ASSERT_TRUE(s.Finish(3).ok());
  auto big = ParseTemplates("big:gpus=12,mem=80");
  ASSERT_TRUE(big.ok());
  s.Submit(WithTemplate(PoolJob(4, 0, 0, 0, 3, 100), (*big)[0]));
  EXPECT_TRUE(s.Schedule(3)->empty());
  for (const char* bad : {"x", "x:mem=80", "x:gpus=0", "x:gpus=2,affinity=rack", "x:gpus=2,affinity=spread:1",
                          ":gpus=2", "x:gpus=2,colour=red"}) {
    EXPECT_FALSE(ParseTemplates(bad).ok()) << bad;
  }
  EXPECT_TRUE(GpuPool::FromSpec("leaf:1 node:2 gpu:8 mem:141 link:400").ok());
  EXPECT_DOUBLE_EQ(GpuPool::FromSpec("leaf:1 node:2 gpu:8 mem:141")->hosts()[0].gpu_memory_gib, 141);
}

// The audit must see each kind of broken rule (else its zeros in the
// simulator's report would prove nothing).
TEST(RuleAudit, CountsEachKindOfBrokenRuleOncePerJob) {
  GpuPool pool = Pool("leaf:1 node:2 gpu:4 mem:40 + leaf:1 node:1 gpu:4 mem:80");
  auto job = [](int id, int user, int priority) {
    PoolJob j(id, 0, 1, priority, 0, 100);
    j.user = user;
    return j;
  };
  std::map<int, RunningJob> running;
  running[1] = RunningJob{job(1, 7, 0), On(0, 0b0001), 0, false};
  running[2] = RunningJob{job(2, 7, 1), On(0, 0b0010), 0, false};   // user 7's two classes on host 0
  running[3] = RunningJob{job(3, -1, 0), On(1, 0b0001), 0, false};
  running[4] = RunningJob{job(4, -1, 0), On(1, 0b0001), 0, false};  // GPU 0 of host 1 twice
  PoolJob big = job(5, -1, 0);
  big.min_gpu_memory_gib = 80;
  running[5] = RunningJob{big, On(1, 0b0100), 0, false};            // 40 GiB host
  PoolJob wide = job(6, -1, 0);
  wide.gpus = 2;
  wide.one_leaf = true;
  running[6] = RunningJob{wide, Allocation{{HostShare{0, 0b0100}, HostShare{2, 0b0001}}}, 0, false};  // two leaves
  running[7] = RunningJob{job(7, -1, 0), On(2, 0b0010), 60, false};  // another team, placed inside the window
  running[8] = RunningJob{job(8, -1, 0), On(2, 0b0100), 10, false};  // there before it: may stay
  const std::vector<PoolReservation> reservations = {PoolReservation{"r", 1, {2}, 50, 100}};
  // Team 0 holds all 9 of the jobs' GPUs; its nominal 4 plus borrow limit 2 is 6.
  QuotaBook quotas = *QuotaBook::Parse("a:2/4/2,b:0/4/0");
  quotas.Add(0, 9);
  RuleAudit audit;
  audit.Check(pool, running, reservations, quotas, 70);
  audit.Check(pool, running, reservations, quotas, 80);  // the same breaks again: not counted twice
  EXPECT_EQ(audit.counts().user_class_conflicts, 1);
  EXPECT_EQ(audit.counts().gpus_held_twice, 1);
  EXPECT_EQ(audit.counts().constraint_breaks, 2);
  EXPECT_EQ(audit.counts().reservation_intrusions, 1);
  EXPECT_EQ(audit.counts().quota_breaks, 1);
  pool.set_usable(1, false);
  Decision onto_bad;
  onto_bad.job = 9;
  onto_bad.allocation = On(1, 0b1000);
  audit.CheckPlacement(onto_bad, pool);
  onto_bad.allocation = On(0, 0b1000);
  onto_bad.job = 10;
  audit.CheckPlacement(onto_bad, pool);  // a healthy host: fine
  EXPECT_EQ(audit.counts().unhealthy_placements, 1);
  EXPECT_EQ(audit.counts().total(), 7);
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
