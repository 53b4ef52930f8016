#include "common/cluster_topology.h"

namespace gpulaunch {

int ClusterHost::FreeGpus() const {
  int n = 0;
  for (size_t i = 0; i < topology->gpus.size(); ++i) n += GpuFree(static_cast<int>(i));
  return n;
}

}  // namespace gpulaunch
