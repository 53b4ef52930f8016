// The tensor-parallel layers' matrix product on a CUDA GPU, with the same
// bits as the CPU MatMul (tensor_parallel.h): one thread per output element
// sums x[i][k] * w[k][j] over k in ascending order, each product and sum
// rounded separately (__fmul_rn, __fadd_rn: no fused multiply-add, which the
// CPU build does not use either). Compiled where nvcc exists
// (GPURT_HAVE_CUDA_KERNELS); elsewhere CudaMatMulAvailable() is false.
#pragma once

#include <cstddef>

#include "common/status.h"

namespace gpulaunch::rt {

// True when the kernels were built and a CUDA device is usable.
bool CudaMatMulAvailable();

// y (rows x n) = x (rows x k) * w (k x n, rows w_stride floats apart), all on
// the host; copies in, runs, copies out.
Status CudaMatMul(const float* x, size_t rows, size_t k, const float* w, size_t w_stride, size_t n, float* y);

}  // namespace gpulaunch::rt
