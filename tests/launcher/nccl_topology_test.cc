// NCCL topology files as recorded hosts (launcher/discovery/nccl_topology.h),
// on the vendors' real files in tests/data/topologies/nccl, both forms (with
// <gpu>/<nic> elements, and PCI class codes only), and their errors.
#include "launcher/discovery/nccl_topology.h"

#include <gtest/gtest.h>

#include "launcher/discovery/topology_file.h"
#include "policies/nic_choice.h"
#include "policies/path_type.h"

namespace gpulaunch {
namespace {

HostTopology Nccl(const std::string& file) {
  auto t = LoadTopologyFile(std::string(GL_TEST_DATA) + "/topologies/nccl/" + file);
  EXPECT_TRUE(t.ok()) << file << ": " << t.status().message();
  return t.ok() ? *t : HostTopology{};
}

std::string ErrorOf(const std::string& xml) {
  auto t = LoadTopologyText(xml, "t.xml");
  return t.ok() ? "loaded" : t.status().message();
}

// AWS p4d.24xlarge: devices by class code only; 4 PCIe switches of 2 GPUs and 1 EFA.
TEST(NcclTopology, ClassCodesOnlyNameDevicesByBusId) {
  const HostTopology t = Nccl("aws-ofi-nccl/p4d-24xl-topo.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 4u);
  EXPECT_EQ(t.gpus[0].pci_bus_id, "0000:10:1c.0");
  EXPECT_EQ(t.gpus[0].vendor, "nvidia");
  EXPECT_EQ(t.gpus[4].numa_node, 1);
  EXPECT_EQ(t.nics[0].name, "0000:10:1b.0");
  EXPECT_EQ(t.nics[0].kind, "efa");
  EXPECT_EQ(t.numa_nodes.size(), 2u);
  EXPECT_EQ(t.packages.size(), 2u);
  // affinity 000000ff,ffff0000,00ffffff: CPUs 0-23 and 48-71, threads k and k+48 one core.
  EXPECT_EQ(t.cores.size(), 48u);
  EXPECT_EQ(t.cores[0].pus, (std::vector<int>{0, 48}));
  EXPECT_EQ(t.cores[0].numa_node, 0);
  // Two GPUs and the EFA under one switch: PIX; the other switch on the same CPU: PHB; across: SYS.
  EXPECT_EQ(GpuNicPath(t, t.gpus[0], t.nics[0]), PathType::kPix);
  EXPECT_EQ(GpuNicPath(t, t.gpus[0], t.nics[1]), PathType::kPhb);
  EXPECT_EQ(GpuNicPath(t, t.gpus[0], t.nics[2]), PathType::kSys);
  EXPECT_EQ(GpuGpuPath(t, 0, 1), PathType::kPix);
  EXPECT_TRUE(t.gpu_link_gbps.empty());  // the file records no NVLink
}

// An 8x MI300X server: <gpu> with xGMI to all 7 others, a ConnectX-7 beside
// each GPU under nested bridges, port speeds in Mb/s.
TEST(NcclTopology, GpuAndNicElementsWithXgmiLinks) {
  const HostTopology t = Nccl("rccl/topo_8p_940.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  ASSERT_EQ(t.nics.size(), 8u);
  EXPECT_EQ(t.gpus[0].vendor, "amd");
  EXPECT_EQ(t.gpus[0].model, "gfx942");
  EXPECT_EQ(t.nics[0].name, "mlx5_0:1");
  EXPECT_EQ(t.nics[0].kind, "infiniband");
  EXPECT_DOUBLE_EQ(t.nics[0].gbps, 50.0);  // 400000 Mb/s
  EXPECT_DOUBLE_EQ(t.GpuLinkGbps(0, 7), 48.0);  // one link at RCCL's gfx94x figure
  EXPECT_DOUBLE_EQ(t.GpuLinkGbps(3, 3), 0.0);
  EXPECT_EQ(GpuGpuPath(t, 0, 5), PathType::kNvl);
  // The GPU two bridges below the switch its NIC hangs from: PXB, its own NIC nearest.
  EXPECT_EQ(GpuNicPath(t, t.gpus[0], t.nics[0]), PathType::kPxb);
  const auto near = NearestNicOf(t, t.gpus[6]);
  ASSERT_TRUE(near.has_value());
  EXPECT_EQ(t.nics[near->nic].name, "mlx5_6:1");
}

// Four ports of one ConnectX-7 in one <nic>: one card when NICs are shared out.
TEST(NcclTopology, PortsOfOneNicAreOneCard) {
  const HostTopology t = Nccl("rtp-llm/topo.xml");
  ASSERT_EQ(t.gpus.size(), 8u);
  std::vector<const Nic*> cx7;
  for (const Nic& n : t.nics)
    if (n.name == "mlx5_2:1" || n.name == "mlx5_5:1") cx7.push_back(&n);
  ASSERT_EQ(cx7.size(), 2u);
  EXPECT_EQ(CardOf(*cx7[0]), CardOf(*cx7[1]));
}

TEST(NcclTopology, EveryWholeHostFileLoads) {
  for (const char* f : {"aws-ofi-nccl/p4de-24xl-topo.xml", "azhpc-images/ncv4-topo.xml", "azhpc-images/ndv2-topo.xml",
                        "azhpc-images/ndv4-topo.xml", "rccl/topo_16p1h.xml", "rccl/topo_4p4h.xml",
                        "rccl/topo_4p_940.xml", "rccl/topo_8p1h_5.xml", "rccl/topo_8p_90a.xml",
                        "rccl/topo_8p_940vm.xml", "rccl/topo_8p_950.xml", "rccl/topo_8p_rome_4n_1.xml"}) {
    const HostTopology t = Nccl(f);
    EXPECT_FALSE(t.gpus.empty()) << f;
    EXPECT_FALSE(t.cores.empty()) << f;
    for (const Gpu& g : t.gpus) EXPECT_GE(g.numa_node, 0) << f;
  }
  // The NC A100 v4 capture's NVLink entries point at the GPU itself: no link.
  EXPECT_TRUE(Nccl("azhpc-images/ncv4-topo.xml").gpu_link_gbps.empty());
  // 16 MI250 GCDs in one hive.
  EXPECT_EQ(Nccl("rccl/topo_16p1h.xml").gpus.size(), 16u);
}

TEST(NcclTopology, FilesThatAreNoHostSaySoWithTheLine) {
  const std::string dir = std::string(GL_TEST_DATA) + "/topologies/nccl/";
  auto graph = LoadTopologyFile(dir + "azhpc-images/ncv4-graph.xml");
  ASSERT_FALSE(graph.ok());
  EXPECT_NE(graph.status().message().find("ncv4-graph.xml:1: an NCCL graph file (NCCL_GRAPH_FILE)"), std::string::npos)
      << graph.status().message();
  auto fragment = LoadTopologyFile(dir + "aws-ofi-nccl/g5.48xl-topo.xml");
  ASSERT_FALSE(fragment.ok());
  EXPECT_NE(fragment.status().message().find("g5.48xl-topo.xml:12: describes no GPU"), std::string::npos)
      << fragment.status().message();
}

TEST(NcclTopology, MalformedOrUnknownInputNamesFileAndLine) {
  const std::string cpu = "<cpu numaid=\"0\" affinity=\"0000000f\">\n";
  const std::string gpu = "<pci busid=\"0000:09:00.0\" class=\"0x030200\"/>";
  EXPECT_EQ(ErrorOf("<system version=\"1\">\n" + cpu + "<pci busid=\"0000:01:00.0\" class=\"0x030200\">\n</cpu>\n"
                    "</system>\n"),
            "t.xml:4: Opening and ending tag mismatch: pci line 3 and cpu; NCCL writes such files with "
            "NCCL_TOPO_DUMP_FILE");  // libxml2's first message, at its line
  EXPECT_EQ(ErrorOf("<system>\n" + cpu + "  <gpux/>\n</cpu></system>"),
            "t.xml:3: unexpected element <gpux> (<cpu> holds <pci> and <nic>; an NCCL topology holds system, cpu, "
            "pci, gpu, nic, net, nvlink, xgmi)");
  EXPECT_EQ(ErrorOf("<system>\n<cpu numaid=\"0\" affinity=\"zz\">\n" + gpu + "</cpu></system>"),
            "t.xml:2: <cpu numaid=\"0\"> needs affinity=\"hex cpumask\" (like 0000ffff,ffffffff) naming its CPUs, not "
            "\"zz\"; gpulaunch binds ranks to them");
  EXPECT_EQ(ErrorOf("<system>\n" + cpu + "<pci busid=\"0000:01:00.0\" class=\"display\"/>\n" + gpu + "</cpu></system>"),
            "t.xml:3: class=\"display\" is not a hex PCI class code like 0x030200");
  EXPECT_EQ(ErrorOf("<system>\n" + cpu + "<pci class=\"0x030200\"/>\n" + gpu + "</cpu></system>"),
            "t.xml:3: <pci> needs busid=\"dddd:bb:dd.f\"");
  EXPECT_EQ(ErrorOf("<system>\n" + cpu + "<pci busid=\"0000:01:00.0\"><gpu sm=\"80\"><nvlink target=\"x\"/></gpu></pci>"
                    "\n</cpu></system>"),
            "t.xml:3: <nvlink> needs count=\"N\" links, not \"\"");
  EXPECT_EQ(ErrorOf("<system>\n" + cpu + gpu + "</cpu>\n<cpu numaid=\"1\" affinity=\"00000003\"></cpu></system>"),
            "t.xml:4: CPU 0 is in two <cpu> affinities");
}

// A small host in the vendors' second form, written out: NVLink to an NVSwitch
// joins the GPUs that have it; an IB card by class code is named by bus id.
TEST(NcclTopology, NvswitchLinksJoinTheGpusThatHaveThem) {
  const std::string xml =
      "<system version=\"1\"><cpu numaid=\"0\" affinity=\"000000ff\">"
      "<pci busid=\"0000:01:00.0\" class=\"0x060400\">"
      "<pci busid=\"0000:02:00.0\" class=\"0x030200\" vendor=\"0x10de\"><gpu dev=\"0\" sm=\"90\">"
      "<nvlink target=\"0000:ff:00.0\" count=\"18\" tclass=\"0x068000\"/></gpu></pci>"
      "<pci busid=\"0000:03:00.0\" class=\"0x030200\" vendor=\"0x10de\"><gpu dev=\"1\" sm=\"90\">"
      "<nvlink target=\"0000:ff:00.0\" count=\"18\" tclass=\"0x068000\"/></gpu></pci>"
      "<pci busid=\"0000:04:00.0\" class=\"0x020700\" vendor=\"0x15b3\"/>"
      "</pci></cpu></system>";
  auto t = LoadTopologyText(xml, "h100.xml");
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->gpus.size(), 2u);
  EXPECT_NEAR(t->GpuLinkGbps(0, 1), 18 * 20.6, 1e-9);
  ASSERT_EQ(t->nics.size(), 1u);
  EXPECT_EQ(t->nics[0].name, "0000:04:00.0");
  EXPECT_EQ(t->nics[0].kind, "infiniband");
  EXPECT_EQ(t->cores.size(), 8u);  // no second half of the CPUs: each CPU a core
}

}  // namespace
}  // namespace gpulaunch
