#include "runtime/cuda_matmul.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "runtime/tensor_parallel.h"

namespace gpulaunch::rt {
namespace {

// The CUDA product has the CPU's bits (no fused multiply-add, k ascending).
TEST(CudaMatMul, SameBitsAsTheCpu) {
  if (!CudaMatMulAvailable()) GTEST_SKIP() << "no CUDA GPU here (or gpurt built without nvcc)";
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-3, 3);
  for (auto [rows, k, n, stride] : std::vector<std::array<size_t, 4>>{{1, 1, 1, 1}, {7, 33, 130, 130}, {64, 768, 97, 200}}) {
    std::vector<float> x(rows * k), w(k * stride), cpu(rows * n), gpu(rows * n);
    for (float& v : x) v = d(rng);
    for (float& v : w) v = d(rng);
    MatMul(x.data(), rows, k, w.data(), stride, n, cpu.data());
    ASSERT_TRUE(CudaMatMul(x.data(), rows, k, w.data(), stride, n, gpu.data()).ok());
    EXPECT_EQ(std::memcmp(cpu.data(), gpu.data(), cpu.size() * sizeof(float)), 0) << rows << "x" << k << "x" << n;
  }
}

TEST(CudaMatMul, ChoosingCudaWithoutAGpuIsRefused) {
  if (CudaMatMulAvailable()) GTEST_SKIP() << "a GPU is present";
  const Status s = SetMatMulDevice(MatMulDevice::kCuda);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(SetMatMulDevice(MatMulDevice::kCpu).ok());
}

}  // namespace
}  // namespace gpulaunch::rt
