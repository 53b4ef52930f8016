// NVML, loaded at run time: libnvidia-ml.so.1 comes with the NVIDIA driver and
// has no Debian development package, so it is dlopen()ed and the few entry
// points used are declared here. Absent library or driver: an empty list.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpulaunch {

struct NvmlGpu {
  std::string pci_bus_id;  // normalised "0000:1a:00.0"
  std::string uuid;        // "GPU-..."
  std::string name;        // "NVIDIA H200"
  uint64_t memory_bytes = 0;
  uint64_t memory_used_bytes = 0;  // at the time of the query
  int temperature_c = -1;          // -1 when NVML would not say
  int64_t ecc_uncorrected = -1;    // volatile uncorrected ECC errors; -1 when ECC is off or unknown
};

struct NvmlReport {
  bool available = false;          // the library loaded and nvmlInit succeeded
  std::string driver_version;
  std::vector<NvmlGpu> gpus;
};

NvmlReport QueryNvml();
std::vector<NvmlGpu> QueryNvmlGpus();  // QueryNvml().gpus

}  // namespace gpulaunch
