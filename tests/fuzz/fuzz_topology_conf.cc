// libFuzzer: Slurm topology.conf and `scontrol show topology` output,
// `scontrol show job -d` details and `scontrol show node -o` states.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/network_tree.h"
#include "common/slurm_allocation.h"
#include "launcher/node_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)gpulaunch::ParseTopologyConf(text, "fuzz");
  (void)gpulaunch::ParseScontrolTopology(text, "fuzz");
  (void)gpulaunch::ParseScontrolJobDetail(text, "fuzz");
  std::vector<gpulaunch::NodeRow> rows = {gpulaunch::DownRow("node1", ""), gpulaunch::DownRow("node2", "")};
  gpulaunch::ApplySlurmStates(rows, std::string(text));
  return 0;
}
