// The fixed tree, leaf accumulation, local kernels and exact sums.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>

#include "runtime/leaf_sum.h"
#include "runtime/local_kernels.h"
#include "runtime/reduction_tree.h"
#include "runtime/superaccumulator.h"

namespace gpulaunch::rt {
namespace {

TEST(ReductionTree, LeafRangesPartitionTheLeaves) {
  for (int leaves : {1, 2, 7, 64, 100})
    for (int world = 1; world <= 9; ++world) {
      int expect = 0;
      for (int r = 0; r < world; ++r) {
        const auto [first, end] = LeafRange(r, world, leaves);
        EXPECT_EQ(first, expect);
        EXPECT_LE(first, end);
        expect = end;
      }
      EXPECT_EQ(expect, leaves);
    }
}

TEST(ReductionTree, MaximalNodesCoverTheRangeWithTreeNodes) {
  for (int leaves : {1, 5, 7, 64, 100})
    for (int first = 0; first < leaves; ++first)
      for (int end = first + 1; end <= leaves; ++end) {
        int next = first;
        for (const TreeNode& n : MaximalNodes(leaves, first, end)) {
          EXPECT_TRUE(IsTreeNode(n, leaves));
          EXPECT_EQ(n.lo, next);
          next = n.hi;
        }
        EXPECT_EQ(next, end);
      }
  EXPECT_EQ(MaximalNodes(64, 0, 32), (std::vector<TreeNode>{{0, 32}}));
  EXPECT_EQ(MaximalNodes(64, 0, 64), (std::vector<TreeNode>{{0, 64}}));
}

// Brute-force evaluation of the fixed tree over all leaves for one element.
double TreeValue(const std::vector<double>& leaf, TreeNode n) {
  if (n.IsLeaf()) return leaf[n.lo];
  return TreeValue(leaf, n.Left()) + TreeValue(leaf, n.Right());
}

TEST(LeafSum, NodesHoldExactlyTheTreeValues) {
  std::mt19937_64 rng(7);
  for (int leaves : {1, 3, 7, 13, 64}) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> leaf(leaves);
      for (double& v : leaf) v = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), int(rng() % 80) - 40);
      const int first = static_cast<int>(rng() % leaves);
      const int end = first + 1 + static_cast<int>(rng() % (leaves - first));
      LeafSum<double> sum(1, leaves, first, end);
      for (int l = first; l < end; ++l) ASSERT_TRUE(sum.AddLeaf(&leaf[l]).ok());
      ASSERT_TRUE(sum.Complete());
      EXPECT_FALSE(sum.AddLeaf(&leaf[0]).ok());
      const auto nodes = sum.nodes();
      ASSERT_EQ(nodes, MaximalNodes(leaves, first, end));
      for (size_t j = 0; j < nodes.size(); ++j) {
        EXPECT_EQ(std::bit_cast<uint64_t>(*sum.values(j)), std::bit_cast<uint64_t>(TreeValue(leaf, nodes[j])));
      }
    }
  }
}

TEST(LocalKernels, FixedLaneSumIgnoresBufferOffset) {
  std::mt19937 rng(3);
  std::vector<float> data(1000);
  for (float& v : data) v = std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng), int(rng() % 40) - 20);
  const float reference = FixedLaneSum(data.data(), data.size(), 0);
  for (size_t offset : {1, 3, 7, 16}) {
    std::vector<float> shifted(offset + data.size());
    std::copy(data.begin(), data.end(), shifted.begin() + static_cast<long>(offset));
    EXPECT_EQ(std::bit_cast<uint32_t>(FixedLaneSum(shifted.data() + offset, data.size(), 0)),
              std::bit_cast<uint32_t>(reference));
  }
  // Lanes follow the global index: a slice knows where it starts.
  EXPECT_NE(FixedLaneSum(data.data() + 5, 100, 5), 0.0f);
}

TEST(LocalKernels, HalfFormatsWidenExactly) {
  EXPECT_EQ(Bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(Bf16ToFloat(0xc000), -2.0f);
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7c00)));
}

struct FsumCase {
  double expected;
  std::vector<double> xs;
};

std::vector<FsumCase> LoadFsumCases() {
  std::ifstream f(std::string(GL_TEST_DATA) + "/exact/fsum_cases.txt");
  std::vector<FsumCase> cases;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string word;
    FsumCase c;
    in >> word;
    c.expected = std::strtod(word.c_str(), nullptr);
    in >> word;  // ';'
    while (in >> word) c.xs.push_back(std::strtod(word.c_str(), nullptr));
    cases.push_back(std::move(c));
  }
  return cases;
}

TEST(Superaccumulator, MatchesCorrectlyRoundedReferenceInAnyOrderAndSplit) {
  const auto cases = LoadFsumCases();
  ASSERT_EQ(cases.size(), 17u);
  std::mt19937 rng(11);
  for (const FsumCase& c : cases) {
    Superaccumulator a;
    a.Add(c.xs.data(), c.xs.size());
    EXPECT_EQ(std::bit_cast<uint64_t>(a.RoundToDouble()), std::bit_cast<uint64_t>(c.expected))
        << a.RoundToDouble() << " vs " << c.expected << " over " << c.xs.size() << " values";
    // Shuffled and split over 5 "ranks", merged through the wire form.
    std::vector<double> xs = c.xs;
    std::shuffle(xs.begin(), xs.end(), rng);
    Superaccumulator total;
    for (int part = 0; part < 5; ++part) {
      Superaccumulator p;
      for (size_t i = part; i < xs.size(); i += 5) p.Add(xs[i]);
      int64_t wire[Superaccumulator::kWireWords];
      p.ToWire(wire);
      total.Merge(Superaccumulator::FromWire(wire));
    }
    EXPECT_EQ(std::bit_cast<uint64_t>(total.RoundToDouble()), std::bit_cast<uint64_t>(c.expected));
  }
}

TEST(Superaccumulator, SpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  Superaccumulator overflow;
  overflow.Add(1.7e308);
  overflow.Add(1.7e308);
  EXPECT_EQ(overflow.RoundToDouble(), inf);
  Superaccumulator nan;
  nan.Add(inf);
  nan.Add(-inf);
  EXPECT_TRUE(std::isnan(nan.RoundToDouble()));
  Superaccumulator empty;
  EXPECT_EQ(std::bit_cast<uint64_t>(empty.RoundToDouble()), 0u);
  Superaccumulator neg_zero;
  neg_zero.Add(-0.0);
  EXPECT_TRUE(std::signbit(neg_zero.RoundToDouble()));
  Superaccumulator big_cancel;
  big_cancel.Add(-1e300);
  big_cancel.Add(1e300);
  big_cancel.Add(-3.0);
  EXPECT_EQ(big_cancel.RoundToDouble(), -3.0);
}

TEST(Superaccumulator, RoundsOnceToFloat) {
  // 1 + 2^-24 + 2^-80: just above the float tie, so 1 + 2^-23. Rounding to
  // double first would lose 2^-80 and then round the tie to even (1.0).
  Superaccumulator a;
  a.Add(1.0);
  a.Add(std::ldexp(1.0, -24));
  a.Add(std::ldexp(1.0, -80));
  EXPECT_EQ(a.RoundToFloat(), 1.0f + std::ldexp(1.0f, -23));
  EXPECT_EQ(static_cast<float>(a.RoundToDouble()), 1.0f);  // the double-rounding trap
  Superaccumulator tiny;
  tiny.Add(std::ldexp(1.0, -150));  // half the smallest float subnormal: ties to even, 0
  EXPECT_EQ(tiny.RoundToFloat(), 0.0f);
  tiny.Add(std::ldexp(1.0, -200));
  EXPECT_EQ(tiny.RoundToFloat(), std::ldexp(1.0f, -149));
}

}  // namespace
}  // namespace gpulaunch::rt
