// libFuzzer: Slurm topology.conf and `scontrol show topology` output, and
// `scontrol show job -d` details.
#include <cstdint>
#include <string_view>

#include "common/network_tree.h"
#include "common/slurm_allocation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)gpulaunch::ParseTopologyConf(text, "fuzz");
  (void)gpulaunch::ParseScontrolTopology(text, "fuzz");
  (void)gpulaunch::ParseScontrolJobDetail(text, "fuzz");
  return 0;
}
