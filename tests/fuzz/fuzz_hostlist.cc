// libFuzzer: Slurm hostlists (`node[01-04,7]`), --host arguments and hostfiles.
#include <cstdint>
#include <string_view>

#include "common/host_spec.h"
#include "common/hostlist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto hosts = gpulaunch::ExpandHostlist(text); hosts.ok()) {
    for (const std::string& h : *hosts) {
      if (h.empty()) __builtin_trap();  // an expansion never yields an empty name
    }
  }
  (void)gpulaunch::ParseHostArgument(text);
  (void)gpulaunch::ParseHostfileText(text, "fuzz");
  return 0;
}
