#include "slurm/slurm_config.h"

#include <algorithm>
#include <map>

#include "common/hostlist.h"
#include "common/strings.h"

namespace gpulaunch {

std::string SlurmTopologyConf(const ClusterTopology& c) {
  if (!c.network.empty()) return WriteTopologyConf(c.network);
  std::vector<std::string> hosts;
  for (const ClusterHost& h : c.hosts) hosts.push_back(h.name);
  return "SwitchName=switch0 Nodes=" + CompressHostlist(hosts) + "\n";
}

std::string SlurmGresConf(const ClusterTopology& c) {
  std::string out;
  for (const ClusterHost& h : c.hosts) {
    // One line per group of GPUs sharing a NUMA node (hence the same cores).
    std::map<int, std::vector<int>> gpus_of_numa;
    for (const Gpu& g : h.topology->gpus) gpus_of_numa[g.numa_node].push_back(g.index);
    for (const auto& [numa, gpus] : gpus_of_numa) {
      std::vector<int> cores;
      for (const Core& core : h.topology->cores)
        if (numa < 0 || core.numa_node == numa) cores.push_back(core.logical_index);
      std::vector<std::string> files;
      for (int g : gpus) files.push_back("nvidia" + std::to_string(g));
      out += "NodeName=" + h.name + " Name=gpu File=/dev/" + CompressHostlist(files) + " Cores=" + FormatIdList(cores) +
             "\n";
    }
  }
  return out;
}

}  // namespace gpulaunch
