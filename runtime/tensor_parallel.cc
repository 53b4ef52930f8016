#include "runtime/tensor_parallel.h"

#include <cstring>

#include "runtime/cuda_matmul.h"
#include "runtime/gpurt.h"
#include "runtime/leaf_sum.h"
#include "runtime/reduction_tree.h"

namespace gpulaunch::rt {

void MatMul(const float* x, size_t rows, size_t k, const float* w, size_t w_stride, size_t n, float* y) {
  for (size_t i = 0; i < rows; ++i) {
    float* out = y + i * n;
    std::memset(out, 0, n * sizeof(float));
    const float* in = x + i * k;
    for (size_t kk = 0; kk < k; ++kk) {
      const float a = in[kk];
      const float* row = w + kk * w_stride;
      for (size_t j = 0; j < n; ++j) out[j] += a * row[j];
    }
  }
}

namespace {

MatMulDevice g_device = MatMulDevice::kCpu;

Status Multiply(const float* x, size_t rows, size_t k, const float* w, size_t w_stride, size_t n, float* y) {
  if (g_device == MatMulDevice::kCuda) return CudaMatMul(x, rows, k, w, w_stride, n, y);
  MatMul(x, rows, k, w, w_stride, n, y);
  return Status::Ok();
}

}  // namespace

Status SetMatMulDevice(MatMulDevice device) {
  if (device == MatMulDevice::kCuda && !CudaMatMulAvailable()) {
    return FailedPrecondition(BuiltWithCuda() ? "no CUDA GPU is usable by this rank (cudaGetDeviceCount found none); "
                                                "run on a GPU host or use the CPU"
                                              : "gpurt was built without nvcc, so it has no CUDA kernels");
  }
  g_device = device;
  return Status::Ok();
}

StatusOr<Slice> EvenSlice(size_t total, int part, int parts, const char* what) {
  if (parts < 1 || total % static_cast<size_t>(parts) != 0) {
    return InvalidArgument(std::string(what) + " (" + std::to_string(total) + ") does not split evenly over " +
                           std::to_string(parts) + " tensor-parallel ranks; use a tp size that divides it");
  }
  const size_t each = total / static_cast<size_t>(parts);
  return Slice{each * static_cast<size_t>(part), each};
}

StatusOr<std::vector<float>> ColumnParallel(Communicator& tp, const std::vector<float>& x, size_t rows, size_t k,
                                            const std::vector<float>& w_local, size_t n_local, bool gather) {
  if (x.size() != rows * k || w_local.size() != k * n_local) return InvalidArgument("ColumnParallel: shape mismatch");
  std::vector<float> local(rows * n_local);
  GL_RETURN_IF_ERROR(Multiply(x.data(), rows, k, w_local.data(), n_local, n_local, local.data()));
  if (!gather || tp.size() == 1) return local;
  const size_t t = static_cast<size_t>(tp.size());
  std::vector<float> blocks(t * rows * n_local);
  GL_RETURN_IF_ERROR(Allgather(tp, local.data(), local.size(), blocks.data()));
  std::vector<float> full(rows * n_local * t);
  for (size_t r = 0; r < t; ++r) {
    for (size_t i = 0; i < rows; ++i) {
      std::memcpy(&full[i * n_local * t + r * n_local], &blocks[(r * rows + i) * n_local], n_local * sizeof(float));
    }
  }
  return full;
}

StatusOr<std::vector<float>> RowParallel(DeterministicReducer& reducer, Communicator& tp,
                                         const std::vector<float>& x_local, size_t rows, size_t k_local,
                                         const std::vector<float>& w_local, size_t n) {
  const int leaves = reducer.config().leaves;
  const auto [first, end] = LeafRange(tp.rank(), tp.size(), leaves);
  const size_t mine = static_cast<size_t>(end - first);
  if (mine == 0 || k_local % mine != 0 || x_local.size() != rows * k_local || w_local.size() != k_local * n) {
    return InvalidArgument("RowParallel: this rank's K slice (" + std::to_string(k_local) + ") is not " +
                           std::to_string(mine) + " equal leaf blocks, or the shapes disagree");
  }
  const size_t block = k_local / mine;
  auto sum = LeafSum<float>::ForRank(rows * n, leaves, tp.rank(), tp.size());
  std::vector<float> xb(rows * block), partial(rows * n);
  for (size_t l = 0; l < mine; ++l) {
    for (size_t i = 0; i < rows; ++i) std::memcpy(&xb[i * block], &x_local[i * k_local + l * block], block * sizeof(float));
    GL_RETURN_IF_ERROR(Multiply(xb.data(), rows, block, &w_local[l * block * n], n, n, partial.data()));
    GL_RETURN_IF_ERROR(sum.AddLeaf(partial.data()));
  }
  std::vector<float> out(rows * n);
  GL_RETURN_IF_ERROR(reducer.Allreduce(sum, out.data()));
  return out;
}

}  // namespace gpulaunch::rt
