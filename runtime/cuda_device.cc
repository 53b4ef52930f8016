// GPU selection; compiled with the CUDA runtime where the toolkit exists
// (GPURT_HAVE_CUDA), and as a stub elsewhere.
#include "runtime/gpurt.h"

#ifdef GPURT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace gpulaunch::rt {

bool BuiltWithCuda() {
#ifdef GPURT_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int SelectGpu(int local_rank) {
#ifdef GPURT_HAVE_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return -1;
  const int device = local_rank % count;
  if (cudaSetDevice(device) != cudaSuccess) return -1;
  return device;
#else
  (void)local_rank;
  return -1;
#endif
}

}  // namespace gpulaunch::rt
