#include "launcher/check/linkcheck/leaf_inference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

namespace gpulaunch {
namespace {

// A two-tier network, simulated: hosts under `leaf_of`, each host port
// `port` GB/s, each leaf's uplink `uplink` GB/s per direction, shared by the
// flows of a round that cross it as TCP shared it on the rig: unevenly (one
// flow of a group gets 1.4 times the even share), the last 1/k of the link.
// Every flow moves 1 GB from the round's start: it ends when its rate says.
std::vector<std::vector<ConcurrentFlow>> Simulate(const std::vector<int>& leaf_of, double port, double uplink) {
  const int n = static_cast<int>(leaf_of.size());
  std::vector<std::vector<ConcurrentFlow>> rounds;
  for (int k = 1; k < n; ++k) {
    const auto pairs = ShiftRound(n, k);
    std::map<int, int> up, down;
    for (auto [a, b] : pairs)
      if (leaf_of[a] != leaf_of[b]) ++up[leaf_of[a]], ++down[leaf_of[b]];
    std::vector<ConcurrentFlow> round;
    std::set<int> winner_taken;  // leaves whose up group has its fast flow
    for (auto [a, b] : pairs) {
      ConcurrentFlow f{a, b, port, port, true};
      if (leaf_of[a] != leaf_of[b]) {
        f.alone_gbyte_per_s = std::min(port, uplink);
        f.together_gbyte_per_s = std::min(port, uplink / std::max(up[leaf_of[a]], down[leaf_of[b]]));
        if (up[leaf_of[a]] > 1 && winner_taken.insert(leaf_of[a]).second) {
          f.together_gbyte_per_s *= 1.4;
        }
      }
      f.bytes = 1e9;
      f.ended_s = 1 / f.together_gbyte_per_s;
      round.push_back(f);
    }
    rounds.push_back(round);
  }
  return rounds;
}

TEST(LeafInference, ShiftRoundsSendAndReceiveOneFlowPerHost) {
  const auto r = ShiftRound(4, 2);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0], std::make_pair(0, 2));
  EXPECT_EQ(r[3], std::make_pair(3, 1));
}

TEST(LeafInference, FindsTheLeavesBehindASlowUplink) {
  // The placement runs of issue 44: 80 Mbit/s ports, a 20 Mbit/s uplink.
  const auto leaves = InferLeaves(4, Simulate({0, 0, 1, 1}, 0.01, 0.0025));
  EXPECT_EQ(leaves.leaf_of, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(leaves.disagreeing, 0);
  EXPECT_TRUE(leaves.exhaustive);
  EXPECT_DOUBLE_EQ(leaves.uplink_gbyte_per_s[0], 0.0025);
}

TEST(LeafInference, FindsAnUplinkFasterThanAPortButSlowerThanTwo) {
  // Alone, every pair gets the port's rate: only flows at once show the uplink.
  const auto leaves = InferLeaves(4, Simulate({0, 1, 0, 1}, 0.01, 0.0105));
  EXPECT_EQ(leaves.leaf_of, (std::vector<int>{0, 1, 0, 1}));  // interleaved host order
  EXPECT_DOUBLE_EQ(leaves.uplink_gbyte_per_s[1], 0.0105);
  // Where two flows' uneven shares leave the faster above 0.75 of its alone
  // rate, the uplink is not seen (the limit the header states).
  EXPECT_EQ(InferLeaves(4, Simulate({0, 1, 0, 1}, 0.01, 0.012)).leaves, 1);
}

TEST(LeafInference, AnUplinkThatIsNoBottleneckIsOneLeaf) {
  const auto leaves = InferLeaves(4, Simulate({0, 0, 1, 1}, 0.01, 0.04));
  EXPECT_EQ(leaves.leaves, 1);
  EXPECT_EQ(leaves.uplink_gbyte_per_s[0], 0);
}

TEST(LeafInference, ManyHostsAreSearchedLocallyAndSayHowWellTheyFit) {
  // Two leaves of 6: the local search finds them.
  const std::vector<int> two = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1};
  const auto found = InferLeaves(12, Simulate(two, 0.01, 0.01));
  EXPECT_FALSE(found.exhaustive);
  EXPECT_EQ(found.leaf_of, two);
  EXPECT_EQ(found.disagreeing, 0);
  // Four leaves of 3 over 12 hosts: whatever it ends on, the count of flows
  // it does not explain is the truth about its fit (linkcheck warns on it).
  const std::vector<int> four = {0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3};
  const auto rounds = Simulate(four, 0.01, 0.01);
  const auto local = InferLeaves(12, rounds);
  EXPECT_EQ(local.leaf_of == four, local.disagreeing == 0);
  EXPECT_EQ(InferLeaves(9, Simulate({0, 0, 0, 1, 1, 1, 2, 2, 2}, 0.01, 0.01)).leaf_of,
            (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 2}));  // exhaustive up to kExhaustiveHosts
}

TEST(LeafInference, AnUplinkIsWhatItsFlowsMovedTogetherNeverMore) {
  // The shape of a CI run's round 2 on the 19.1 Mbit/s (payload) uplink: each
  // flow moves 10 MiB (2 of warm-up), the link busy from 0 until the last
  // ends. node3's warm-up was starved, so its timed part began late and its
  // rate (11.1 Mbit/s) was above half the link: the slowest rate times two
  // said 22.2 Mbit/s. What the two moved over their span is the link's rate.
  constexpr double kMbit = 1e-3 / 8;  // GB/s
  const double uplink = 19.1 * kMbit, bytes = 10.0 * (1 << 20), span = 2 * bytes / (uplink * 1e9);
  auto rounds = Simulate({0, 0, 1, 1}, 76.5 * kMbit, uplink);
  for (ConcurrentFlow& f : rounds[1]) {
    if (f.from < 2) continue;  // node3 -> node1 and node4 -> node2: up leaf 2
    f.bytes = bytes;
    f.together_gbyte_per_s = (f.from == 2 ? 11.1 : 11.8) * kMbit;
    f.ended_s = f.from == 2 ? span : span - 0.6;
  }
  const auto leaves = InferLeaves(4, rounds);
  EXPECT_EQ(leaves.leaf_of, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_NEAR(leaves.uplink_gbyte_per_s[1] / kMbit, 19.1, 1e-9);
  // One flow beginning late shortens nothing: the span runs from the first
  // one's start.
  rounds[1][3].began_s = 0.5;
  EXPECT_NEAR(InferLeaves(4, rounds).uplink_gbyte_per_s[1] / kMbit, 19.1, 1e-9);
}

TEST(LeafInference, FlowsThatDidNotOverlapTheirRoundDoNotCount) {
  auto rounds = Simulate({0, 0, 1, 1}, 0.01, 0.0025);
  const auto all = InferLeaves(4, rounds);
  for (auto& round : rounds)
    for (ConcurrentFlow& f : round) f.concurrent = false;
  const auto none = InferLeaves(4, rounds);
  EXPECT_EQ(all.flows_used, 12);
  EXPECT_EQ(all.leaf_of, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(none.flows_used, 0);
  EXPECT_EQ(none.leaves, 1);  // nothing seen: nothing inferred
}

}  // namespace
}  // namespace gpulaunch
