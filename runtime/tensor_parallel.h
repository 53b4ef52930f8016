// Tensor-parallel linear layers (Megatron-style) whose results have the same
// bits for any tensor-parallel size T that divides the leaf count.
//
// Y = X W with X rows x K and W K x N, all row-major float32. Every output
// element is a sum over k in ascending order (MatMul), so splitting W by
// columns (ColumnParallel) cannot change a bit. Splitting by rows (the K
// dimension, RowParallel) sums partial products; those go through the
// deterministic reducer over a fixed number of leaves (K blocks), so the
// partials combine by one fixed tree whether one rank holds every leaf or T
// ranks hold L / T leaves each.
#pragma once

#include <cstddef>
#include <vector>

#include "common/status.h"
#include "runtime/communicator.h"
#include "runtime/deterministic_reducer.h"

namespace gpulaunch::rt {

// y (rows x n) = x (rows x k) * w (k x n), with w rows `w_stride` floats apart;
// y is overwritten. Sums run over k in ascending order.
void MatMul(const float* x, size_t rows, size_t k, const float* w, size_t w_stride, size_t n, float* y);

// Where ColumnParallel and RowParallel multiply: the CPU (default) or a CUDA
// GPU (runtime/cuda_matmul.h), with the same bits either way. Choosing CUDA
// fails when gpurt has no kernels or the rank has no GPU.
enum class MatMulDevice { kCpu, kCuda };
Status SetMatMulDevice(MatMulDevice device);

// The columns [first, first + count) of a split into `parts` equal parts.
struct Slice {
  size_t first = 0;
  size_t count = 0;
};
StatusOr<Slice> EvenSlice(size_t total, int part, int parts, const char* what);

// Column-parallel: this rank's columns of X W (w_local holds them, k x
// n_local). With `gather`, the full rows x (n_local * T) result, columns in
// rank order, through an allgather over `tp`.
StatusOr<std::vector<float>> ColumnParallel(Communicator& tp, const std::vector<float>& x, size_t rows, size_t k,
                                            const std::vector<float>& w_local, size_t n_local, bool gather);

// Row-parallel: X W where this rank holds X's columns and W's rows for its
// leaves (LeafRange(tp.rank(), tp.size(), leaves) of `leaves` equal K
// blocks), x_local rows x k_local and w_local k_local x n. The result, rows
// x n, is the same on every rank of `tp` and for every T dividing the leaves.
StatusOr<std::vector<float>> RowParallel(DeterministicReducer& reducer, Communicator& tp, const std::vector<float>& x_local,
                                         size_t rows, size_t k_local, const std::vector<float>& w_local, size_t n);

}  // namespace gpulaunch::rt
