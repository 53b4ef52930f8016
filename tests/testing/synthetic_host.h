// Synthetic HostTopology values for placement tests: `numa` nodes, each with
// `cores_per_numa` cores of `pus_per_core` PUs, `gpus_per_numa` GPUs and
// `nics_per_numa` NICs. GPU g and NIC k of a node share PCI switch g % nics.
#pragma once

#include <string>

#include "common/host_topology.h"

namespace gpulaunch::testing {

inline HostTopology SyntheticHost(int numa, int cores_per_numa, int pus_per_core, int gpus_per_numa,
                                  int nics_per_numa) {
  HostTopology h;
  h.hostname = "synthetic";
  int core_index = 0;
  for (int n = 0; n < numa; ++n) {
    NumaNode node{n, {}};
    for (int c = 0; c < cores_per_numa; ++c, ++core_index) {
      Core core{core_index, {}, n, n};
      for (int p = 0; p < pus_per_core; ++p) {
        const int pu = core_index + p * numa * cores_per_numa;  // Linux-style sibling numbering
        core.pus.push_back(pu);
        node.pus.push_back(pu);
      }
      h.cores.push_back(core);
    }
    std::sort(node.pus.begin(), node.pus.end());
    h.numa_nodes.push_back(node);
    for (int g = 0; g < gpus_per_numa; ++g) {
      Gpu gpu;
      gpu.index = static_cast<int>(h.gpus.size());
      gpu.pci_bus_id = "0000:" + std::to_string(10 + gpu.index) + ":00.0";
      gpu.numa_node = n;
      gpu.local_pus = node.pus;
      gpu.pci_path = {"hb" + std::to_string(n), "sw" + std::to_string(n) + "." + std::to_string(g % std::max(1, nics_per_numa))};
      h.gpus.push_back(gpu);
    }
    for (int k = 0; k < nics_per_numa; ++k) {
      Nic nic;
      nic.name = "mlx5_" + std::to_string(h.nics.size()) + ":1";
      nic.kind = "infiniband";
      nic.numa_node = n;
      nic.pci_path = {"hb" + std::to_string(n), "sw" + std::to_string(n) + "." + std::to_string(k)};
      h.nics.push_back(nic);
    }
  }
  return h;
}

}  // namespace gpulaunch::testing
