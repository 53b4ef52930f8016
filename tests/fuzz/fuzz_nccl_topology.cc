// libFuzzer: NCCL topology files (launcher/discovery/nccl_topology.h). What
// loads must be a host placement can use: GPUs indexed in order, a square
// link matrix, no CPU in two cores, every GPU's NIC choice explainable.
#include <cstdint>
#include <set>
#include <string>

#include "launcher/discovery/nccl_topology.h"
#include "policies/nic_choice.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto t = gpulaunch::LoadNcclTopologyText(text, "fuzz");
  if (!t.ok()) {
    if (t.status().message().rfind("fuzz:", 0) != 0) __builtin_trap();  // every error names file:line
    return 0;
  }
  if (t->gpus.empty() || t->cores.empty()) __builtin_trap();
  const size_t n = t->gpus.size();
  if (!t->gpu_link_gbps.empty() && t->gpu_link_gbps.size() != n * n) __builtin_trap();
  std::set<int> pus;
  for (const gpulaunch::Core& c : t->cores)
    for (int pu : c.pus)
      if (!pus.insert(pu).second) __builtin_trap();
  gpulaunch::NicAssigner nics(*t);
  for (size_t g = 0; g < n; ++g) {
    if (t->gpus[g].index != static_cast<int>(g)) __builtin_trap();
    if (t->nics.empty()) continue;
    const size_t chosen = nics.Choose(t->gpus[g]);
    if (chosen >= t->nics.size()) __builtin_trap();
    if (gpulaunch::ExplainNicChoice(*t, t->gpus[g], t->nics[chosen].name).empty()) __builtin_trap();
  }
  return 0;
}
