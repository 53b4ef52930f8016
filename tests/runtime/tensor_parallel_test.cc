#include "runtime/tensor_parallel.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "runtime/thread_communicator.h"

namespace gpulaunch::rt {
namespace {

std::vector<float> Random(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng) * (1 + static_cast<float>(rng() % 1000));  // wide range: order matters
  return v;
}

std::vector<float> Columns(const std::vector<float>& w, size_t k, size_t n, size_t first, size_t count) {
  std::vector<float> out(k * count);
  for (size_t r = 0; r < k; ++r) std::memcpy(&out[r * count], &w[r * n + first], count * sizeof(float));
  return out;
}

TEST(TensorParallel, ColumnParallelGatherEqualsTheFullProduct) {
  const size_t rows = 3, k = 17, n = 8;
  const auto x = Random(rows * k, 1), w = Random(k * n, 2);
  std::vector<float> full(rows * n);
  MatMul(x.data(), rows, k, w.data(), n, n, full.data());
  for (int t : {1, 2, 4}) {
    std::vector<std::vector<float>> got(t);
    RunOnThreads(t, [&](Communicator& tp) {
      const Slice s = *EvenSlice(n, tp.rank(), t, "columns");
      got[tp.rank()] = *ColumnParallel(tp, x, rows, k, Columns(w, k, n, s.first, s.count), s.count, true);
    });
    for (int r = 0; r < t; ++r) {
      ASSERT_EQ(got[r].size(), full.size());
      EXPECT_EQ(std::memcmp(got[r].data(), full.data(), full.size() * sizeof(float)), 0) << "tp=" << t;
    }
  }
}

TEST(TensorParallel, RowParallelHasTheSameBitsForEveryTpSize) {
  const size_t rows = 5, k = 48, n = 7;
  const int leaves = 12;
  const auto x = Random(rows * k, 3), w = Random(k * n, 4);
  std::vector<float> reference;
  for (int t : {1, 2, 3, 4, 6, 12}) {
    std::vector<std::vector<float>> got(t);
    RunOnThreads(t, [&](Communicator& tp) {
      auto reducer = DeterministicReducer::Create(tp, {leaves, ElementType::kFloat32});
      ASSERT_TRUE(reducer.ok());
      const Slice s = *EvenSlice(k, tp.rank(), t, "K");
      std::vector<float> x_local(rows * s.count);
      for (size_t i = 0; i < rows; ++i) std::memcpy(&x_local[i * s.count], &x[i * k + s.first], s.count * sizeof(float));
      std::vector<float> w_local(w.begin() + static_cast<long>(s.first * n), w.begin() + static_cast<long>((s.first + s.count) * n));
      auto y = RowParallel(*reducer, tp, x_local, rows, s.count, w_local, n);
      ASSERT_TRUE(y.ok()) << y.status().message();
      got[tp.rank()] = *y;
    });
    if (reference.empty()) reference = got[0];
    for (int r = 0; r < t; ++r) {
      EXPECT_EQ(std::memcmp(got[r].data(), reference.data(), reference.size() * sizeof(float)), 0) << "tp=" << t;
    }
  }
  // And it is the product (to rounding).
  std::vector<float> plain(rows * n);
  MatMul(x.data(), rows, k, w.data(), n, n, plain.data());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_NEAR(reference[i], plain[i], 1e-3 * (1 + std::abs(plain[i])));
}

TEST(TensorParallel, UnevenSplitsAreRefused) {
  auto s = EvenSlice(10, 0, 4, "hidden size");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("hidden size (10) does not split evenly over 4"), std::string::npos);
}

}  // namespace
}  // namespace gpulaunch::rt
