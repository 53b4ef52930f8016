#include "runtime/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace gpulaunch::rt {
namespace {

// Largest number of micro-batches whose forward has run but whose backward
// has not, per rank: the activations a rank must hold.
std::vector<int> PeakInFlight(const PipelineSchedule& s) {
  std::vector<int> peak(s.ranks, 0);
  for (int r = 0; r < s.ranks; ++r) {
    int live = 0;
    for (const PipeAction& a : s.actions[r]) {
      if (a.op == PipeOp::kForward) peak[r] = std::max(peak[r], ++live);
      if (a.op == PipeOp::kBackward) --live;
    }
  }
  return peak;
}

TEST(PipelineSchedule, EveryGeneratedScheduleIsSound) {
  int checked = 0;
  for (int p = 1; p <= 6; ++p) {
    for (int m = 1; m <= 12; ++m) {
      for (bool training : {false, true}) {
        auto g = MakeGPipe(p, m, training);
        ASSERT_TRUE(g.ok());
        ASSERT_TRUE(CheckSchedule(*g).ok()) << "gpipe p=" << p << " m=" << m << ": " << CheckSchedule(*g).message();
        ++checked;
      }
      auto f = Make1F1B(p, m);
      ASSERT_TRUE(f.ok());
      ASSERT_TRUE(CheckSchedule(*f).ok()) << "1f1b p=" << p << " m=" << m << ": " << CheckSchedule(*f).message();
      for (int v = 1; v <= 3 && m % p == 0; ++v) {
        auto i = MakeInterleaved1F1B(p, m, v);
        ASSERT_TRUE(i.ok());
        ASSERT_TRUE(CheckSchedule(*i).ok()) << "interleaved p=" << p << " m=" << m << " v=" << v << ": "
                                            << CheckSchedule(*i).message();
        ++checked;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 250);
}

TEST(PipelineSchedule, EachComputeExactlyOnceInDependencyOrder) {
  auto s = Make1F1B(4, 8);
  ASSERT_TRUE(s.ok());
  std::map<std::tuple<int, int, int>, int> count;  // (op, mb, stage)
  for (int r = 0; r < 4; ++r) {
    std::set<int> forwarded;
    for (const PipeAction& a : s->actions[r]) {
      if (a.op == PipeOp::kForward) forwarded.insert(a.microbatch);
      if (a.op == PipeOp::kBackward) {
        EXPECT_TRUE(forwarded.count(a.microbatch));
      }
      if (a.op == PipeOp::kForward || a.op == PipeOp::kBackward) ++count[{static_cast<int>(a.op), a.microbatch, a.stage}];
    }
  }
  EXPECT_EQ(count.size(), 2u * 8 * 4);
  for (const auto& [key, n] : count) EXPECT_EQ(n, 1);
}

TEST(PipelineSchedule, BubblesAsTheFormulasSay) {
  for (int p : {2, 4, 8}) {
    for (int m : {4, 8, 16, 32}) {
      const double formula = (p - 1.0) / (m + p - 1.0);
      EXPECT_NEAR(SimulateSchedule(*MakeGPipe(p, m, true), 1, 2).bubble_fraction, formula, 1e-12);
      EXPECT_NEAR(SimulateSchedule(*Make1F1B(p, m), 1, 2).bubble_fraction, formula, 1e-12);
      EXPECT_NEAR(SimulateSchedule(*MakeGPipe(p, m, false), 1, 0).bubble_fraction, formula, 1e-12);
      EXPECT_EQ(TheoreticalBubble(*Make1F1B(p, m)), formula);
      if (m % p == 0) {
        // Interleaving v chunks cuts the bubble v-fold: (p - 1) / (v m + p - 1).
        for (int v : {2, 4}) {
          auto s = MakeInterleaved1F1B(p, m, v);
          const double interleaved = (p - 1.0) / (v * m + p - 1.0);
          EXPECT_NEAR(SimulateSchedule(*s, 1, 1).bubble_fraction, interleaved, 1e-12) << p << " " << m << " " << v;
          EXPECT_LT(SimulateSchedule(*s, 1, 1).bubble_fraction, formula);
        }
      }
    }
  }
}

TEST(PipelineSchedule, LatencyLengthensTheCriticalPath) {
  // 1F1B's steady state has no slack: each hop's latency adds to the step.
  const double ideal = SimulateSchedule(*Make1F1B(4, 8), 1, 2).makespan;
  const double slow = SimulateSchedule(*Make1F1B(4, 8), 1, 2, 0.1).makespan;
  EXPECT_EQ(ideal, 33);
  EXPECT_GT(slow, ideal + 0.1 * 2 * 3);  // at least the first forward and last backward chains
}

TEST(PipelineSchedule, OneFOneBBoundsActivationsInFlight) {
  auto f = Make1F1B(4, 16);
  auto g = MakeGPipe(4, 16, true);
  EXPECT_EQ(PeakInFlight(*f), (std::vector<int>{4, 3, 2, 1}));
  EXPECT_EQ(PeakInFlight(*g), (std::vector<int>{16, 16, 16, 16}));
}

TEST(PipelineSchedule, CheckerFindsBrokenTables) {
  auto s = *Make1F1B(3, 4);
  // A missing receive.
  auto no_recv = s;
  no_recv.actions[1].erase(no_recv.actions[1].begin());  // its first action: recv activation mb 0
  auto e1 = CheckSchedule(no_recv);
  ASSERT_FALSE(e1.ok());
  EXPECT_NE(e1.message().find("rank 1 action 0 (forward mb 0 stage 1): runs before its activation is received"),
            std::string::npos) << e1.message();
  // A forward twice.
  auto twice = s;
  twice.actions[0].push_back({PipeOp::kForward, 0, 0});
  EXPECT_NE(CheckSchedule(twice).message().find("happens twice"), std::string::npos);
  // Receives in another order than the sends: rank 1 takes mb 1 before mb 0.
  auto reordered = *MakeGPipe(2, 2, false);
  std::swap(reordered.actions[1][0], reordered.actions[1][2]);
  std::swap(reordered.actions[1][1], reordered.actions[1][3]);
  auto e3 = CheckSchedule(reordered);
  ASSERT_FALSE(e3.ok());
  EXPECT_NE(e3.message().find("rank 0 sends activations into stage 1 in another micro-batch order than rank 1"),
            std::string::npos) << e3.message();
  // A deadlock: rank 0 waits for a gradient before sending the activation rank 1 needs.
  auto dead = *MakeGPipe(2, 1, true);
  // rank 0: fwd, send act, recv grad, bwd -> move recv grad before the send.
  std::swap(dead.actions[0][1], dead.actions[0][2]);
  auto e4 = CheckSchedule(dead);
  ASSERT_FALSE(e4.ok());
  EXPECT_NE(e4.message().find("deadlocks; rank 0 waits at action 1 (recv gradient mb 0 stage 0 from rank 1); rank 1 "
                              "waits at action 0 (recv activation mb 0 stage 1 from rank 0)"),
            std::string::npos) << e4.message();
  // The wrong rank for a stage.
  auto wrong = s;
  wrong.actions[0][0].stage = 1;
  EXPECT_NE(CheckSchedule(wrong).message().find("runs on rank 1"), std::string::npos);
}

TEST(PipelineSchedule, BadShapes) {
  EXPECT_FALSE(Make1F1B(0, 4).ok());
  EXPECT_FALSE(MakeGPipe(2, 0, true).ok());
  auto odd = MakeInterleaved1F1B(4, 6, 2);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("use 8 micro-batches"), std::string::npos);
  EXPECT_FALSE(MakeSchedule("1f1b", 2, 2, 1, false).ok());
  EXPECT_FALSE(MakeSchedule("zigzag", 2, 2, 1, true).ok());
  EXPECT_EQ(MakeSchedule("interleaved", 2, 4, 2, true)->chunks, 2);
}

// Random shapes, and random local reorderings of them: whatever the checker
// accepts runs to the end in the simulator (nothing it passes can hang).
TEST(PipelineSchedule, FuzzedSchedulesNeverHangOnceChecked) {
  std::mt19937 rng(7);
  int accepted = 0, rejected = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int p = 1 + static_cast<int>(rng() % 5);
    const int m = p * (1 + static_cast<int>(rng() % 4));
    const int kind = static_cast<int>(rng() % 3);
    PipelineSchedule s = kind == 0 ? *MakeGPipe(p, m, rng() % 2) : kind == 1 ? *Make1F1B(p, m)
                                                                          : *MakeInterleaved1F1B(p, m, 1 + rng() % 3);
    const int swaps = static_cast<int>(rng() % 3);
    for (int k = 0; k < swaps; ++k) {
      auto& list = s.actions[rng() % p];
      if (list.size() < 2) continue;
      const size_t i = rng() % (list.size() - 1);
      std::swap(list[i], list[i + 1]);
    }
    if (!CheckSchedule(s).ok()) {
      ++rejected;
      continue;
    }
    ++accepted;
    const ScheduleTiming t = SimulateSchedule(s, 1, 2);
    EXPECT_NEAR(t.busy_per_rank, (s.training ? 3.0 : 1.0) * m, 1e-9);  // every compute ran
    EXPECT_GE(t.makespan, t.busy_per_rank);
  }
  EXPECT_GT(accepted, 100);
  EXPECT_GT(rejected, 20);
}

}  // namespace
}  // namespace gpulaunch::rt
