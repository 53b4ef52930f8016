// Where nvcc is missing: no CUDA kernels (cuda_matmul.h).
#include "runtime/cuda_matmul.h"

namespace gpulaunch::rt {

bool CudaMatMulAvailable() { return false; }

Status CudaMatMul(const float*, size_t, size_t, const float*, size_t, size_t, float*) {
  return FailedPrecondition("gpurt was built without nvcc, so it has no CUDA kernels; rebuild where the CUDA "
                            "toolkit's nvcc is installed");
}

}  // namespace gpulaunch::rt
