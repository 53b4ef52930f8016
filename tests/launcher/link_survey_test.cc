#include "launcher/check/linkcheck/link_survey.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

LinkResult Flow(const std::string& from, const std::string& to, double mib_per_s, double late_ms = -1) {
  LinkResult r;
  r.from = from;
  r.to = to;
  r.rtt_median_us = 40;
  r.bandwidth.push_back({1 << 20, 8 << 20, 8.0 / mib_per_s, 2 << 20});
  r.started_late_ms = late_ms;
  if (late_ms >= 0) r.ended_ms = late_ms + r.bandwidth.back().seconds * 1000;
  return r;
}

LinkSurvey TwoLeaves() {
  LinkSurvey s;
  s.hosts = {"n1", "n2", "n3", "n4"};
  // Alone: 10 MiB/s inside a leaf, 2.5 across.
  for (auto [a, b] : std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}}) {
    s.pairs.push_back(Flow(s.hosts[a], s.hosts[b], a / 2 == b / 2 ? 10 : 2.5));
  }
  s.shared_memory.push_back(Flow("n1", "n1", 5000));
  // Round 2: n1->n3 and n2->n4 share leaf 1's uplink, n3->n1 and n4->n2 leaf 2's.
  s.rounds.push_back({2, {Flow("n1", "n3", 1.25, 3), Flow("n2", "n4", 1.25, 2), Flow("n3", "n1", 1.3, 1),
                          Flow("n4", "n2", 1.2, 0)}});
  return s;
}

TEST(LinkSurvey, FlowsCarryTheirAloneRateFromEitherDirection) {
  const auto rounds = ConcurrentFlows(TwoLeaves());
  ASSERT_EQ(rounds.size(), 1u);
  ASSERT_EQ(rounds[0].size(), 4u);
  const ConcurrentFlow& back = rounds[0][2];  // n3 -> n1: only n1 -> n3 was measured alone
  EXPECT_EQ(back.from, 2);
  EXPECT_EQ(back.to, 0);
  EXPECT_NEAR(back.alone_gbyte_per_s, 2.5 * (1 << 20) / 1e9, 1e-12);
  EXPECT_TRUE(back.concurrent);
  // Its whole bandwidth half: from 1 ms after the round's start, the timed
  // 8 MiB and the 2 MiB of warm-up before them.
  EXPECT_DOUBLE_EQ(back.began_s, 0.001);
  EXPECT_NEAR(back.ended_s, 0.001 + 8.0 / 1.3, 1e-12);
  EXPECT_EQ(back.bytes, 10.0 * (1 << 20));
}

TEST(LinkSurvey, AFlowThatBeganLateOrHadNoStartTimeIsNotAtOnce) {
  EXPECT_TRUE(BeganWithItsRound(Flow("a", "b", 1, 100)));    // 100 ms late in 8 s
  EXPECT_FALSE(BeganWithItsRound(Flow("a", "b", 1, 2000)));  // 2 s late in 8 s
  EXPECT_FALSE(BeganWithItsRound(Flow("a", "b", 1)));        // no start time
  LinkResult endless = Flow("a", "b", 1, 0);
  endless.ended_ms = -1;  // a client that did not say when it ended
  EXPECT_FALSE(BeganWithItsRound(endless));
  LinkResult failed = Flow("a", "b", 1, 0);
  failed.error = "refused";
  EXPECT_FALSE(BeganWithItsRound(failed));
}

TEST(LinkSurvey, TheTableHoldsPairsSharedMemoryAndLeaves) {
  const LinkSurvey s = TwoLeaves();
  const InferredLeaves leaves = InferLeaves(4, ConcurrentFlows(s));
  const LinkTable t = SurveyTable(s, &leaves, "2026-12-05T08:00:00Z");
  EXPECT_EQ(t.pairs.size(), 6u);
  EXPECT_NEAR(t.Pair("n3", "n4")->gbyte_per_s, 10.0 * (1 << 20) / 1e9, 1e-12);
  EXPECT_EQ(t.Pair("n1", "n2")->latency_us, 20);  // one way: half the round trip
  EXPECT_EQ(t.shared_memory.count("n1"), 1u);
  ASSERT_EQ(t.leaves.size(), 2u);
  EXPECT_EQ(t.leaves[0].name, "leaf1");
  EXPECT_EQ(t.leaves[0].hosts, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(t.leaves[1].hosts, (std::vector<std::string>{"n3", "n4"}));
  // Leaves that mispredict more than a tenth of the flows are not saved.
  InferredLeaves misfit = leaves;
  misfit.disagreeing = 1;  // of 4
  EXPECT_FALSE(LeavesFit(misfit));
  EXPECT_TRUE(SurveyTable(s, &misfit, "").leaves.empty());
  // Without rounds there are no leaves; a failed pair is no measurement.
  LinkSurvey plain = s;
  plain.rounds.clear();
  plain.pairs[0].error = "no route";
  const LinkTable u = SurveyTable(plain, nullptr, "");
  EXPECT_TRUE(u.leaves.empty());
  EXPECT_EQ(u.Pair("n1", "n2"), nullptr);
}

TEST(LinkSurvey, TheTextSaysWhatEachFlowGotAndTheLeaves) {
  const LinkSurvey s = TwoLeaves();
  const InferredLeaves leaves = InferLeaves(4, ConcurrentFlows(s));
  std::string text;
  for (const std::string& line : DescribeSurvey(s, &leaves)) text += line + "\n";
  EXPECT_NE(text.find("shared memory on n1: "), std::string::npos) << text;
  EXPECT_NE(text.find("at once, round 2: n1->n3 "), std::string::npos) << text;
  EXPECT_NE(text.find("leaves: leaf1: n1,n2 (uplink "), std::string::npos) << text;
  EXPECT_EQ(text.find("warning"), std::string::npos) << text;
  const InferredLeaves none;
  std::string missing;
  for (const std::string& line : DescribeSurvey(s, &none)) missing += line + "\n";
  EXPECT_NE(missing.find("leaves: not inferred"), std::string::npos) << missing;
}

}  // namespace
}  // namespace gpulaunch
