#include "common/synthetic_cluster.h"

#include <cstdio>
#include <map>

#include "common/strings.h"

namespace gpulaunch {
namespace {

std::string Numbered(const char* prefix, int n, int width) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%0*d", prefix, width, n);
  return buf;
}

}  // namespace

HostTopology MakeSyntheticHost(int numa, int cores_per_numa, int gpus, int nics, double nvswitch_gbps) {
  HostTopology h;
  h.hostname = "synthetic";
  for (int n = 0; n < numa; ++n) {
    NumaNode node{n, {}};
    for (int c = 0; c < cores_per_numa; ++c) {
      const int id = n * cores_per_numa + c;
      h.cores.push_back(Core{id, {id}, n, n});  // one package per NUMA node
      node.pus.push_back(id);
    }
    h.numa_nodes.push_back(node);
    h.packages.push_back(Package{n, node.pus});
  }
  for (int g = 0; g < gpus; ++g) {
    Gpu gpu;
    gpu.index = g;
    char bus[32];
    std::snprintf(bus, sizeof bus, "0000:%02x:00.0", 0x10 + g);
    gpu.pci_bus_id = bus;
    gpu.vendor = "nvidia";
    gpu.model = "synthetic";
    gpu.numa_node = numa > 0 ? g * numa / gpus : -1;
    if (gpu.numa_node >= 0) gpu.local_pus = h.numa_nodes[gpu.numa_node].pus;
    const int nic = nics > 0 ? g * nics / gpus : g;
    gpu.pci_path = {"hb" + std::to_string(gpu.numa_node), "sw" + std::to_string(nic)};
    h.gpus.push_back(gpu);
  }
  for (int k = 0; k < nics; ++k) {
    Nic nic;
    nic.name = "mlx5_" + std::to_string(k) + ":1";
    nic.kind = "infiniband";
    char bus[32];
    std::snprintf(bus, sizeof bus, "0000:%02x:00.0", 0x80 + k);
    nic.pci_bus_id = bus;
    nic.numa_node = numa > 0 ? k * numa / nics : -1;
    if (nic.numa_node >= 0) nic.local_pus = h.numa_nodes[nic.numa_node].pus;
    nic.pci_path = {"hb" + std::to_string(nic.numa_node), "sw" + std::to_string(k)};
    h.nics.push_back(nic);
  }
  if (nvswitch_gbps > 0 && gpus > 1) {
    h.gpu_link_gbps.assign(static_cast<size_t>(gpus) * gpus, nvswitch_gbps);
    for (int g = 0; g < gpus; ++g) h.gpu_link_gbps[static_cast<size_t>(g) * gpus + g] = 0;
  }
  return h;
}

StatusOr<ClusterTopology> MakeSyntheticCluster(const ClusterSpec& spec) {
  GL_RETURN_IF_ERROR(OnlyKeys(spec, {"pod", "leaf", "node", "gpu", "nic", "numa", "core", "nvlink"},
                              "a synthetic cluster for plan and slurm-config"));
  ClusterTopology c;
  std::vector<NetworkSwitch> switches;
  std::vector<std::string> tops;
  int host_no = 0, leaf_no = 0, pod_no = 0;
  int64_t total = 0;
  for (const ClusterGroupSpec& g : spec.groups) {
    const int pod_count = g.Get("pod", 0), leaves = g.Get("leaf", 1), nodes = g.Get("node", 1);
    const int numa = g.Get("numa", 2), cores = g.Get("core", 16), gpus = g.Get("gpu", 0);
    if (nodes < 1 || leaves < 1 || numa < 1 || cores < 1) {
      return InvalidArgument("cluster spec '" + spec.text + "': node, leaf, numa and core must be >= 1");
    }
    total += static_cast<int64_t>(std::max(pod_count, 1)) * leaves * nodes;
    if (total > 100000) return InvalidArgument("cluster spec '" + spec.text + "': more than 100000 hosts");
    const bool nvlink = g.Has("nvlink") ? g.Get("nvlink", 0) > 0 : gpus > 1;
    // One topology for the group's nodes, shared by all of them.
    const SharedTopology host = MakeSyntheticHost(numa, cores, gpus, g.Get("nic", 0), nvlink ? 300.0 : 0.0);
    for (int p = 0; p < std::max(pod_count, 1); ++p) {
      NetworkSwitch pod;
      if (pod_count > 0) pod.name = Numbered("pod", ++pod_no, 1);
      for (int l = 0; l < leaves; ++l) {
        NetworkSwitch leaf;
        leaf.name = Numbered("leaf", ++leaf_no, 2);
        for (int n = 0; n < nodes; ++n) {
          ClusterHost h{.name = Numbered("node", ++host_no, 4), .topology = host};
          leaf.nodes.push_back(h.name);
          c.hosts.push_back(std::move(h));
        }
        pod.children.push_back(leaf.name);
        switches.push_back(std::move(leaf));
      }
      if (pod_count > 0) {
        tops.push_back(pod.name);
        switches.push_back(std::move(pod));
      } else {
        tops.insert(tops.end(), pod.children.begin(), pod.children.end());
      }
    }
  }
  if (tops.size() > 1) switches.push_back(NetworkSwitch{"spine", {}, tops, std::nullopt, "", 0});
  GL_ASSIGN_OR_RETURN(c.network, NetworkTree::Build(std::move(switches), "synthetic cluster"));
  return c;
}

StatusOr<ClusterTopology> MakeSyntheticCluster(std::string_view text) {
  GL_ASSIGN_OR_RETURN(ClusterSpec spec, ParseClusterSpec(text));
  return MakeSyntheticCluster(spec);
}

}  // namespace gpulaunch
