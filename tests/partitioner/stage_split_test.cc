#include "partitioner/stage_split.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>

namespace gpulaunch {
namespace {

TaskGraph Chain(const std::vector<double>& costs) {
  TaskGraph g;
  for (size_t i = 0; i < costs.size(); ++i) {
    g.layers.push_back(Layer{"l" + std::to_string(i), costs[i], 2 * costs[i], 100, 10});
  }
  return g;
}

// Every split of n layers into p non-empty stages, by brute force: the
// smallest bottleneck among those within the memory limit (infinity if none).
double BruteForceBottleneck(const TaskGraph& g, const SplitOptions& o) {
  const int n = static_cast<int>(g.layers.size());
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> first = {0};
  std::function<void(int, int)> go = [&](int stage, int start) {
    if (stage == o.stages - 1) {
      double worst = 0;
      first.push_back(n);
      for (int k = 0; k < o.stages; ++k) {
        if (o.memory_limit_bytes && StageMemory(g, o, first[k], first[k + 1]) > *o.memory_limit_bytes) {
          worst = std::numeric_limits<double>::infinity();
        }
        worst = std::max(worst, StageCost(g, o, first[k], first[k + 1], k));
      }
      first.pop_back();
      best = std::min(best, worst);
      return;
    }
    for (int e = start + 1; e <= n - (o.stages - stage - 1); ++e) {
      first.push_back(e);
      go(stage + 1, e);
      first.pop_back();
    }
  };
  go(0, 0);
  return best;
}

TEST(SplitBalanced, MatchesBruteForceOnRandomInstances) {
  std::mt19937 rng(20261129);
  int infeasible = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 16);
    const int p = 1 + static_cast<int>(rng() % std::min(n, 6));
    TaskGraph g;
    for (int i = 0; i < n; ++i) {
      g.layers.push_back(Layer{"l" + std::to_string(i), static_cast<double>(1 + rng() % 50),
                               static_cast<double>(rng() % 100), static_cast<int64_t>(rng() % 1000),
                               static_cast<int64_t>(1 + rng() % 500)});
    }
    SplitOptions o;
    o.stages = p;
    o.training = trial % 2 == 0;
    o.activations_in_flight = 1 + static_cast<int>(rng() % 4);
    if (trial % 3 != 0) o.memory_limit_bytes = 500 + static_cast<int64_t>(rng() % 4000);
    if (trial % 4 == 1) {
      for (int b = 0; b + 1 < p; ++b) o.boundary_bandwidth.push_back(1.0 + rng() % 20);
    }
    const double brute = BruteForceBottleneck(g, o);
    auto split = SplitBalanced(g, o);
    if (brute == std::numeric_limits<double>::infinity()) {
      ++infeasible;
      ASSERT_FALSE(split.ok()) << "trial " << trial;
      EXPECT_EQ(split.status().code(), StatusCode::kInfeasible);
      continue;
    }
    ASSERT_TRUE(split.ok()) << "trial " << trial << ": " << split.status().message();
    EXPECT_EQ(split->bottleneck, brute) << "trial " << trial;
    ASSERT_EQ(static_cast<int>(split->first_layer.size()), p + 1);
    EXPECT_EQ(split->first_layer.front(), 0);
    EXPECT_EQ(split->first_layer.back(), n);
    for (int k = 0; k < p; ++k) {
      EXPECT_LT(split->first_layer[k], split->first_layer[k + 1]) << "empty stage in trial " << trial;
      if (o.memory_limit_bytes) {
        EXPECT_LE(split->stage_memory[k], *o.memory_limit_bytes);
      }
    }
    // Deterministic: the same input gives the same split.
    EXPECT_EQ(SplitBalanced(g, o)->first_layer, split->first_layer);
  }
  EXPECT_GT(infeasible, 10);  // the memory limits do bite in some trials
}

TEST(SplitBalanced, BeatsUniformOnSkewedLayers) {
  // One heavy layer at the end: uniform puts it with others.
  const TaskGraph g = Chain({1, 1, 1, 1, 1, 1, 1, 9});
  SplitOptions o;
  o.stages = 2;
  auto uniform = SplitUniform(g, o);
  auto balanced = SplitBalanced(g, o);
  ASSERT_TRUE(uniform.ok() && balanced.ok());
  EXPECT_EQ(uniform->first_layer, (std::vector<int>{0, 4, 8}));
  EXPECT_EQ(balanced->first_layer, (std::vector<int>{0, 7, 8}));
  EXPECT_EQ(balanced->bottleneck, 27);  // (9) x 3 for forward + backward
  EXPECT_EQ(uniform->bottleneck, 36);
}

TEST(SplitBalanced, TiesGoToTheEarliestBoundaries) {
  const TaskGraph g = Chain({1, 2, 1, 2});
  SplitOptions o;
  o.stages = 2;
  o.training = false;
  // {1,2 | 1,2} and {1,2,1 | 2}? bottleneck 3 vs 4: only the first. With all
  // layers equal, several splits tie: the earliest boundary wins.
  EXPECT_EQ(SplitBalanced(g, o)->first_layer, (std::vector<int>{0, 2, 4}));
  const TaskGraph flat = Chain({1, 1, 1, 1, 1});
  o.stages = 3;  // bottleneck 2 by {1 | 2 | 2}, {2 | 1 | 2}, {2 | 2 | 1}
  EXPECT_EQ(SplitBalanced(flat, o)->first_layer, (std::vector<int>{0, 1, 3, 5}));
}

TEST(SplitBalanced, CommunicationMovesTheCut) {
  // Layer 1's output is huge: cutting after it costs more than cutting after layer 2.
  TaskGraph g = Chain({4, 4, 4, 4});
  g.layers[1].activation_bytes = 1000;
  SplitOptions o;
  o.stages = 2;
  o.training = false;
  EXPECT_EQ(SplitBalanced(g, o)->first_layer, (std::vector<int>{0, 2, 4}));
  o.boundary_bandwidth = {100};
  auto with_comm = SplitBalanced(g, o);
  ASSERT_TRUE(with_comm.ok());
  // Cutting after layer 1 now costs 8 + 1000 / 100 = 18; after layer 0 the
  // stages cost 4 + 10 / 100 and 12.
  EXPECT_EQ(with_comm->first_layer, (std::vector<int>{0, 1, 4}));
  EXPECT_EQ(with_comm->bottleneck, 12);
}

TEST(SplitBalanced, MemoryErrorsNameTheCause) {
  TaskGraph g = Chain({1, 1, 1});
  g.layers[1].param_bytes = 5000;
  SplitOptions o;
  o.stages = 2;
  o.memory_limit_bytes = 1000;
  auto too_big = SplitBalanced(g, o);
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), StatusCode::kInfeasible);
  EXPECT_NE(too_big.status().message().find("layer 1 (l1) alone needs 5010 bytes"), std::string::npos)
      << too_big.status().message();
  g.layers[1].param_bytes = 950;  // fits alone (960), but not with a neighbour (1070)
  auto too_few = SplitBalanced(g, o);
  ASSERT_FALSE(too_few.ok());
  EXPECT_NE(too_few.status().message().find("use more stages"), std::string::npos);
  o.stages = 3;
  EXPECT_TRUE(SplitBalanced(g, o).ok());
}

TEST(SplitBalanced, BadRequests) {
  const TaskGraph g = Chain({1, 1});
  SplitOptions o;
  o.stages = 3;
  auto empty_stage = SplitBalanced(g, o);
  ASSERT_FALSE(empty_stage.ok());
  EXPECT_NE(empty_stage.status().message().find("use at most 2 stages"), std::string::npos);
  o.stages = 0;
  EXPECT_EQ(SplitUniform(g, o).status().code(), StatusCode::kInvalidArgument);
  o.stages = 2;
  o.boundary_bandwidth = {1, 2};
  EXPECT_EQ(SplitBalanced(g, o).status().code(), StatusCode::kInvalidArgument);
  TaskGraph negative = Chain({1, -1});
  o.boundary_bandwidth.clear();
  auto neg = SplitBalanced(negative, o);
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("layer 1 (l1)"), std::string::npos);
  EXPECT_FALSE(SplitBalanced(TaskGraph{}, o).ok());
}

TEST(TransformerTaskGraph, ShapesAndCosts) {
  TransformerShape s;  // GPT-2 small
  const TaskGraph g = TransformerTaskGraph(s);
  ASSERT_EQ(g.layers.size(), 2u + 2 * 12);
  int64_t params = 0;
  for (const Layer& l : g.layers) params += l.param_bytes;
  EXPECT_NEAR(static_cast<double>(params) / 4, 124e6, 2e6);  // GPT-2 small: 124M parameters
  EXPECT_EQ(g.layers[1].name, "block0.attention");
  EXPECT_GT(g.layers[2].forward_cost, g.layers[1].forward_cost);  // MLP 16h^2 > attention 8h^2 + 4sh at h=768, s=1024
  EXPECT_EQ(g.layers[3].backward_cost, 2 * g.layers[3].forward_cost);
}

}  // namespace
}  // namespace gpulaunch
