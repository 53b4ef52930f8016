// The pool scheduler: backfill, aging, reclaim and preemption,
// defragmentation, queue timeouts, priority classes, fault domains,
// locality and reservations.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <random>

#include "policies/pool/gang_placement.h"
#include "policies/pool/quota.h"
#include "policies/pool/scheduler.h"

#include "tests/policies/pool_testing.h"

namespace gpulaunch::pool {
namespace {

using namespace pool_testing;

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

// FIFO, first fit, no backfill and no grace: what starts follows from the
// quotas and the tiers alone.
SchedulerConfig QuotaConfig(const std::string& quotas, bool slurm_tiers) {
  SchedulerConfig c = Config(PlacementStyle::kFirstFit);
  c.order = QueueOrder::kFifo;
  c.backfill = false;
  c.grace_s = 0;
  c.slurm_tiers = slurm_tiers;
  c.quotas = *QuotaBook::Parse(quotas);
  return c;
}

// Slurm's tiers (slurm-config --policy's partitions): a team's borrowed
// jobs do not count against its nominal, a job blocked in the borrowed tier
// holds back only later borrowed jobs, and one at its account limit no one.
TEST(Scheduler, SlurmTiersCountOnlyJobsStartedWithinNominalAndBlockPerTier) {
  SchedulerConfig c = QuotaConfig("a:4/4/8,b:4/4/4", true);
  Scheduler s(Pool("leaf:1 node:3 gpu:4"), c);
  s.Submit(PoolJob{1, 0, 4, 0, 0, 1000});  // a within nominal
  s.Submit(PoolJob{2, 0, 4, 0, 0, 1000});  // a borrows
  ASSERT_EQ(s.Schedule(0)->size(), 2u);
  EXPECT_TRUE(s.running().at(2).borrowed);
  EXPECT_EQ(s.quotas().used(0), 8);
  EXPECT_EQ(s.quotas().own(0), 4);
  ASSERT_TRUE(s.Finish(1).ok());  // a's own job ends: a holds 4, all borrowed
  // Only jobs started within nominal count against it: a's own partition
  // is empty, so its next 4 are within nominal (and would reclaim).
  EXPECT_EQ(s.quotas().Check(0, 4), QuotaVerdict::kWithinNominal);
  s.Submit(PoolJob{3, 1, 8, 0, 10, 100});  // b: 8 > nominal 4: the borrowed tier
  s.Submit(PoolJob{4, 0, 4, 0, 11, 100});  // a: within nominal
  s.Submit(PoolJob{5, 0, 4, 0, 12, 100});  // a at 12 of its 12 after job 4: over its limit
  s.Submit(PoolJob{6, 1, 4, 0, 13, 100});  // b within nominal
  auto d = s.Schedule(20);
  ASSERT_TRUE(d.ok());
  std::vector<int> started;
  for (const Decision& x : *d)
    if (x.kind == Decision::Kind::kStart) started.push_back(x.job);
  // The own tiers go first: jobs 4 and 6 take the 8 free GPUs that job 3,
  // submitted before them, would have fitted on; job 6 does not wait behind
  // job 5 (its limit) either.
  EXPECT_EQ(started, (std::vector<int>{4, 6}));
  EXPECT_EQ(s.queue().size(), 2u);  // 3 and 5
  EXPECT_TRUE(s.running().count(2));
  ASSERT_TRUE(s.Finish(4).ok());
  ASSERT_TRUE(s.Finish(2).ok());
  // 8 free, and a holds nothing: job 5 is within nominal now and goes
  // first; job 3 (borrowed tier) still waits, though submitted earlier.
  auto later = s.Schedule(30);
  ASSERT_TRUE(later.ok());
  ASSERT_EQ(later->size(), 1u);
  EXPECT_EQ((*later)[0].job, 5);
  EXPECT_FALSE((*later)[0].borrowed);
  c.slurm_tiers = false;  // one FIFO queue: job 3 blocks everyone behind it
  Scheduler fifo(Pool("leaf:1 node:3 gpu:4"), c);
  fifo.Submit(PoolJob{1, 0, 4, 0, 0, 1000});
  fifo.Submit(PoolJob{3, 1, 12, 0, 10, 100});
  fifo.Submit(PoolJob{6, 1, 4, 0, 13, 100});
  ASSERT_EQ(fifo.Schedule(20)->size(), 1u);
}

// Slurm preempts the borrowed tier for a job within nominal whoever's job
// runs there, the team's own included; the policy's one queue reclaims only
// other teams' borrowed jobs.
TEST(Scheduler, InSlurmTiersAJobWithinNominalReclaimsItsOwnTeamsBorrowedJob) {
  for (const bool tiers : {true, false}) {
    Scheduler s(Pool("leaf:1 node:2 gpu:4"), QuotaConfig("a:4/4/4,b:4/4/0", tiers));
    s.Submit(PoolJob{1, 0, 4, 0, 0, 1000});  // a within nominal
    s.Submit(PoolJob{2, 0, 4, 0, 0, 1000});  // a borrows
    ASSERT_EQ(s.Schedule(0)->size(), 2u);
    ASSERT_TRUE(s.Finish(1).ok());
    s.Submit(PoolJob{3, 1, 4, 0, 1, 1000});  // b within nominal takes the free host
    ASSERT_EQ(s.Schedule(1)->size(), 1u);
    s.Submit(PoolJob{4, 0, 4, 0, 2, 1000});  // a within nominal again: nothing is free
    auto d = s.Schedule(2);
    ASSERT_TRUE(d.ok());
    std::vector<std::pair<Decision::Kind, int>> got;
    for (const Decision& x : *d) got.emplace_back(x.kind, x.job);
    if (tiers) {
      EXPECT_EQ(got, (std::vector<std::pair<Decision::Kind, int>>{{Decision::Kind::kPreempt, 2},
                                                                  {Decision::Kind::kStart, 4}}));
      EXPECT_FALSE(s.running().at(4).borrowed);
    } else {
      EXPECT_TRUE(got.empty());
      EXPECT_TRUE(s.running().count(2));
    }
  }
}

// A job of a higher class that would borrow may preempt its own team's
// lower class, never another team's job within its nominal: that team's
// reclaim would take the GPUs back at once, and the two would thrash (found
// by RandomStreamsNeverAssignAGpuTwice: two jobs preempting each other
// every 11 s for ever).
TEST(Scheduler, ABorrowingJobOfAHigherClassPreemptsOnlyItsOwnTeamsLowerClass) {
  Scheduler s(Pool("leaf:1 node:2 gpu:4"), QuotaConfig("a:4/4/4,b:4/4/4", false));
  s.Submit(PoolJob{1, 1, 4, 0, 0, 1000});  // b within nominal, class 0
  s.Submit(PoolJob{2, 0, 4, 0, 0, 1000});  // a within nominal, class 0
  ASSERT_EQ(s.Schedule(0)->size(), 2u);
  s.Submit(PoolJob{3, 0, 4, 1, 1, 1000});  // a, class 1: above a's nominal, it would borrow
  auto d = s.Schedule(1);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].kind, Decision::Kind::kPreempt);
  EXPECT_EQ((*d)[0].job, 2);  // not job 1, though equal in cost and first by id
  EXPECT_EQ((*d)[1].job, 3);
  EXPECT_TRUE(s.running().count(1));
  EXPECT_TRUE(s.Schedule(2)->empty());  // and b has nothing to reclaim
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
      if (t >= 100000) {  // jobs never finish: say what waits and what runs
        std::string state;
        for (const WaitReason& w : s.Waiting(t)) state += " job " + std::to_string(w.job) + " waits: " + w.detail + ";";
        for (const auto& [id, r] : s.running()) {
          state += " job " + std::to_string(id) + (r.borrowed ? " runs borrowed;" : " runs;");
        }
        FAIL() << "seed " << seed << ": jobs never finish;" << state;
      }
    }
  }
  EXPECT_GT(migrations, 0);  // the streams do exercise defragmentation
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

}  // namespace
}  // namespace gpulaunch::pool
