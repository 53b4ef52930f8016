#include "partitioner/layout_choice.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

ModelWorkload Gpt2Small(int microbatches) {
  TransformerShape s;  // GPT-2 small, one 1024-token sequence per micro-batch
  ModelWorkload w;
  w.graph = TransformerTaskGraph(s);
  w.heads = s.heads;
  w.blocks = s.blocks;
  w.microbatches = microbatches;
  return w;
}

// Links: bytes / bandwidth, tp inside a host at 300 GB/s, pp and dp at `gbps`.
CommModel Links(double gbps = 25) {
  return [gbps](const ParallelLayout&, double tp, double pp, double dp) -> StatusOr<CommEstimate> {
    return CommEstimate{tp / 300e9, pp / (gbps * 1e9), dp / (gbps * 1e9)};
  };
}

TEST(LayoutChoice, DataParallelWhenTheModelFitsAndLinksAreFast) {
  LayoutChoiceOptions o;
  o.ranks = 8;
  o.max_tp = 8;
  o.memory_per_rank_bytes = 80e9;
  auto ranked = RankLayouts(Gpt2Small(16), o, Links(300));
  ASSERT_TRUE(ranked.ok()) << ranked.status().message();
  EXPECT_EQ(ranked->front().layout.ToString(), "tp=1,pp=1,dp=8,order=tp-pp-dp");
  EXPECT_EQ(ranked->front().bubble, 0);
  // Every factorisation appears once: 8 = 1x1x8 ... 8x1x1 is 10 of them.
  EXPECT_EQ(ranked->size(), 10u);
  // Over slow links the 500 MB gradient allreduce of dp=8 costs more than
  // tensor parallelism inside the host.
  auto slow = RankLayouts(Gpt2Small(16), o, Links(25));
  EXPECT_GT(slow->front().layout.extent[kTp], 1) << slow->front().layout.ToString();
  for (size_t i = 1; i < ranked->size(); ++i) {
    if ((*ranked)[i].rejected.empty()) {
      EXPECT_GE((*ranked)[i].total_seconds(), (*ranked)[i - 1].total_seconds());
    }
  }
}

TEST(LayoutChoice, MemorySplitsTheModel) {
  LayoutChoiceOptions o;
  o.ranks = 8;
  o.max_tp = 8;
  o.memory_per_rank_bytes = 1.2e9;  // GPT-2 small with Adam needs ~2 GB in one piece
  auto ranked = RankLayouts(Gpt2Small(16), o, Links());
  ASSERT_TRUE(ranked.ok()) << ranked.status().message();
  const LayoutCandidate& best = ranked->front();
  EXPECT_GT(best.layout.extent[kTp] * best.layout.extent[kPp], 1) << best.layout.ToString();
  EXPECT_LE(best.memory_per_rank, 1.2e9);
  bool dp8_rejected_for_memory = false;
  for (const LayoutCandidate& c : *ranked) {
    if (c.layout.extent[kDp] == 8) dp8_rejected_for_memory = c.rejected.find("memory:") == 0;
  }
  EXPECT_TRUE(dp8_rejected_for_memory);
}

TEST(LayoutChoice, TpStaysInAHostAndDividesTheHeads) {
  LayoutChoiceOptions o;
  o.ranks = 16;
  o.max_tp = 4;
  auto ranked = RankLayouts(Gpt2Small(16), o, Links());
  ASSERT_TRUE(ranked.ok());
  int checked = 0;
  for (const LayoutCandidate& c : *ranked) {
    const int tp = c.layout.extent[kTp];
    if (tp == 8 || tp == 16) {
      EXPECT_FALSE(c.rejected.empty());
      ++checked;
    }
    if (tp == 8) {
      EXPECT_NE(c.rejected.find("does not divide the 12 attention heads"), std::string::npos);
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(LayoutChoice, MorePipelineStagesMeanMoreBubble) {
  LayoutChoiceOptions o;
  o.ranks = 4;
  auto ranked = RankLayouts(Gpt2Small(8), o, [](const ParallelLayout&, double, double, double) -> StatusOr<CommEstimate> {
    return CommEstimate{};  // free communication: only compute and bubbles count
  });
  ASSERT_TRUE(ranked.ok());
  for (const LayoutCandidate& c : *ranked) {
    if (c.layout.extent[kPp] == 4) {
      EXPECT_DOUBLE_EQ(c.bubble, 3.0 / (8 + 3));
    }
  }
  EXPECT_EQ(ranked->front().layout.extent[kPp], 1);
}

TEST(LayoutChoice, NothingFits) {
  LayoutChoiceOptions o;
  o.ranks = 2;
  o.memory_per_rank_bytes = 1e6;
  auto ranked = RankLayouts(Gpt2Small(4), o, Links());
  ASSERT_FALSE(ranked.ok());
  EXPECT_EQ(ranked.status().code(), StatusCode::kInfeasible);
  EXPECT_NE(ranked.status().message().find("tp=1,pp=2,dp=1"), std::string::npos);
}

}  // namespace
}  // namespace gpulaunch
