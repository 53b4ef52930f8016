// Path types (policies/path_type.h) and NIC choice (policies/nic_choice.h)
// on hand-built hosts whose PCI trees are written out, so that each class
// and each tie-break is pinned by one machine.
#include "policies/nic_choice.h"

#include <gtest/gtest.h>

#include "policies/link_model.h"
#include "policies/path_type.h"

namespace gpulaunch {
namespace {

std::vector<int> Range(int from, int count) {
  std::vector<int> v;
  for (int i = 0; i < count; ++i) v.push_back(from + i);
  return v;
}

// `packages` sockets of `numa_per_package` NUMA nodes with 4 PUs each, no
// devices yet (SNC-4 / NPS-4 when numa_per_package is 4).
HostTopology Sockets(int packages, int numa_per_package) {
  HostTopology t;
  for (int p = 0; p < packages; ++p) {
    t.packages.push_back({p, Range(p * numa_per_package * 4, numa_per_package * 4)});
    for (int n = 0; n < numa_per_package; ++n) {
      const int numa = p * numa_per_package + n;
      t.numa_nodes.push_back({numa, Range(numa * 4, 4)});
    }
  }
  return t;
}

Gpu GpuAt(const HostTopology& t, int numa, PciPath path) {
  Gpu g;
  g.index = 0;
  g.numa_node = numa;
  g.local_pus = t.numa_nodes[numa].pus;
  g.pci_path = std::move(path);
  return g;
}

Nic NicAt(const HostTopology& t, const std::string& name, const std::string& bus, int numa, PciPath path) {
  Nic n;
  n.name = name;
  n.kind = "infiniband";
  n.pci_bus_id = bus;
  n.numa_node = numa;
  n.local_pus = numa >= 0 ? t.numa_nodes[numa].pus : std::vector<int>{};
  n.pci_path = std::move(path);
  return n;
}

void AddGpu(HostTopology& t, Gpu g) {
  g.index = static_cast<int>(t.gpus.size());
  t.gpus.push_back(std::move(g));
}

TEST(PathType, EachClassFromItsPciPathAndPackage) {
  HostTopology t = Sockets(2, 2);
  // One switch: upstream port u, downstream ports d1 and d2, under host bridge hb0.
  const Gpu gpu = GpuAt(t, 0, {"hb0", "rp0", "u", "d1"});
  EXPECT_EQ(GpuNicPath(t, gpu, NicAt(t, "pix", "", 0, {"hb0", "rp0", "u", "d2"})), PathType::kPix);
  EXPECT_EQ(GpuNicPath(t, gpu, NicAt(t, "same-port", "", 0, {"hb0", "rp0", "u", "d1"})), PathType::kPix);
  // A second switch below d2: two switches between, no host bridge.
  EXPECT_EQ(GpuNicPath(t, gpu, NicAt(t, "pxb", "", 0, {"hb0", "rp0", "u", "d2", "u2", "d3"})), PathType::kPxb);
  // Another root port of the same host bridge.
  EXPECT_EQ(GpuNicPath(t, gpu, NicAt(t, "phb", "", 0, {"hb0", "rp1"})), PathType::kPhb);
  // Another host bridge: same package (another NUMA node of it, too) or not.
  EXPECT_EQ(GpuNicPath(t, gpu, NicAt(t, "node", "", 0, {"hb1", "rp2"})), PathType::kNode);
  EXPECT_EQ(GpuNicPath(t, gpu, NicAt(t, "node-snc", "", 1, {"hb2", "rp3"})), PathType::kNode);
  EXPECT_EQ(GpuNicPath(t, gpu, NicAt(t, "sys", "", 2, {"hb3", "rp4"})), PathType::kSys);
  // Locality unknown on a two-socket host: assumed far.
  EXPECT_EQ(GpuNicPath(t, gpu, NicAt(t, "unknown", "", -1, {"hb4"})), PathType::kSys);
  EXPECT_STREQ(PathTypeName(PathType::kNode), "NODE");
  EXPECT_STREQ(PathTypeName(PathType::kPxb), "PXB");
}

TEST(PathType, UnknownLocalityIsNearOnASingleSocketHost) {
  HostTopology t = Sockets(1, 2);
  const Gpu gpu = GpuAt(t, 0, {"hb0"});
  EXPECT_EQ(GpuNicPath(t, gpu, NicAt(t, "n", "", -1, {"hb1"})), PathType::kNode);
  EXPECT_EQ(PackageOf(t, {}, 1), 0);
  EXPECT_EQ(PackageOf(t, Range(0, 8), -1), 0);
  HostTopology two = Sockets(2, 1);
  EXPECT_EQ(PackageOf(two, Range(0, 8), -1), -1);  // spans both packages
  EXPECT_EQ(PackageOf(two, {5, 6}, -1), 1);
}

TEST(PathType, GpuPairsUseNvlinkWhereRecorded) {
  HostTopology t = Sockets(2, 1);
  AddGpu(t, GpuAt(t, 0, {"hb0", "u", "d0"}));
  AddGpu(t, GpuAt(t, 0, {"hb0", "u", "d1"}));
  AddGpu(t, GpuAt(t, 1, {"hb1", "u1", "d2"}));
  EXPECT_EQ(GpuGpuPath(t, 0, 1), PathType::kPix);
  EXPECT_EQ(GpuGpuPath(t, 0, 2), PathType::kSys);
  t.gpu_link_gbps = {0, 0, 300, 0, 0, 0, 300, 0, 0};
  EXPECT_EQ(GpuGpuPath(t, 0, 2), PathType::kNvl);
  // The link model prices the classes in order.
  ClusterTopology c;
  ClusterHost h;
  h.name = "h";
  h.topology = t;
  c.hosts.push_back(h);
  EXPECT_EQ(CostBetween(c, {0, 0}, {0, 1}).gbps, 24.0);
  EXPECT_EQ(CostBetween(c, {0, 0}, {0, 2}).gbps, 300.0);
  c.hosts[0].topology.Mutable().gpu_link_gbps.clear();
  EXPECT_EQ(CostBetween(c, {0, 0}, {0, 2}).gbps, 10.0);
  EXPECT_STREQ(CostBetween(c, {0, 0}, {0, 2}).cls, "across sockets");
}

// Between hosts, a rank's traffic is capped by its own GPU-to-NIC path:
// through a NIC across the sockets at most the SYS figure.
TEST(LinkModel, ARanksNicPathCapsItsNetworkBandwidth) {
  HostTopology t = Sockets(2, 1);
  AddGpu(t, GpuAt(t, 0, {"hb0", "u", "d0"}));
  t.nics.push_back(NicAt(t, "near", "0000:01:00.0", 0, {"hb0", "u", "d1"}));
  t.nics.push_back(NicAt(t, "far", "0000:81:00.0", 1, {"hb1"}));
  for (Nic& n : t.nics) n.gbps = 25;
  ClusterTopology c;
  for (const char* name : {"a", "b"}) {
    ClusterHost h;
    h.name = name;
    h.topology = t;
    c.hosts.push_back(h);
  }
  EXPECT_DOUBLE_EQ(CostBetween(c, {0, 0, 0}, {1, 0, 0}).gbps, 24.0);   // PIX: the PCIe figure below 25
  EXPECT_DOUBLE_EQ(CostBetween(c, {0, 0, 1}, {1, 0, 0}).gbps, 10.0);   // one side across the sockets
  EXPECT_DOUBLE_EQ(CostBetween(c, {0, 0, -1}, {1, 0, -1}).gbps, 25.0); // NICs unknown: the hosts' fastest
}

// The machine of the report: a 4-GPU node in SNC-4 mode, 2 packages and 8
// NUMA nodes. Package 0 holds GPUs 0-1 and NIC mlx5_0; package 1 holds GPUs
// 2-3 and NIC mlx5_2, each on its own host bridge. The far NIC is unused
// when the second rank of package 1 chooses: it must still not win.
TEST(NicChoice, ANicOnTheGpusPackageBeatsAnUnusedOneAcross) {
  HostTopology t = Sockets(2, 4);
  AddGpu(t, GpuAt(t, 0, {"hb0", "rp0"}));
  AddGpu(t, GpuAt(t, 1, {"hb1", "rp1"}));
  AddGpu(t, GpuAt(t, 5, {"hb5", "rp5"}));
  AddGpu(t, GpuAt(t, 6, {"hb6", "rp6"}));
  t.nics.push_back(NicAt(t, "mlx5_0:1", "0000:1a:00.0", 2, {"hb2", "rp2"}));
  t.nics.push_back(NicAt(t, "mlx5_2:1", "0000:9a:00.0", 7, {"hb7", "rp7"}));
  NicAssigner a(t);
  EXPECT_EQ(t.nics[a.Choose(t.gpus[2])].name, "mlx5_2:1");
  EXPECT_EQ(t.nics[a.Choose(t.gpus[3])].name, "mlx5_2:1");  // shared, but NODE beats SYS
  EXPECT_EQ(t.nics[a.Choose(t.gpus[0])].name, "mlx5_0:1");
  EXPECT_EQ(ExplainNicChoice(t, t.gpus[3], "mlx5_2:1"), "GPU 3 -> mlx5_2:1: NODE; mlx5_0:1 is SYS");
  EXPECT_EQ(ExplainNicChoice(t, t.gpus[3], "mlx5_9:1"), "");
}

// Two functions of one dual-port card (mlx5_0, mlx5_1) and a second card
// (mlx5_2), all PHB from both GPUs: two ranks get two cards, not two ports.
TEST(NicChoice, SpreadsOverCardsNotOverPortsOfOneCard) {
  HostTopology t = Sockets(1, 1);
  AddGpu(t, GpuAt(t, 0, {"hb0", "rp0"}));
  AddGpu(t, GpuAt(t, 0, {"hb0", "rp1"}));
  t.nics.push_back(NicAt(t, "mlx5_0:1", "0000:1a:00.0", 0, {"hb0", "rp2"}));
  t.nics.push_back(NicAt(t, "mlx5_1:1", "0000:1a:00.1", 0, {"hb0", "rp2"}));
  t.nics.push_back(NicAt(t, "mlx5_2:1", "0000:3b:00.0", 0, {"hb0", "rp3"}));
  EXPECT_EQ(CardOf(t.nics[0]), CardOf(t.nics[1]));
  EXPECT_NE(CardOf(t.nics[0]), CardOf(t.nics[2]));
  NicAssigner a(t);
  EXPECT_EQ(t.nics[a.Choose(t.gpus[0])].name, "mlx5_0:1");
  EXPECT_EQ(t.nics[a.Choose(t.gpus[1])].name, "mlx5_2:1");
  // A third and fourth rank: the first card's other port, then the second card again.
  EXPECT_EQ(t.nics[a.Choose(t.gpus[0])].name, "mlx5_1:1");
  EXPECT_EQ(t.nics[a.Choose(t.gpus[1])].name, "mlx5_2:1");
}

// The cache's assigners start with no rank counted, whichever host had one
// before, and its nearest NIC is NearestNicOf's; a GPU not of the assigner's
// topology (a copy) is still placed by its own site.
TEST(NicChoice, TheCacheGivesFreshAssignersAndTheNearestNics) {
  HostTopology t = Sockets(2, 4);
  AddGpu(t, GpuAt(t, 0, {"hb0", "rp0"}));
  AddGpu(t, GpuAt(t, 5, {"hb5", "rp5"}));
  AddGpu(t, GpuAt(t, 6, {"hb6", "rp6"}));
  t.nics.push_back(NicAt(t, "mlx5_0:1", "0000:1a:00.0", 2, {"hb2", "rp2"}));
  t.nics.push_back(NicAt(t, "mlx5_2:1", "0000:9a:00.0", 7, {"hb7", "rp7"}));
  t.nics.push_back(NicAt(t, "mlx5_3:1", "0000:9b:00.0", 6, {"hb7", "rp8"}));
  NicAssignerCache cache;
  for (int host = 0; host < 3; ++host) {
    NicAssigner a = cache.Fresh(t);
    EXPECT_EQ(t.nics[a.Choose(t.gpus[1])].name, "mlx5_2:1") << host;
    EXPECT_EQ(t.nics[a.Choose(t.gpus[2])].name, "mlx5_3:1") << host;  // the other card of package 1
    EXPECT_EQ(t.nics[a.Choose(t.gpus[0])].name, "mlx5_0:1") << host;
  }
  for (int g = 0; g < 3; ++g) EXPECT_EQ(cache.Nearest(t, g), static_cast<int>(NearestNicOf(t, t.gpus[g])->nic)) << g;
  const Gpu elsewhere = t.gpus[0];  // same site, not an element of t.gpus
  EXPECT_EQ(t.nics[cache.Fresh(t).Choose(elsewhere)].name, "mlx5_0:1");
  HostTopology no_nics = Sockets(1, 1);
  AddGpu(no_nics, GpuAt(no_nics, 0, {"hb0", "rp0"}));
  EXPECT_EQ(cache.Nearest(no_nics, 0), -1);
}

TEST(NicChoice, ACardWithoutABusIdIsItsDeviceName) {
  Nic n;
  n.name = "mlx5_4:2";
  EXPECT_EQ(CardOf(n), "mlx5_4");
  n.pci_bus_id = "0000:c1:00.1";
  EXPECT_EQ(CardOf(n), "0000:c1:00");
}

}  // namespace
}  // namespace gpulaunch
