// The hierarchical deterministic reduction (runtime/hierarchical_reduce.h) on
// the in-process communicator: the one-rank bits for every rank count, host
// shape and rank -> host mapping, and no more bytes between hosts than a
// ring allreduce sends.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>

#include "runtime/deterministic_reducer.h"
#include "runtime/thread_communicator.h"
#include "tests/runtime/local_reducer_conformance.h"
#include "tests/runtime/reduction_test_support.h"

namespace gpulaunch::rt {
namespace {

using namespace reduction_test;  // NOLINT: the helpers of this test family

TEST(PureNodes, PartitionTheTreeIntoMaximalOneHostNodes) {
  for (const auto& host_of : std::vector<std::vector<int>>{{0, 0, 1, 1}, {0, 1, 0, 1}, {0, 0, 0, 1, 1, 2, 2, 3},
                                                           {2, 0, 1, 0, 2}, {0}}) {
    for (int leaves : {1, 3, 7, 64, 100}) {
      const auto pure = PureNodes(leaves, host_of);
      int next = 0;
      for (const auto& [node, host] : pure) {
        EXPECT_EQ(node.lo, next) << Describe(host_of) << " leaves=" << leaves;  // left to right, no gap
        next = node.hi;
        EXPECT_TRUE(IsTreeNode(node, leaves));
      }
      EXPECT_EQ(next, leaves);
      // Maximal: no two neighbours of one host are siblings.
      for (size_t k = 0; k + 1 < pure.size(); ++k) {
        const TreeNode& a = pure[k].first;
        const TreeNode& b = pure[k + 1].first;
        const bool siblings = IsTreeNode({a.lo, b.hi}, leaves) && TreeNode{a.lo, b.hi}.Mid() == a.hi;
        EXPECT_FALSE(siblings && pure[k].second == pure[k + 1].second) << Describe(host_of) << " leaves=" << leaves;
      }
    }
  }
  // p ranks on each of h hosts in host order, 64 leaves: one node a host.
  EXPECT_EQ(PureNodes(64, {0, 0, 1, 1, 2, 2, 3, 3}).size(), 4u);
}

TEST(LocalReducer, TheCpuImplementationPassesTheConformanceSuite) {
  testing::RunLocalReducerConformance([] { return MakeCpuLocalReducer(); });
}

// A local step that gets one node wrong: the conformance suite and the
// reduction's bits must both notice (the seam is tested, not just called).
class OffByOneUlpReducer : public LocalReducer {
 public:
  std::string Name() const override { return "broken"; }
  Status Reduce(const LocalStep& step, const LeafSum<float>& mine, float* out, ReduceTraffic& traffic) override {
    GL_RETURN_IF_ERROR(cpu_->Reduce(step, mine, out, traffic));
    if (!step.host_nodes.empty()) out[0] = std::nextafter(out[0], 1e30f);
    return Status::Ok();
  }
  Status Reduce(const LocalStep& step, const LeafSum<double>& mine, double* out, ReduceTraffic& traffic) override {
    return cpu_->Reduce(step, mine, out, traffic);
  }

 private:
  std::unique_ptr<LocalReducer> cpu_ = MakeCpuLocalReducer();
};

TEST(LocalReducer, TheReducerUsesTheGivenImplementation) {
  const std::vector<int> host_of = {0, 0, 1, 1};
  const size_t count = 16;
  std::vector<std::vector<float>> out(4, std::vector<float>(count));
  RunOnThreads(4, [&](Communicator& c) {
    ReduceConfig config{64, ElementType::kFloat32, ReduceAlgorithm::kHierarchical, host_of};
    config.local_reducer = std::make_shared<OffByOneUlpReducer>();
    auto reducer = DeterministicReducer::Create(c, config);
    ASSERT_TRUE(reducer.ok());
    auto sum = LeafSum<float>::ForRank(count, 64, c.rank(), 4);
    for (int l = sum.first_leaf(); l < sum.end_leaf(); ++l) ASSERT_TRUE(sum.AddLeaf(Leaf<float>(l, count).data()).ok());
    ASSERT_TRUE(reducer->Allreduce(sum, out[c.rank()].data()).ok());
  });
  EXPECT_NE(std::memcmp(out[0].data(), OneRank<float>(64, count).data(), count * sizeof(float)), 0);
}

TEST(HierarchicalExact, SameBitsAsTheFlatExactSumAndEachHostsAccumulatorsCrossOnce) {
  const size_t count = 40;
  auto value = [](int rank, size_t i) { return std::ldexp(1.0 + double((rank * 13 + i) % 7), int((rank * 31 + i * 3) % 200) - 100); };
  for (const auto& host_of : std::vector<std::vector<int>>{{0, 0, 1, 1}, {0, 1, 0, 1, 1}, {0, 0, 0, 1, 1, 2, 2, 3}}) {
    const int world = static_cast<int>(host_of.size());
    std::vector<double> flat(count);
    RunOnThreads(world, [&](Communicator& c) {
      std::vector<Superaccumulator> mine(count);
      for (size_t i = 0; i < count; ++i) mine[i].Add(value(c.rank(), i));
      std::vector<double> out(count), hier(count);
      ASSERT_TRUE(ExactAllreduce(c, mine, out.data()).ok());
      ASSERT_TRUE(ExactAllreduce(c, mine, hier.data(), host_of).ok());
      EXPECT_EQ(std::memcmp(out.data(), hier.data(), count * sizeof(double)), 0) << Describe(host_of);
    });
  }
  // 2 hosts x 2 ranks: a host sends the other host's half of its merged
  // accumulators once (552 bytes each), then its finished half, rounded.
  std::vector<ReduceTraffic> traffic(4);
  RunOnThreads(4, [&](Communicator& c) {  // hosts {0,1} and {2,3}
    std::vector<Superaccumulator> mine(count);
    for (size_t i = 0; i < count; ++i) mine[i].Add(value(c.rank(), i));
    std::vector<double> out(count);
    const auto hierarchy = RankHierarchy::Make({0, 0, 1, 1});
    ASSERT_TRUE(hierarchy.ok());
    ASSERT_TRUE(HierarchicalExactAllreduce(c, *hierarchy, mine, out.data(), traffic[c.rank()]).ok());
  });
  const size_t wire = Superaccumulator::kWireWords * sizeof(int64_t);
  EXPECT_EQ(traffic[0].inter_host_bytes + traffic[1].inter_host_bytes, count / 2 * wire + count / 2 * sizeof(double));
}

TEST(HostIndices, NumberHostsByFirstAppearance) {
  EXPECT_EQ(HostIndices({"node3", "node1", "node3", "node2"}), (std::vector<int>{0, 1, 0, 2}));
  EXPECT_EQ(HostIndices({}), std::vector<int>{});
}

TEST(HierarchicalAllreduce, OneRankBitsForEveryHostShape) {
  const std::vector<std::vector<int>> shapes = {
      {0, 1},
      {0, 0, 1},
      {0, 1, 1},
      {0, 0, 1, 1},
      {0, 1, 0, 1},
      {0, 0, 0, 1, 1, 2, 2, 3},  // 3+2+2+1
      {3, 2, 2, 1, 1, 0, 0, 0},  // 3+2+2+1, hosts named the other way round
      {0, 1, 2, 0, 1, 2, 0},
      {0, 0, 0, 0, 0, 0, 0, 1},
      {0, 1, 2, 3, 4, 5, 6, 7},
  };
  for (int leaves : {64, 7, 3}) {
    const size_t count = 1001;
    const auto want = OneRank<float>(leaves, count);
    for (const auto& host_of : shapes) {
      const Outcome run = AllreduceOn(host_of, leaves, count, ReduceAlgorithm::kHierarchical);
      ExpectOneRankBits(run, want, Describe(host_of) + " leaves=" + std::to_string(leaves));
      EXPECT_NE(run.plans[0].find("algo=hier-rs-ag"), std::string::npos) << run.plans[0];
    }
  }
}

TEST(HierarchicalAllreduce, FewerElementsThanRanksAndEmptyInputs) {
  for (size_t count : {0, 1, 3}) {
    const auto want = OneRank<float>(16, count);
    ExpectOneRankBits(AllreduceOn({0, 0, 0, 1, 1, 2, 2, 3}, 16, count, ReduceAlgorithm::kHierarchical), want,
                      "count=" + std::to_string(count));
  }
}


TEST(HierarchicalAllreduce, OneRankBitsForEveryMappingOfEightRanksOntoTwoAndFourHosts) {
  const size_t count = 67;
  const int leaves = 64;
  const auto want = OneRank<float>(leaves, count);
  for (int hosts : {2, 4}) {
    int mappings = 0;
    ForEveryMapping(8, hosts, [&](const std::vector<int>& host_of) {
      ++mappings;
      ExpectOneRankBits(AllreduceOn(host_of, leaves, count, ReduceAlgorithm::kHierarchical), want,
                        Describe(host_of));
    });
    EXPECT_EQ(mappings, hosts == 2 ? 127 : 1701);  // Stirling numbers S(8,2), S(8,4)
  }
}

TEST(HierarchicalReduce, ReduceAndReduceScatterAgreeWithTheOneRankResult) {
  const size_t count = 513;
  const std::vector<int> host_of = {1, 1, 0, 2, 0};
  const auto want = OneRank<double>(16, count);
  RunOnThreads(5, [&](Communicator& c) {
    auto reducer = DeterministicReducer::Create(c, {16, ElementType::kFloat64, ReduceAlgorithm::kAuto, host_of});
    ASSERT_TRUE(reducer.ok());
    EXPECT_EQ(reducer->config().algorithm, ReduceAlgorithm::kHierarchical);
    auto sum = LeafSum<double>::ForRank(count, 16, c.rank(), c.size());
    for (int l = sum.first_leaf(); l < sum.end_leaf(); ++l) ASSERT_TRUE(sum.AddLeaf(Leaf<double>(l, count).data()).ok());
    std::vector<double> full(count, -1);
    ASSERT_TRUE(reducer->Reduce(sum, c.rank() == 3 ? full.data() : nullptr, 3).ok());
    if (c.rank() == 3) {
      EXPECT_EQ(std::memcmp(full.data(), want.data(), count * sizeof(double)), 0);
    }
    const auto [lo, hi] = ElementRange(count, c.rank(), c.size());
    std::vector<double> part(hi - lo);
    ASSERT_TRUE(reducer->ReduceScatter(sum, part.data()).ok());
    EXPECT_EQ(std::memcmp(part.data(), want.data() + lo, part.size() * sizeof(double)), 0);
  });
}

TEST(HierarchicalReducer, RanksThatDisagreeAboutHostsOrAlgorithmRefuse) {
  RunOnThreads(4, [](Communicator& c) {
    // Rank 3 believes it shares rank 2's host; the others do not.
    const std::vector<int> host_of = c.rank() == 3 ? std::vector<int>{0, 0, 1, 1} : std::vector<int>{0, 0, 1, 2};
    auto reducer = DeterministicReducer::Create(c, {64, ElementType::kFloat32, ReduceAlgorithm::kAuto, host_of});
    ASSERT_FALSE(reducer.ok());
    EXPECT_NE(reducer.status().message().find("refusing to reduce"), std::string::npos);
  });
  RunOnThreads(2, [](Communicator& c) {
    const auto algorithm = c.rank() == 0 ? ReduceAlgorithm::kFlat : ReduceAlgorithm::kHierarchical;
    auto reducer = DeterministicReducer::Create(c, {64, ElementType::kFloat32, algorithm, {0, 1}});
    EXPECT_FALSE(reducer.ok());
  });
  RunOnThreads(2, [](Communicator& c) {
    auto reducer = DeterministicReducer::Create(c, {64, ElementType::kFloat32, ReduceAlgorithm::kAuto, {0, 1, 2}});
    ASSERT_FALSE(reducer.ok());
    EXPECT_NE(reducer.status().message().find("names 3 ranks, the communicator has 2"), std::string::npos);
  });
}

// A reducer told nothing climbs its communicator's placement (libgpurt's
// Runtime sets the world's, and every split inherits it): the same plan and
// the same bytes between hosts as one given the host map; an explicit map,
// or kFlat, still wins.
TEST(HierarchicalReducer, ADefaultReducerClimbsTheCommunicatorsPlacement) {
  const std::vector<int> hosts = {0, 0, 1, 1, 2, 2}, switches = {0, 0, 0, 0, 1, 1};
  const int world = static_cast<int>(hosts.size());
  const size_t count = 1000;
  struct Run {
    std::vector<std::string> plans;
    std::vector<uint64_t> between_hosts;
    std::vector<std::vector<float>> results;
  };
  // config: what Create is given; through_split: over an identity split of the placed world.
  const auto run = [&](const ReduceConfig& config, bool through_split) {
    Run out{std::vector<std::string>(world), std::vector<uint64_t>(world),
            std::vector<std::vector<float>>(world, std::vector<float>(count))};
    RunOnThreads(world, [&](Communicator& placed_world) {
      ASSERT_TRUE(placed_world.SetPlacement({hosts, switches}).ok());
      std::unique_ptr<Communicator> split;
      if (through_split) {
        auto s = placed_world.Split(0, placed_world.rank());
        ASSERT_TRUE(s.ok() && *s);
        split = std::move(s).value();
        EXPECT_EQ(split->placement().host_of_rank, hosts);
      }
      Communicator& c = through_split ? *split : placed_world;
      auto reducer = DeterministicReducer::Create(c, config);
      ASSERT_TRUE(reducer.ok()) << reducer.status().ToString();
      auto sum = LeafSum<float>::ForRank(count, config.leaves, c.rank(), c.size());
      for (int l = sum.first_leaf(); l < sum.end_leaf(); ++l) ASSERT_TRUE(sum.AddLeaf(Leaf<float>(l, count).data()).ok());
      ASSERT_TRUE(reducer->Allreduce(sum, out.results[c.rank()].data()).ok());
      out.plans[c.rank()] = ReductionPlanText(reducer->config());
      out.between_hosts[c.rank()] = reducer->traffic().inter_host_bytes;
    });
    return out;
  };
  const Outcome told = AllreduceOn(hosts, 64, count, ReduceAlgorithm::kAuto, switches);
  const Outcome flat = AllreduceOn(hosts, 64, count, ReduceAlgorithm::kFlat, switches);
  uint64_t told_bytes = 0, flat_bytes = 0;
  for (int r = 0; r < world; ++r) {
    told_bytes += told.traffic[r].inter_host_bytes;
    flat_bytes += flat.traffic[r].inter_host_bytes;
  }
  ASSERT_LT(told_bytes, flat_bytes);
  for (const bool through_split : {false, true}) {
    SCOPED_TRACE(through_split ? "over a split of the placed world" : "over the placed world");
    const Run by_default = run({64, ElementType::kFloat32}, through_split);
    uint64_t bytes = 0;
    for (int r = 0; r < world; ++r) bytes += by_default.between_hosts[r];
    EXPECT_EQ(by_default.plans[0], told.plans[0]);
    EXPECT_EQ(bytes, told_bytes);
    EXPECT_EQ(by_default.results, told.results);
    // kFlat is the user's word: the flat plan and its bytes.
    const Run asked_flat = run({64, ElementType::kFloat32, ReduceAlgorithm::kFlat}, through_split);
    EXPECT_EQ(asked_flat.plans[0], flat.plans[0]);
    // So is an explicit map, whatever the placement says.
    const Run asked_map = run({64, ElementType::kFloat32, ReduceAlgorithm::kAuto, {0, 1, 0, 1, 0, 1}}, through_split);
    EXPECT_EQ(asked_map.plans[0], AllreduceOn({0, 1, 0, 1, 0, 1}, 64, count, ReduceAlgorithm::kAuto).plans[0]);
  }
}

TEST(HierarchicalReducer, HostLabelsDoNotMatterOnlyWhoSharesAHost) {
  const Outcome a = AllreduceOn({5, 5, 9, 9}, 64, 10, ReduceAlgorithm::kAuto);
  const Outcome b = AllreduceOn({0, 0, 1, 1}, 64, 10, ReduceAlgorithm::kAuto);
  EXPECT_EQ(a.plans[0], b.plans[0]);
  EXPECT_NE(a.plans[0], AllreduceOn({0, 1, 0, 1}, 64, 10, ReduceAlgorithm::kAuto).plans[0]);
  // One host, or none known: the flat algorithm, under its old plan text.
  EXPECT_EQ(AllreduceOn({4, 4}, 64, 10, ReduceAlgorithm::kAuto).plans[0],
            ReductionPlanText({64, ElementType::kFloat32}));
  EXPECT_NE(a.plans[0].find("algo=hier-rs-ag hosts=2 map="), std::string::npos) << a.plans[0];
  EXPECT_NE(AllreduceOn({0, 0, 1, 1}, 64, 10, ReduceAlgorithm::kFlat).plans[0].find("algo=tree-rs-ag"),
            std::string::npos);
}


// Issue 45's measurement of Open MPI's MPI_Allreduce on 4 hosts x 2 ranks:
// 1.51 payloads sent per host (interfaces' tx_bytes, 1-16 MiB).
constexpr double kOpenMpiPerHostPayloads4x2 = 1.51;

TEST(HierarchicalTraffic, EachHostSendsNoMoreThanARingAllreduce) {
  const size_t count = 1 << 16;
  const size_t payload = count * sizeof(float);
  for (int hosts : {2, 4}) {
    for (int per_host : {1, 2, 3, 4}) {
      std::vector<int> host_of;
      for (int h = 0; h < hosts; ++h) host_of.insert(host_of.end(), static_cast<size_t>(per_host), h);
      const std::string what = std::to_string(hosts) + " hosts x " + std::to_string(per_host) + " ranks";
      const Outcome hier = AllreduceOn(host_of, 64, count, ReduceAlgorithm::kHierarchical);
      const Outcome flat = AllreduceOn(host_of, 64, count, ReduceAlgorithm::kFlat);
      const double ring = 2.0 * (hosts - 1) / hosts;
      const auto hier_sent = InterHostPayloads(hier, host_of, payload);
      const auto flat_sent = InterHostPayloads(flat, host_of, payload);
      for (int h = 0; h < hosts; ++h) {
        EXPECT_LE(hier_sent[h], ring + 1e-3) << what << ", host " << h;
        if (hosts == 4 && per_host == 2) {
          EXPECT_LE(hier_sent[h], kOpenMpiPerHostPayloads4x2) << what;
        }
        // The flat algorithm sends every rank's nodes to every other rank:
        // at least p times the ring's figure, so the counter tells them apart.
        EXPECT_GE(flat_sent[h], per_host * ring - 1e-3) << what << ", host " << h;
      }
    }
  }
}

TEST(HierarchicalTraffic, UnevenHostsSendOneShareAPureNodePlusTheAllgather) {
  // 3+2+2+1 ranks, 64 leaves: hosts own leaves [0,24) [24,40) [40,56)
  // [56,64): 2, 2, 2 and 1 pure nodes. A host sends each other host's share
  // of its pure nodes, then its finished elements to each other host.
  const std::vector<int> host_of = {0, 0, 0, 1, 1, 2, 2, 3};
  const size_t count = 8000;
  const Outcome run = AllreduceOn(host_of, 64, count, ReduceAlgorithm::kHierarchical);
  const auto sent = InterHostPayloads(run, host_of, count * sizeof(float));
  const std::vector<int> pure_nodes = {2, 2, 2, 1};
  const std::vector<int> ranks = {3, 2, 2, 1};
  for (int h = 0; h < 4; ++h) {
    const double owned = ranks[h] / 8.0;  // of the elements, finished on this host
    EXPECT_NEAR(sent[h], pure_nodes[h] * (1 - owned) + owned * 3, 1e-3) << "host " << h;
  }
}

}  // namespace
}  // namespace gpulaunch::rt
