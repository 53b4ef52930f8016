// gpulaunch-probe: prints this host's topology as hwloc XML on stdout, then
// the network devices UCX accepts as an XML comment. gpulaunch
// runs it on remote hosts through the engine (one rank per host) to learn
// their cores, NUMA nodes, GPUs and NICs before placing ranks.
//
// `gpulaunch-probe facts ...` and `gpulaunch-probe storage ...` are the
// per-host halves of `gpulaunch check` (launcher/host_facts.h) and `gpulaunch
// check --storage` (launcher/storage_probe.h).
#include <cstdio>

#include <string>
#include <vector>

#include "common/env.h"
#include "launcher/base/host_fingerprint.h"
#include "launcher/discovery/remote_topology_cache.h"
#include "launcher/discovery/hwloc_source.h"
#include "launcher/discovery/nvml_gpus.h"
#include "launcher/check/host_facts.h"
#include "launcher/discovery/ucx_devices.h"
#include "launcher/check/node_table.h"
#include "launcher/check/storage_probe.h"

int main(int argc, char** argv) {
  gpulaunch::SkipUnusedHwlocPlugins();  // before any thread (it sets the environment)
  if (argc >= 2 && std::string(argv[1]) == "facts") {
    return gpulaunch::RunFactsProbe(std::vector<std::string>(argv + 2, argv + argc));
  }
  if (argc >= 2 && std::string(argv[1]) == "storage") {
    return gpulaunch::RunStorageProbe(std::vector<std::string>(argv + 2, argv + argc));
  }
  // The whole report in one write at exit: Hydra's -prepend-rank labels
  // every chunk it reads as a new line, so stdio's 4 KiB pieces came out with
  // "[0] " inside an XML attribute (a host's probe through Hydra failed to
  // parse). One write fits the pipe (64 KiB) for a report up to that size.
  static char report_buffer[1 << 20];
  std::setvbuf(stdout, report_buffer, _IOFBF, sizeof report_buffer);
  auto xml = gpulaunch::ExportLocalHwlocXml();
  if (!xml.ok()) {
    std::fprintf(stderr, "gpulaunch-probe: %s\n", xml.status().message().c_str());
    return 1;
  }
  std::fwrite(xml->data(), 1, xml->size(), stdout);
  // The devices UCX accepts here, for the launcher's NIC cross-check.
  if (const auto ucx = gpulaunch::QueryUcxDevices()) {
    std::string line = "\n<!-- gpulaunch-ucx-devices:";
    for (const std::string& d : *ucx) line += " " + d;
    std::printf("%s -->\n", line.c_str());
  }
  // Where Slurm's tree puts this node, as this step sees it (the fallback
  // when `scontrol show topology` says nothing; slurm/slurm_allocation.h).
  const auto addr = gpulaunch::GetEnv("SLURM_TOPOLOGY_ADDR");
  const auto pattern = gpulaunch::GetEnv("SLURM_TOPOLOGY_ADDR_PATTERN");
  if (addr && pattern) std::printf("<!-- gpulaunch-slurm-topology: %s %s -->\n", addr->c_str(), pattern->c_str());
  // GPU memory total and in use, where a driver answers (gpulaunch nodes).
  gpulaunch::GpuMemoryByBus memory;
  for (const gpulaunch::NvmlGpu& g : gpulaunch::QueryNvmlGpus()) {
    memory[g.pci_bus_id] = gpulaunch::GpuMemory{g.memory_bytes, g.memory_used_bytes};
  }
  if (!memory.empty()) std::printf("%s\n", gpulaunch::FormatGpuMemoryComment(memory).c_str());
  // What this topology depends on: a launch that plans from it cached checks
  // it again on this host before any rank runs (remote_topology_cache.h).
  std::printf("%s\n", gpulaunch::FingerprintComment(gpulaunch::HostFingerprint()).c_str());
  return 0;
}
