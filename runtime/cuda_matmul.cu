#include "runtime/cuda_matmul.h"

#include <cuda_runtime.h>

#include <string>

namespace gpulaunch::rt {
namespace {

__global__ void MatMulKernel(const float* x, size_t rows, size_t k, const float* w, size_t w_stride, size_t n,
                             float* y) {
  const size_t i = blockIdx.y;
  const size_t j = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows || j >= n) return;
  float acc = 0.0f;
  for (size_t kk = 0; kk < k; ++kk) acc = __fadd_rn(acc, __fmul_rn(x[i * k + kk], w[kk * w_stride + j]));
  y[i * n + j] = acc;
}

Status Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::Ok();
  return Internal(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

bool CudaMatMulAvailable() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

Status CudaMatMul(const float* x, size_t rows, size_t k, const float* w, size_t w_stride, size_t n, float* y) {
  if (rows == 0 || n == 0) return Status::Ok();
  struct DeviceBuffers {
    float *x = nullptr, *w = nullptr, *y = nullptr;
    ~DeviceBuffers() {
      cudaFree(x);
      cudaFree(w);
      cudaFree(y);
    }
  } d;
  const size_t x_bytes = rows * k * sizeof(float), w_bytes = (k == 0 ? 0 : (k - 1) * w_stride + n) * sizeof(float),
               y_bytes = rows * n * sizeof(float);
  GL_RETURN_IF_ERROR(Check(cudaMalloc(&d.x, x_bytes + 1), "cudaMalloc"));
  GL_RETURN_IF_ERROR(Check(cudaMalloc(&d.w, w_bytes + 1), "cudaMalloc"));
  GL_RETURN_IF_ERROR(Check(cudaMalloc(&d.y, y_bytes), "cudaMalloc"));
  if (x_bytes) GL_RETURN_IF_ERROR(Check(cudaMemcpy(d.x, x, x_bytes, cudaMemcpyHostToDevice), "cudaMemcpy"));
  if (w_bytes) GL_RETURN_IF_ERROR(Check(cudaMemcpy(d.w, w, w_bytes, cudaMemcpyHostToDevice), "cudaMemcpy"));
  const unsigned threads = 128;
  const dim3 grid(static_cast<unsigned>((n + threads - 1) / threads), static_cast<unsigned>(rows));
  MatMulKernel<<<grid, threads>>>(d.x, rows, k, d.w, w_stride, n, d.y);
  GL_RETURN_IF_ERROR(Check(cudaGetLastError(), "MatMulKernel launch"));
  return Check(cudaMemcpy(y, d.y, y_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
}

}  // namespace gpulaunch::rt
