#include "policies/placement_engine.h"

#include <gtest/gtest.h>
#include "common/cluster_spec.h"
#include <random>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "slurm/slurm_allocation.h"
#include "common/synthetic_cluster.h"
#include "launcher/discovery/hwloc_source.h"
#include "policies/link_model.h"
#include "policies/nic_choice.h"
#include "policies/slot_placement.h"
#include "tests/testing/synthetic_host.h"

namespace gpulaunch {
namespace {

JobRequest Job(int ranks, const std::string& layout = "") {
  JobRequest r;
  r.ranks = ranks;
  r.layout = *ParseLayout(layout, ranks);
  return r;
}

ClusterTopology Cluster(const std::string& spec) { return *MakeSyntheticCluster(spec); }

ClusterTopology Recorded(const std::string& file, int hosts = 1) {
  ClusterTopology c;
  auto t = LoadHwlocXmlFile(std::string(GL_TEST_DATA) + "/topologies/hwloc/" + file);
  EXPECT_TRUE(t.ok()) << file;
  for (int h = 0; h < hosts; ++h) c.hosts.push_back({"host" + std::to_string(h), *t, true, {}, std::nullopt});
  return c;
}

TEST(PlacementEngine, FitsOnOneHostWhenItCan) {
  const auto c = Cluster("switch:2 node:4 gpu:8 nic:4");
  auto p = Place(Job(8), c);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->hosts.size(), 1u);
  EXPECT_EQ(ModelStep(*p, c, Job(8)).switches, 0);
}

TEST(PlacementEngine, FewestHostsUnderTheLowestSwitch) {
  const auto c = Cluster("switch:2 node:4 gpu:8 nic:4");
  auto p = Place(Job(32, "tp=8"), c);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->hosts, (std::vector<std::string>{"node0001", "node0002", "node0003", "node0004"}));
  EXPECT_EQ(ModelStep(*p, c, Job(32, "tp=8")).switches, 1);  // one leaf
  auto wide = Place(Job(40, "tp=8"), c);
  ASSERT_TRUE(wide.ok());
  EXPECT_EQ(wide->hosts.size(), 5u);
  EXPECT_EQ(ModelStep(*wide, c, Job(40, "tp=8")).switches, 3);  // two leaves and the spine
}

TEST(PlacementEngine, BestFitKeepsWholeHostsFree) {
  auto c = Cluster("node:3 gpu:8");
  c.hosts[1].gpu_busy.assign(8, false);
  for (int g = 0; g < 6; ++g) c.hosts[1].gpu_busy[g] = true;  // 2 free on node0002
  auto p = Place(Job(2), c);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->hosts, (std::vector<std::string>{"node0002"}));
  EXPECT_EQ(p->ranks[0].gpus, (std::vector<int>{6}));
  EXPECT_EQ(p->ranks[1].gpus, (std::vector<int>{7}));
}

TEST(PlacementEngine, ExplainsHostsPassedOver) {
  auto c = Cluster("node:4 gpu:4");
  c.hosts[0].healthy = false;
  JobRequest r = Job(4);
  r.exclude_hosts = {"node0002"};
  auto p = Place(r, c);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->hosts, (std::vector<std::string>{"node0003"}));
  EXPECT_EQ(p->explain[0], "node0001: passed over: unhealthy");
  EXPECT_EQ(p->explain[1], "node0002: passed over: excluded");
  EXPECT_NE(p->explain[2].find("chosen: 4 ranks"), std::string::npos);
  EXPECT_NE(p->explain[3].find("not needed"), std::string::npos);
}

// Every rank learns its host's leaf switch (GPULAUNCH_SWITCH, for the
// runtime's hierarchical reductions), whichever policy placed it.
TEST(PlacementEngine, EveryRankCarriesItsLeafSwitch) {
  const auto c = Cluster("switch:2 node:2 gpu:8");
  for (const char* policy : {"compact", "spread", "by-slot"}) {
    JobRequest r = Job(32, "tp=8");
    r.policy = policy;
    auto p = Place(r, c);
    ASSERT_TRUE(p.ok()) << policy << ": " << p.status().ToString();
    for (const RankSlot& s : p->ranks) {
      EXPECT_EQ(s.leaf_switch, c.network.LeafOf(s.host)->name) << policy << ", rank " << s.rank;
    }
  }
  ClusterTopology treeless = Cluster("node:1 gpu:8");
  treeless.network = NetworkTree();
  auto no_tree = Place(Job(8, ""), treeless);
  ASSERT_TRUE(no_tree.ok());
  for (const RankSlot& s : no_tree->ranks) EXPECT_EQ(s.leaf_switch, "");
}

TEST(PlacementEngine, FaultDomainSpreadsReplicasOverSwitchesEvenly) {
  const auto c = Cluster("switch:3 node:2 gpu:8");
  JobRequest r = Job(24, "tp=4,pp=2");  // 3 replicas of 8 ranks, 6 TP groups
  r.policy = "fault-domain";
  auto p = Place(r, c);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::map<std::string, int> per_leaf;
  for (const RankSlot& s : p->ranks) ++per_leaf[c.network.LeafOf(s.host)->name];
  ASSERT_EQ(per_leaf.size(), 3u);
  for (const auto& [leaf, n] : per_leaf) EXPECT_EQ(n, 8) << leaf;
  for (const RankSlot& s : p->ranks) {  // TP groups still whole
    for (int m : r.layout.GroupOf(kTp, s.rank)) EXPECT_EQ(p->ranks[m].host, s.host);
  }
  // Inside a domain, packed: each leaf uses one host.
  EXPECT_EQ(p->hosts.size(), 3u);
}

TEST(LinkModel, KnownNicSpeedsSetTheNetworkBandwidth) {
  auto c = Cluster("node:2 gpu:2 nic:1");
  EXPECT_EQ(CostBetween(c, {0, 0}, {1, 0}).gbps, c.nic_gbps);  // speeds unknown: the cluster's figure
  c.hosts[0].topology.Mutable().nics[0].gbps = 50;
  c.hosts[1].topology.Mutable().nics[0].gbps = 12.5;
  EXPECT_EQ(CostBetween(c, {0, 0}, {1, 0}).gbps, 12.5);  // the slower host's NIC
  EXPECT_EQ(CostBetween(c, {0, 0}, {0, 1}).gbps, 300.0);  // inside a host: NVSwitch
}

TEST(PlacementEngine, InfeasibleSaysWhatIsShortAndByHowMuch) {
  auto c = Cluster("node:2 gpu:8");
  JobRequest r = Job(10);
  r.gpus_per_rank = 2;
  auto p = Place(r, c);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInfeasible);
  EXPECT_NE(p.status().message().find("needs 20 GPUs (10 ranks x 2)"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("short by 4"), std::string::npos);
  r.policy = "nope";
  EXPECT_EQ(Place(r, c).status().code(), StatusCode::kInvalidArgument);
}

// Place() is the one entry point: by-slot is a policy behind it, and a
// launch's unbindable job (more ranks than GPUs) is filled slot by slot,
// unbound, where the slots allow; a plan (no flag) is told it does not fit.
TEST(PlacementEngine, OneEntryPointForEveryMapping) {
  const auto c = Cluster("node:2 gpu:4 core:4");
  JobRequest by_slot = Job(6);
  by_slot.policy = kBySlotPolicy;
  auto p = Place(by_slot, c);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto direct = PlaceLikeOpenMpiBySlot(Job(6), c);
  ASSERT_TRUE(direct.ok());
  ASSERT_EQ(p->ranks.size(), 6u);
  for (size_t i = 0; i < p->ranks.size(); ++i) {
    EXPECT_EQ(p->ranks[i].host, direct->ranks[i].host) << i;
    EXPECT_EQ(p->ranks[i].gpus, direct->ranks[i].gpus) << i;
  }
  EXPECT_EQ(p->ranks[3].host, "node0001");  // host order, slot by slot
  EXPECT_EQ(p->ranks[4].host, "node0002");

  JobRequest many = Job(12);
  many.oversubscribe = true;
  EXPECT_EQ(Place(many, c).status().code(), StatusCode::kInfeasible);  // 12 ranks, 8 GPUs
  many.unbound_when_unbindable = true;
  auto filled = Place(many, c);
  ASSERT_TRUE(filled.ok()) << filled.status().ToString();
  ASSERT_EQ(filled->ranks.size(), 12u);
  for (const RankSlot& r : filled->ranks) EXPECT_FALSE(r.bound) << r.rank;
  many.oversubscribe = false;  // and without --oversubscribe the slots (8) do not hold 12
  EXPECT_EQ(Place(many, c).status().code(), StatusCode::kInfeasible);
}

// Whatever the recorded localities say (GPUs of unknown NUMA node, NUMA
// nodes without cores, more GPUs than cores), no two bound ranks of a host
// share a CPU, and a bound rank has CPUs.
TEST(PlacementEngine, BoundRanksNeverShareACpu) {
  std::mt19937 rng(7);
  int checked = 0;
  for (int round = 0; round < 200; ++round) {
    const int gpus = 1 + static_cast<int>(rng() % 8), cores = 1 + static_cast<int>(rng() % 6);
    auto c = *MakeSyntheticCluster(*ParseClusterSpec("node:1 gpu:" + std::to_string(gpus) + " numa:2 core:" +
                                                     std::to_string(cores)));
    HostTopology& t = c.hosts[0].topology.Mutable();
    for (Gpu& g : t.gpus) g.numa_node = static_cast<int>(rng() % 4) - 1;  // -1, 0, 1, or 2 (no cores there)
    for (Core& core : t.cores)
      if (rng() % 5 == 0) core.numa_node = -1;
    const int ranks = 1 + static_cast<int>(rng() % gpus);
    auto p = Place(Job(ranks), c);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    std::map<int, int> owner;
    for (const RankSlot& r : p->ranks) {
      if (!r.bound) continue;
      EXPECT_FALSE(r.cpus.empty()) << "round " << round << " rank " << r.rank;
      for (int cpu : r.cpus) {
        auto [it, fresh] = owner.emplace(cpu, r.rank);
        EXPECT_TRUE(fresh) << "round " << round << ": CPU " << cpu << " in ranks " << it->second << " and " << r.rank;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

// Properties over many requests and clusters.
TEST(PlacementEngine, PropertiesHoldEverywhere) {
  const char* clusters[] = {"node:1 gpu:8 nic:2", "switch:2 node:3 gpu:4 nic:4", "node:5 gpu:8 numa:2 nvlink:0"};
  const char* layouts[] = {"", "tp=2", "tp=4", "tp=2,pp=2", "tp=4,pp=2,order=tp-dp-pp"};
  for (const char* spec : clusters) {
    auto c = Cluster(spec);
    for (int ranks : {1, 2, 4, 8, 16}) {
      for (const char* layout : layouts) {
        auto parsed = ParseLayout(layout, ranks);
        if (!parsed.ok()) continue;
        for (const char* policy : {"compact", "spread", "fault-domain"}) {
          JobRequest r = Job(ranks, layout);
          r.policy = policy;
          auto p = Place(r, c);
          if (!p.ok()) {
            EXPECT_EQ(p.status().code(), StatusCode::kInfeasible) << spec << " " << ranks;
            continue;
          }
          SCOPED_TRACE(std::string(spec) + " n=" + std::to_string(ranks) + " " + layout + " " + policy);
          std::map<std::string, std::set<int>> used;
          for (const RankSlot& s : p->ranks) {
            ASSERT_EQ(s.gpus.size(), 1u);
            EXPECT_TRUE(used[s.host].insert(s.gpus[0]).second) << "GPU given twice";
            EXPECT_EQ(r.layout.RankOf(s.coords), s.rank);
            const auto& host = *std::find_if(c.hosts.begin(), c.hosts.end(), [&](auto& h) { return h.name == s.host; });
            const Gpu& g = host.topology->gpus[s.gpus[0]];
            for (int cpu : s.cpus) EXPECT_TRUE(std::binary_search(g.local_pus.begin(), g.local_pus.end(), cpu));
          }
          // TP groups stay on one host whenever a host can hold one.
          if (std::string(policy) == "compact") {
            for (const RankSlot& s : p->ranks) {
              for (int m : r.layout.GroupOf(kTp, s.rank)) EXPECT_EQ(p->ranks[m].host, s.host);
            }
          }
          auto again = Place(r, c);
          for (size_t i = 0; i < p->ranks.size(); ++i) {
            EXPECT_EQ(again->ranks[i].host, p->ranks[i].host);
            EXPECT_EQ(again->ranks[i].gpus, p->ranks[i].gpus);
          }
        }
      }
    }
  }
}

TEST(PlacementEngine, NeverWorseThanOpenMpiBySlot) {
  struct Case {
    ClusterTopology cluster;
    std::string layout;
    int ranks;
  };
  auto busy = Cluster("switch:2 node:4 gpu:8 nic:4");
  busy.hosts[0].gpu_busy = {true, true, true, false, false, false, false, false};  // fragments
  busy.hosts[2].gpu_busy = {true, false, true, false, true, false, true, false};
  std::vector<Case> cases = {
      {Cluster("switch:2 node:4 gpu:8 nic:4"), "tp=8", 32},
      {busy, "tp=4", 16},
      {busy, "tp=2,pp=2", 8},
      {Recorded("mpibind/g4dnmetal.xml", 2), "tp=4", 8},
      {Recorded("open-mpi-hwloc/power8gpudistances.xml", 3), "tp=2", 6},
      {Recorded("mpibind/coral-lassen.xml", 4), "tp=2,pp=2", 8},
  };
  for (const Case& k : cases) {
    const JobRequest r = Job(k.ranks, k.layout);
    auto ours = Place(r, k.cluster);
    auto ompi = PlaceLikeOpenMpiBySlot(r, k.cluster);
    ASSERT_TRUE(ours.ok() && ompi.ok()) << k.layout;
    const StepModel a = ModelStep(*ours, k.cluster, r), b = ModelStep(*ompi, k.cluster, r);
    EXPECT_LE(a.total_seconds(), b.total_seconds() * (1 + 1e-12)) << k.layout;
    EXPECT_LE(a.hosts, b.hosts) << k.layout;
  }
}

// Exhaustive search over every assignment of ranks to the cluster's GPUs
// that uses no more hosts than the fewest that can hold the job (what the
// compact preset promises: one host if the job fits, else the fewest).
double BestByEnumeration(const ClusterTopology& c, const JobRequest& r) {
  std::vector<int> capacity;
  for (const auto& h : c.hosts) capacity.push_back(static_cast<int>(h.topology->gpus.size()));
  std::sort(capacity.rbegin(), capacity.rend());
  size_t max_hosts = 0;
  for (int held = 0; held < r.ranks; held += capacity[max_hosts++]) {
  }
  std::vector<std::pair<int, int>> gpus;  // (host, gpu)
  for (size_t h = 0; h < c.hosts.size(); ++h)
    for (const Gpu& g : c.hosts[h].topology->gpus) gpus.push_back({static_cast<int>(h), g.index});
  double best = std::numeric_limits<double>::infinity();
  std::vector<bool> taken(gpus.size(), false);
  Placement p;
  p.ranks.resize(r.ranks);
  std::function<void(int)> dfs = [&](int rank) {
    if (rank == r.ranks) {
      std::set<std::string> hosts;
      for (const RankSlot& s : p.ranks) hosts.insert(s.host);
      if (hosts.size() > max_hosts) return;
      p.hosts.assign(hosts.begin(), hosts.end());
      best = std::min(best, ModelStep(p, c, r).total_seconds());
      return;
    }
    for (size_t i = 0; i < gpus.size(); ++i) {
      if (taken[i]) continue;
      taken[i] = true;
      p.ranks[rank].rank = rank;
      p.ranks[rank].host = c.hosts[gpus[i].first].name;
      p.ranks[rank].gpus = {gpus[i].second};
      const HostTopology& t = c.hosts[gpus[i].first].topology;
      const auto nic = NearestNicOf(t, t.gpus[gpus[i].second]);  // as the engine would send
      p.ranks[rank].nic = nic ? t.nics[nic->nic].name : "";
      dfs(rank + 1);
      taken[i] = false;
    }
  };
  dfs(0);
  return best;
}

TEST(PlacementEngine, EqualsExhaustiveSearchOnSmallRecordedClusters) {
  struct Case {
    const char* file;
    int hosts;
    const char* layout;
  };
  // Every instance here has at most 16 GPUs in all and few enough ranks that
  // the test can try every assignment of ranks to GPUs (8 ranks on 8 GPUs:
  // 40,320; 4 ranks on 16 GPUs: 43,680).
  struct Sized {
    Case c;
    int ranks;
  };
  const Sized big[] = {
      {{"open-mpi-hwloc/nvidiaDGX2.xml", 1, "tp=2"}, 4},
      {{"open-mpi-hwloc/nvidiaDGX2.xml", 1, "pp=4"}, 4},
      {{"mpibind/g4dnmetal.xml", 2, "tp=2"}, 4},
      {{"flux-core/corona.xml", 2, "tp=4"}, 4},
      {{"mpibind/coral-lassen.xml", 4, "tp=2,pp=2"}, 4},
  };
  for (const auto& [k, ranks] : big) {
    const ClusterTopology c = Recorded(k.file, k.hosts);
    const JobRequest r = Job(ranks, k.layout);
    auto p = Place(r, c);
    ASSERT_TRUE(p.ok()) << k.file;
    EXPECT_DOUBLE_EQ(ModelStep(*p, c, r).total_seconds(), BestByEnumeration(c, r))
        << k.file << " x" << k.hosts << " " << k.layout << " " << ranks << " ranks";
  }
  const Case cases[] = {
      {"open-mpi-hwloc/power8gpudistances.xml", 1, "tp=2"},
      {"mpibind/coral-lassen.xml", 1, "tp=2"},
      {"flux-sched/corona11.xml", 1, "tp=2"},
      {"mpibind/g4dnmetal.xml", 1, "tp=4"},
      {"mpibind/g4dnmetal.xml", 1, "tp=2,pp=2"},
      {"flux-core/tuo.SPX.xml", 1, "tp=2"},
      {"open-mpi-hwloc/power8gpudistances.xml", 2, "tp=2"},
      {"open-mpi-hwloc/power8gpudistances.xml", 2, "tp=2,pp=2"},
      {"mpibind/coral-lassen.xml", 2, "tp=4"},
      {"mpibind/cts1-pascal.xml", 4, "tp=2"},
      {"flux-core/tuo.SPX.xml", 2, "tp=2,pp=2"},
  };
  for (const auto& [file, hosts, layout] : cases) {
    const ClusterTopology c = Recorded(file, hosts);
    int total = 0;
    for (const auto& h : c.hosts) total += static_cast<int>(h.topology->gpus.size());
    const int ranks = std::min(total, 8);
    const JobRequest r = Job(ranks, layout);
    auto p = Place(r, c);
    ASSERT_TRUE(p.ok()) << file;
    EXPECT_DOUBLE_EQ(ModelStep(*p, c, r).total_seconds(), BestByEnumeration(c, r))
        << file << " x" << hosts << " " << layout;
  }
}

TEST(NarrowToSlurmShare, PlacementUsesOnlyTheShare) {
  const HostTopology host = testing::SyntheticHost(2, 4, 1, 2, 0);
  // The job holds cores 5-6 and GPUs 2 and 3, all on NUMA node 1.
  auto n = NarrowToSlurmShare(host, SlurmNodeShare{{5, 6}, std::vector<int>{2, 3}}, true, "node1");
  ASSERT_TRUE(n.ok());
  ClusterTopology c;
  c.hosts.push_back(ClusterHost{.name = "node1", .topology = n->topology, .gpu_busy = n->gpu_busy, .slots = 2});
  auto p = Place(SlotJob(2, false), c);
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::set<int> gpus, cpus;
  for (const RankSlot& r : p->ranks) {
    gpus.insert(r.gpus.begin(), r.gpus.end());
    cpus.insert(r.cpus.begin(), r.cpus.end());
  }
  EXPECT_EQ(gpus, (std::set<int>{2, 3}));
  EXPECT_EQ(cpus, (std::set<int>{5, 6}));

  // The slot filler (used when the engine cannot bind) honours it too.
  auto by_slot = PlaceBySlot(SlotJob(2, false), {ClusterHost{.name = "node1", .topology = n->topology, .gpu_busy = n->gpu_busy, .slots = 2}});
  ASSERT_TRUE(by_slot.ok());
  EXPECT_EQ(by_slot->ranks[0].gpus, (std::vector<int>{2}));
  EXPECT_EQ(by_slot->ranks[1].gpus, (std::vector<int>{3}));
}

}  // namespace
}  // namespace gpulaunch
