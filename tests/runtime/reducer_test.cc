// Deterministic collectives on the in-process communicator: the same bits
// for every world size, equal to the one-rank run.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>

#include "runtime/deterministic_reducer.h"
#include "runtime/fault_injecting_communicator.h"
#include "runtime/local_kernels.h"
#include "runtime/thread_communicator.h"

namespace gpulaunch::rt {
namespace {

// Leaf l's vector: huge exponent range, signed zeros, cancelling partners.
template <typename T>
std::vector<T> Leaf(int l, size_t count) {
  std::vector<T> v(count);
  const int max_exp = std::is_same_v<T, float> ? 100 : 900;
  for (size_t i = 0; i < count; ++i) {
    std::mt19937_64 rng(1000003ULL * static_cast<uint64_t>(l / 2) + i);
    const double mag = std::ldexp(std::uniform_real_distribution<double>(0.5, 1)(rng), int(rng() % (2 * max_exp)) - max_exp);
    const bool cancel = i % 5 == 0;  // leaves 2k and 2k+1 cancel on these elements
    const double sign = cancel ? (l % 2 ? -1 : 1) : ((rng() >> 7) % 2 ? -1 : 1);
    v[i] = static_cast<T>(i % 17 == 0 ? (l % 2 ? -0.0 : 0.0) : sign * mag * (cancel ? 1 : 1 + l));
  }
  return v;
}

template <typename T>
std::vector<T> AllreduceOn(int world, int leaves, size_t count) {
  std::vector<std::vector<T>> results(world, std::vector<T>(count));
  RunOnThreads(world, [&](Communicator& c) {
    auto reducer = DeterministicReducer::Create(
        c, {leaves, std::is_same_v<T, float> ? ElementType::kFloat32 : ElementType::kFloat64});
    ASSERT_TRUE(reducer.ok()) << reducer.status().ToString();
    auto sum = LeafSum<T>::ForRank(count, leaves, c.rank(), c.size());
    for (int l = sum.first_leaf(); l < sum.end_leaf(); ++l) ASSERT_TRUE(sum.AddLeaf(Leaf<T>(l, count).data()).ok());
    ASSERT_TRUE(reducer->Allreduce(sum, results[c.rank()].data()).ok());
  });
  for (int r = 1; r < world; ++r) {
    EXPECT_EQ(std::memcmp(results[r].data(), results[0].data(), count * sizeof(T)), 0) << "rank " << r << " differs";
  }
  return results[0];
}

template <typename T>
void ExpectSameBits(const std::vector<T>& a, const std::vector<T>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(T)), 0) << what;
}

TEST(DeterministicAllreduce, SameBitsForOneToEightRanks) {
  for (int leaves : {64, 7, 3}) {
    const auto one32 = AllreduceOn<float>(1, leaves, 1001);
    const auto one64 = AllreduceOn<double>(1, leaves, 777);
    for (int world = 2; world <= 8; ++world) {
      ExpectSameBits(AllreduceOn<float>(world, leaves, 1001), one32,
                     "f32 leaves=" + std::to_string(leaves) + " world=" + std::to_string(world));
      ExpectSameBits(AllreduceOn<double>(world, leaves, 777), one64,
                     "f64 leaves=" + std::to_string(leaves) + " world=" + std::to_string(world));
    }
  }
}

TEST(DeterministicAllreduce, DiffersFromNaiveSequentialSumSomewhere) {
  // Sanity: the data really is order-sensitive, so equality above means something.
  const size_t count = 1001;
  const auto tree = AllreduceOn<float>(1, 64, count);
  std::vector<float> seq(count, 0.0f);
  for (int l = 0; l < 64; ++l) {
    const auto v = Leaf<float>(l, count);
    for (size_t i = 0; i < count; ++i) seq[i] += v[i];
  }
  EXPECT_NE(std::memcmp(seq.data(), tree.data(), count * sizeof(float)), 0);
}

TEST(DeterministicReduce, ReduceAndReduceScatterAgreeWithAllreduce) {
  const size_t count = 513;
  const auto expected = AllreduceOn<double>(1, 16, count);
  RunOnThreads(5, [&](Communicator& c) {
    auto reducer = DeterministicReducer::Create(c, {16, ElementType::kFloat64});
    ASSERT_TRUE(reducer.ok());
    auto sum = LeafSum<double>::ForRank(count, 16, c.rank(), c.size());
    for (int l = sum.first_leaf(); l < sum.end_leaf(); ++l) ASSERT_TRUE(sum.AddLeaf(Leaf<double>(l, count).data()).ok());
    std::vector<double> full(count, -1);
    ASSERT_TRUE(reducer->Reduce(sum, c.rank() == 2 ? full.data() : nullptr, 2).ok());
    if (c.rank() == 2) {
      EXPECT_EQ(std::memcmp(full.data(), expected.data(), count * sizeof(double)), 0);
    }
    const auto [lo, hi] = ElementRange(count, c.rank(), c.size());
    std::vector<double> part(hi - lo);
    ASSERT_TRUE(reducer->ReduceScatter(sum, part.data()).ok());
    EXPECT_EQ(std::memcmp(part.data(), expected.data() + lo, part.size() * sizeof(double)), 0);
  });
}

TEST(DeterministicAllreduce, Bf16LeavesAccumulateInFloat) {
  const size_t count = 64;
  std::vector<float> results[3];
  for (int world : {1, 3}) {
    std::vector<float> out(count);
    RunOnThreads(world, [&](Communicator& c) {
      auto reducer = DeterministicReducer::Create(c, {8, ElementType::kFloat32});
      auto sum = LeafSum<float>::ForRank(count, 8, c.rank(), c.size());
      for (int l = sum.first_leaf(); l < sum.end_leaf(); ++l) {
        std::vector<uint16_t> bf(count);
        for (size_t i = 0; i < count; ++i) bf[i] = FloatToBf16(std::ldexp(1.0f + 0.125f * l, int(i % 30) - 15));
        ASSERT_TRUE(sum.AddLeafBf16(bf.data()).ok());
      }
      std::vector<float> mine(count);
      ASSERT_TRUE(reducer->Allreduce(sum, mine.data()).ok());
      if (c.rank() == 0) out = mine;
    });
    results[world == 1 ? 0 : 1] = out;
  }
  ExpectSameBits(results[0], results[1], "bf16 1 vs 3 ranks");
  // 8 leaves of (1 + l/8) * 2^k: 8 + 28/8 = 11.5 times 2^k, exact in float.
  EXPECT_EQ(results[0][15], 11.5f);
  EXPECT_EQ(results[0][16], 23.0f);
}

TEST(DeterministicReducer, RanksWithDifferentPlansRefuseToReduce) {
  RunOnThreads(3, [](Communicator& c) {
    auto reducer = DeterministicReducer::Create(c, {c.rank() == 1 ? 32 : 64, ElementType::kFloat32});
    ASSERT_FALSE(reducer.ok());
    EXPECT_NE(reducer.status().message().find("refusing to reduce"), std::string::npos);
  });
}

TEST(DeterministicReducer, CorruptedFingerprintInTransitFailsClosed) {
  auto comms = ThreadCommunicator::CreateWorld(3);
  comms[1] = std::make_unique<FaultInjectingCommunicator>(std::move(comms[1]), FaultPlan{.corrupt_send = 0});
  std::vector<std::thread> threads;
  std::atomic<int> refused{0};
  for (auto& c : comms) {
    threads.emplace_back([&c, &refused] {
      auto reducer = DeterministicReducer::Create(*c, {64, ElementType::kFloat32});
      if (!reducer.ok()) ++refused;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(refused.load(), 3);
}

TEST(DeterministicReducer, WrongLeafSumIsRejected) {
  RunOnThreads(2, [](Communicator& c) {
    auto reducer = DeterministicReducer::Create(c, {8, ElementType::kFloat32});
    LeafSum<float> wrong(4, 8, 0, 8);  // every leaf, as if alone
    std::vector<float> out(4);
    EXPECT_FALSE(reducer->Allreduce(wrong, out.data()).ok());
  });
}

TEST(Exact, SumsAreCorrectlyRoundedForAnyWorldSize) {
  // 1e300 + many tiny values - 1e300: only an exact sum keeps the tiny ones.
  std::vector<double> xs = {1e300, -1e300};
  for (int i = 0; i < 999; ++i) xs.push_back(std::ldexp(1.0, -60) * (1 + i % 3));
  Superaccumulator ref;
  ref.Add(xs.data(), xs.size());
  std::vector<Superaccumulator> ref_elements(3);
  for (size_t i = 0; i < xs.size(); ++i) ref_elements[i % 3].Add(xs[i]);
  for (int world = 1; world <= 6; ++world) {
    RunOnThreads(world, [&](Communicator& c) {
      Superaccumulator mine;
      for (size_t i = c.rank(); i < xs.size(); i += c.size()) mine.Add(xs[i]);
      auto total = ExactAllreduceSum(c, mine);
      ASSERT_TRUE(total.ok());
      EXPECT_EQ(*total, ref.RoundToDouble());
      EXPECT_EQ(*total, 1998 * std::ldexp(1.0, -60));
      // Merged inside pretend hosts of 2 ranks (and switches of 2 hosts) first: the same sum.
      std::vector<int> hosts, switches;
      for (int r = 0; r < c.size(); ++r) hosts.push_back(r / 2), switches.push_back(r / 4);
      auto tiered = ExactAllreduceSum(c, mine, hosts, switches);
      ASSERT_TRUE(tiered.ok()) << tiered.status().message();
      EXPECT_EQ(std::bit_cast<uint64_t>(*tiered), std::bit_cast<uint64_t>(*total)) << world << " ranks";
      // Elementwise exact vectors too.
      std::vector<Superaccumulator> per(3);
      for (size_t i = c.rank(); i < xs.size(); i += c.size()) per[i % 3].Add(xs[i]);
      std::vector<double> out(3);
      ASSERT_TRUE(ExactAllreduce(c, per, out.data()).ok());
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(std::bit_cast<uint64_t>(out[k]), std::bit_cast<uint64_t>(ref_elements[k].RoundToDouble()));
      }
    });
  }
}

}  // namespace
}  // namespace gpulaunch::rt
