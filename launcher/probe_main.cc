// gpulaunch-probe: prints this host's topology as hwloc XML on stdout. gpulaunch
// runs it on remote hosts through the engine (one rank per host) to learn
// their cores, NUMA nodes, GPUs and NICs before placing ranks.
#include <cstdio>

#include "launcher/discovery/hwloc_source.h"

int main() {
  auto xml = gpulaunch::ExportLocalHwlocXml();
  if (!xml.ok()) {
    std::fprintf(stderr, "gpulaunch-probe: %s\n", xml.status().message().c_str());
    return 1;
  }
  std::fwrite(xml->data(), 1, xml->size(), stdout);
  return 0;
}
