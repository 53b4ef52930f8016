// The multi-tenant pool: GPU bookkeeping, gang placement styles, quotas,
// node health, resource templates and the rule audit.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <random>

#include "policies/pool/gang_placement.h"
#include "policies/pool/node_health.h"
#include "policies/pool/quota.h"
#include "policies/pool/resource_template.h"
#include "policies/pool/rule_audit.h"
#include "policies/pool/scheduler.h"

#include "tests/policies/pool_testing.h"

namespace gpulaunch::pool {
namespace {

using namespace pool_testing;

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

// core:N: every job takes a CPU on each of its hosts, so at most N jobs
// share a host whatever GPUs it has left.
TEST(GpuPool, CoresBoundTheJobsThatShareAHost) {
  GpuPool p = Pool("leaf:1 node:2 gpu:4 core:2");
  EXPECT_EQ(p.hosts()[0].cpus, 2);
  EXPECT_EQ(Pool("leaf:1 node:2 gpu:4 core:2 numa:2").hosts()[1].cpus, 4);
  EXPECT_EQ(Pool("leaf:1 node:2 gpu:4").hosts()[0].cpus, 0);  // not modelled
  ASSERT_TRUE(p.Take(On(0, 0b0001)).ok());
  EXPECT_TRUE(p.cpu_free(0));
  ASSERT_TRUE(p.Take(On(0, 0b0010)).ok());
  EXPECT_FALSE(p.cpu_free(0));  // two jobs, two GPUs still free
  EXPECT_TRUE(p.cpu_free(1));
  ASSERT_TRUE(p.Give(On(0, 0b0001)).ok());
  EXPECT_TRUE(p.cpu_free(0));
  // The scheduler places a third 1-GPU job on the other host.
  SchedulerConfig config;
  config.style = PlacementStyle::kFirstFit;
  Scheduler s(Pool("leaf:1 node:2 gpu:4 core:2"), config);
  for (int id = 0; id < 3; ++id) s.Submit(PoolJob(id, 0, 1, 0, 0, 10));
  auto d = s.Schedule(0);
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->size(), 3u);
  EXPECT_EQ((*d)[0].allocation.shares[0].host, 0);
  EXPECT_EQ((*d)[1].allocation.shares[0].host, 0);
  EXPECT_EQ((*d)[2].allocation.shares[0].host, 1);
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
  // A job above nominal borrows whole; with lend limits it needs idle
  // nominal to cover it: a's own 8 and the 2 b lends.
  EXPECT_EQ(q.Check(0, 10), QuotaVerdict::kBorrowed);
  EXPECT_EQ(q.Check(0, 11), QuotaVerdict::kNothingToBorrow);
  EXPECT_EQ(q.Check(0, 13), QuotaVerdict::kOverBorrowLimit);
  EXPECT_EQ(q.Check(1, 9), QuotaVerdict::kOverBorrowLimit);    // b may not borrow
  q.Add(1, 7, false);                                          // b idle: 1
  EXPECT_EQ(q.Check(0, 10), QuotaVerdict::kNothingToBorrow);
  EXPECT_EQ(q.Check(0, 9), QuotaVerdict::kBorrowed);
  q.Add(0, 9, true);                                           // that borrowing takes all the idle nominal
  EXPECT_EQ(q.Check(0, 1), QuotaVerdict::kWithinNominal);      // a's borrowed job is not in its nominal
  for (const char* bad : {"a:4/8", "a:9/8/0", "a:x/8/0", ":1/2/3", "a:1/2/3/4/5"}) {
    EXPECT_FALSE(QuotaBook::Parse(bad).ok()) << bad;
  }
  EXPECT_EQ(QuotaBook().Check(0, 1000), QuotaVerdict::kWithinNominal);  // no quotas
}

// The one meaning of borrowing, as Slurm enforces it with the generated
// side: a job is within nominal while the team's jobs that started within
// nominal leave room for it (its borrowed jobs run in gl-borrowed, outside
// the partition QOS); above that it borrows, and without lend limits may
// take any idle GPU (placement decides) up to nominal + borrow_limit.
TEST(Quota, OnlyJobsStartedWithinNominalCountAgainstIt) {
  QuotaBook q = *QuotaBook::Parse("a:8/8/8,b:4/4/0");
  q.SetPoolGpus(16);
  q.Add(1, 4, false);                                       // b at its nominal
  EXPECT_EQ(q.Check(0, 8), QuotaVerdict::kWithinNominal);
  EXPECT_EQ(q.Check(0, 12), QuotaVerdict::kBorrowed);       // whole: it does not fit the nominal
  EXPECT_EQ(q.Check(0, 17), QuotaVerdict::kOverBorrowLimit);
  EXPECT_EQ(q.Check(1, 1), QuotaVerdict::kOverBorrowLimit);  // b may not borrow
  q.Add(0, 8, false);
  EXPECT_EQ(q.Check(0, 4), QuotaVerdict::kBorrowed);
  EXPECT_EQ(q.Check(0, 9), QuotaVerdict::kOverBorrowLimit);  // 8 + 9 > 16
  q.Add(0, 4, true);
  q.Remove(0, 8, false);                                    // its own jobs end, the borrowed one runs on
  EXPECT_EQ(q.used(0), 4);
  EXPECT_EQ(q.own(0), 0);
  EXPECT_EQ(q.Check(0, 8), QuotaVerdict::kWithinNominal);   // the borrowed 4 do not count against nominal
  EXPECT_EQ(q.Check(0, 13), QuotaVerdict::kOverBorrowLimit);  // they count against the limit
}

// Slurm's tier billing: a job counts against nominal as its tier units (the
// largest share of a node it takes, in GPUs); the borrow limit counts GPUs.
TEST(Quota, TierUnitsCountAgainstNominalAndGpusAgainstTheLimit) {
  QuotaBook q = *QuotaBook::Parse("a:8/8/8");
  q.SetPoolGpus(16);
  EXPECT_EQ(q.Check(0, 1, 8), QuotaVerdict::kWithinNominal);
  EXPECT_EQ(q.Check(0, 1, 9), QuotaVerdict::kBorrowed);     // 1 GPU, but 9 units: over nominal
  q.Add(0, 1, false, 6);                                    // 1 GPU with all of a node's cores
  EXPECT_EQ(q.own(0), 6);
  EXPECT_EQ(q.used(0), 1);
  EXPECT_EQ(q.Check(0, 2), QuotaVerdict::kWithinNominal);   // 6 + 2 units
  EXPECT_EQ(q.Check(0, 3), QuotaVerdict::kBorrowed);
  EXPECT_EQ(q.Check(0, 15, 15), QuotaVerdict::kBorrowed);   // 1 + 15 GPUs: the limit is 16
  EXPECT_EQ(q.Check(0, 16, 16), QuotaVerdict::kOverBorrowLimit);
  q.Remove(0, 1, false, 6);
  EXPECT_EQ(q.own(0), 0);
  EXPECT_EQ(q.used(0), 0);
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
  quotas.Add(0, 9, false);
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

}  // namespace
}  // namespace gpulaunch::pool
