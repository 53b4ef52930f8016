// Which NIC each GPU rank of a host talks through (UCX_NET_DEVICES).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/cluster_topology.h"
#include "common/host_topology.h"
#include "policies/placement.h"
#include "policies/path_type.h"

namespace gpulaunch {

// The physical card a NIC belongs to: its PCI bus id without the function
// ("0000:1a:00"), so that the ports of one device and the functions of one
// card are one card; the device name without its port when no bus id is
// known ("mlx5_0" for "mlx5_0:1").
std::string CardOf(const Nic& nic);

// Shares one host's NICs out among the ranks placed on it, in rank order.
class NicAssigner {
 public:
  explicit NicAssigner(const HostTopology& t);

  // The NIC (index into t.nics) for the next rank whose first GPU is `gpu`,
  // counted as taken: one of the nearest path type the host has, so a NIC on
  // the GPU's own package always beats one across packages, shared or not.
  // Within that type: the card with the fewest ranks so far (two ports of
  // one card add no bandwidth), then the port with the fewest, then PCI
  // order. t.nics must not be empty.
  size_t Choose(const Gpu& gpu);

  // Where each of the host's NICs sits (SiteOf), by NIC index.
  const std::vector<DeviceSite>& nic_sites() const { return nic_sites_; }

 private:
  const HostTopology& t_;
  std::vector<std::string> card_;  // per NIC
  std::vector<DeviceSite> nic_sites_;  // per NIC
  std::vector<DeviceSite> gpu_sites_;  // per GPU of t_.gpus
  std::vector<int> nic_users_;
  std::map<std::string, int> card_users_;
};

// The nearest NIC of `gpu` and its path type (nearest type, then PCI
// order); nullopt when the host has no NIC.
struct NearestNic {
  size_t nic = 0;
  PathType path = PathType::kSys;
};
std::optional<NearestNic> NearestNicOf(const HostTopology& t, const Gpu& gpu);

// Fresh NicAssigners and nearest NICs by host topology, for one pass over
// many hosts that share few topologies (SharedTopology: every node of a
// synthetic group, every host of one --topology-file): each topology's
// device sites are worked out once, not once per host. Keyed by address:
// use one only while the topologies it saw live unchanged.
class NicAssignerCache {
 public:
  // A NicAssigner for a host of topology `t` with no rank counted yet.
  NicAssigner Fresh(const HostTopology& t);
  // NearestNicOf(t, t.gpus[gpu])->nic; -1 when the host has no NIC.
  int Nearest(const HostTopology& t, int gpu);
  // Where each NIC of `t` sits, by NIC index.
  const std::vector<DeviceSite>& NicSites(const HostTopology& t) { return Of(t).fresh.nic_sites(); }

 private:
  struct Entry {
    NicAssigner fresh;
    std::vector<int> nearest;  // per GPU; -2: not asked yet
  };
  Entry& Of(const HostTopology& t);
  std::unordered_map<const HostTopology*, Entry> by_topology_;
};

// Why `gpu` got NIC `chosen`: its path type, then the other NICs by type,
// nearest first: "GPU 2 -> mlx5_3:1: NODE; mlx5_4:1 is NODE too; mlx5_0:1,
// mlx5_1:1 are SYS". Empty when the host has no NIC of that name.
std::string ExplainNicChoice(const HostTopology& t, const Gpu& gpu, const std::string& chosen);

// Adds to p.explain why each GPU rank got its NIC: one line per distinct
// answer, naming the hosts it holds for ("node[01-16]: GPU 2 -> mlx5_3:1:
// NODE; mlx5_1:1 is SYS"), so that a homogeneous cluster reads as one host.
void ExplainNics(const ClusterTopology& c, Placement& p);

}  // namespace gpulaunch
