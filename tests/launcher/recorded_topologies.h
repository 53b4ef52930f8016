// The recorded hwloc topologies in tests/data/topologies/hwloc, with what their
// READMEs document of each: shared by the tests that read them.
#pragma once

#include <cstddef>
#include <string>

namespace gpulaunch {

struct Recorded {
  const char* file;
  size_t gpus;
  size_t nics;
  size_t cores;
  const char* first_gpu_vendor;
};

inline const Recorded kRecorded[] = {
    {"open-mpi-hwloc/nvidiaDGX2.xml", 16, 0, 4, "nvidia"},
    {"open-mpi-hwloc/power8gpudistances.xml", 4, 0, 8, "nvidia"},
    {"open-mpi-hwloc/nvidiagpunumanodes.xml", 6, 0, 8, "unknown"},  // PCI ids anonymised upstream
    {"open-mpi-hwloc/nvidiagpunumanodes.kept.xml", 6, 0, 8, "unknown"},
    {"flux-core/tuo.SPX.xml", 4, 4, 96, "amd"},
    {"flux-core/tuo.TPX.xml", 4, 4, 96, "amd"},  // partitions are OS devices of 4 PCI GPUs
    {"flux-core/tuo.CPX.xml", 4, 4, 96, "amd"},
    {"flux-core/corona.xml", 8, 1, 48, "amd"},
    {"flux-core/sierra.xml", 4, 4, 44, "nvidia"},
    {"flux-sched/corona11.xml", 4, 1, 48, "amd"},  // its BMC VGA is not a GPU
    {"flux-sched/chimera.xml", 2, 0, 32, "nvidia"},
    {"mpibind/g4dnmetal.xml", 8, 1, 48, "nvidia"},
    {"mpibind/coral-lassen.xml", 4, 4, 40, "nvidia"},
    {"mpibind/cts1-pascal.xml", 2, 1, 36, "nvidia"},
};

inline std::string PathOf(const char* file) { return std::string(GL_TEST_DATA) + "/topologies/hwloc/" + file; }

}  // namespace gpulaunch
