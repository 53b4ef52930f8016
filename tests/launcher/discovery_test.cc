// Every recorded hwloc topology in tests/data loads with the GPUs, NICs and
// cores its README documents, and GPU-first placement on it keeps each rank's
// cores and NIC local to its GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "launcher/discovery/hwloc_source.h"
#include "launcher/discovery/ucx_devices.h"
#include "policies/slot_placement.h"
#include "tests/launcher/recorded_topologies.h"

namespace gpulaunch {
namespace {

TEST(RecordedTopologies, LoadWithDocumentedDevices) {
  for (const Recorded& r : kRecorded) {
    auto t = LoadHwlocXmlFile(PathOf(r.file));
    ASSERT_TRUE(t.ok()) << r.file << ": " << t.status().ToString();
    EXPECT_EQ(t->gpus.size(), r.gpus) << r.file;
    EXPECT_EQ(t->nics.size(), r.nics) << r.file;
    EXPECT_EQ(t->cores.size(), r.cores) << r.file;
    ASSERT_FALSE(t->gpus.empty());
    EXPECT_EQ(t->gpus[0].vendor, r.first_gpu_vendor) << r.file;
    for (size_t i = 0; i < t->gpus.size(); ++i) {
      EXPECT_EQ(t->gpus[i].index, static_cast<int>(i));
      if (i > 0) {
        EXPECT_LT(t->gpus[i - 1].pci_bus_id, t->gpus[i].pci_bus_id) << "GPUs not in PCI bus order";
      }
    }
  }
}

TEST(RecordedTopologies, PackagesHoldTheirCores) {
  const std::pair<const char*, size_t> cases[] = {{"mpibind/coral-lassen.xml", 2}, {"flux-core/tuo.SPX.xml", 4},
                                                  {"mpibind/g4dnmetal.xml", 2}, {"flux-sched/chimera.xml", 1}};
  for (const auto& [file, packages] : cases) {
    auto t = LoadHwlocXmlFile(PathOf(file));
    ASSERT_EQ(t->packages.size(), packages) << file;
    for (const Core& c : t->cores) {
      const auto p = std::find_if(t->packages.begin(), t->packages.end(),
                                  [&](const Package& pk) { return pk.os_index == c.package; });
      ASSERT_NE(p, t->packages.end()) << file << " core " << c.logical_index;
      EXPECT_TRUE(std::binary_search(p->pus.begin(), p->pus.end(), c.pus.front()));
    }
  }
}

TEST(RecordedTopologies, UuidsAndModelsWhenRecorded) {
  auto lassen = LoadHwlocXmlFile(PathOf("mpibind/coral-lassen.xml"));
  ASSERT_TRUE(lassen.ok());
  EXPECT_EQ(lassen->gpus[0].model, "Tesla V100-SXM2-16GB");
  EXPECT_EQ(lassen->gpus[0].uuid.rfind("GPU-", 0), 0u);
  EXPECT_GT(lassen->gpus[0].memory_bytes, 15ull << 30);
  EXPECT_EQ(lassen->nics[0].name, "mlx5_0:1");
  EXPECT_EQ(lassen->nics[0].kind, "infiniband");
  auto g4dn = LoadHwlocXmlFile(PathOf("mpibind/g4dnmetal.xml"));
  EXPECT_EQ(g4dn->nics[0].kind, "efa");
  auto tuo = LoadHwlocXmlFile(PathOf("flux-core/tuo.SPX.xml"));
  EXPECT_EQ(tuo->nics[0].kind, "slingshot");
}

TEST(RecordedTopologies, GpuLinksFromNvlinkAndXgmiMatrices) {
  // DGX-2: every pair through the NVSwitch fabric, 6 links x 25 GB/s; on the
  // first baseboard one switch's PCI id is anonymised upstream, so its GPUs
  // show 5 links (125), and a pair is as fast as its slower GPU.
  auto dgx = LoadHwlocXmlFile(PathOf("open-mpi-hwloc/nvidiaDGX2.xml"));
  ASSERT_EQ(dgx->gpu_link_gbps.size(), 16u * 16u);
  for (int a = 0; a < 16; ++a) {
    for (int b = 0; b < 16; ++b) {
      const double want = a == b ? 0.0 : (a >= 8 && b >= 8 ? 150.0 : 125.0);
      EXPECT_EQ(dgx->GpuLinkGbps(a, b), want) << a << "," << b;
    }
  }
  // Minsky: NVLink pairs per socket (2 x 20 GB/s), nothing across sockets.
  auto minsky = LoadHwlocXmlFile(PathOf("open-mpi-hwloc/power8gpudistances.xml"));
  EXPECT_EQ(minsky->GpuLinkGbps(0, 1), 40.0);
  EXPECT_EQ(minsky->GpuLinkGbps(2, 3), 40.0);
  EXPECT_EQ(minsky->GpuLinkGbps(0, 3), 0.0);
  // MI300A: XGMI between the APUs; partitions of one APU merge into it.
  auto tuo = LoadHwlocXmlFile(PathOf("flux-core/tuo.TPX.xml"));
  EXPECT_EQ(tuo->GpuLinkGbps(0, 3), 100.0);
  // PCIe-only machines record no links.
  EXPECT_TRUE(LoadHwlocXmlFile(PathOf("mpibind/g4dnmetal.xml"))->gpu_link_gbps.empty());
}

TEST(RecordedTopologies, GpuRanksGetLocalCoresAndTheNearestNic) {
  for (const Recorded& r : kRecorded) {
    auto t = LoadHwlocXmlFile(PathOf(r.file));
    ASSERT_TRUE(t.ok());
    auto p = PlaceBySlot(SlotJob(0, false), {ClusterHost{.name = "h", .topology = *t}});
    ASSERT_TRUE(p.ok()) << r.file << ": " << p.status().ToString();
    ASSERT_EQ(p->ranks.size(), r.gpus) << r.file;
    for (const RankSlot& rank : p->ranks) {
      ASSERT_EQ(rank.gpus.size(), 1u);
      const Gpu& gpu = t->gpus[rank.gpus[0]];
      if (!gpu.local_pus.empty() && gpu.numa_node >= 0) {
        for (int cpu : rank.cpus) {
          EXPECT_TRUE(std::binary_search(gpu.local_pus.begin(), gpu.local_pus.end(), cpu))
              << r.file << " rank " << rank.rank << " cpu " << cpu << " is not local to GPU " << gpu.index;
        }
      }
      if (t->nics.empty()) {
        EXPECT_TRUE(rank.nic.empty());
        continue;
      }
      const bool local_nic_exists =
          std::any_of(t->nics.begin(), t->nics.end(), [&](const Nic& n) { return n.numa_node == gpu.numa_node; });
      const auto chosen = std::find_if(t->nics.begin(), t->nics.end(), [&](const Nic& n) { return n.name == rank.nic; });
      ASSERT_NE(chosen, t->nics.end()) << r.file;
      if (local_nic_exists) {
        EXPECT_EQ(chosen->numa_node, gpu.numa_node) << r.file << " rank " << rank.rank;
      }
    }
  }
}

TEST(RecordedTopologies, MalformedXmlIsAClearError) {
  auto t = LoadHwlocXmlText("<html>nope</html>", "bad.xml");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("bad.xml:1: not an hwloc XML"), std::string::npos);
  auto missing = LoadHwlocXmlFile("/nonexistent.xml");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto broken = LoadHwlocXmlText("<?xml version=\"1.0\"?><topology><object type=", "broken.xml");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("broken.xml:1: '<' is never closed"), std::string::npos)
      << broken.status().message();
  auto mismatched = LoadHwlocXmlText("<topology>\n<object>\n</topology>\n", "m.xml");
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.status().message().find("m.xml:3: </topology> closes <object> opened on line 2"),
            std::string::npos)
      << mismatched.status().message();
}

TEST(UcxDevices, ParsesUcxInfoOutput) {
  const std::string out =
      "#      Memory domain: mlx5_0\n#   Transport: rc_verbs\n#      Device: mlx5_0:1\n"
      "#   Transport: tcp\n#      Device: eth0\n#      Device: lo\n#   Transport: sysv\n#      Device: memory\n";
  EXPECT_EQ(ParseUcxDevices(out), (std::set<std::string>{"mlx5_0:1", "eth0", "lo", "memory"}));
  // On this machine, when UCX is installed, its own devices come back.
  if (const auto here = QueryUcxDevices()) {
    EXPECT_TRUE(here->count("lo") || here->count("memory"));
  }
}

TEST(UcxDevices, ProbeCommentFiltersNics) {
  std::ifstream f(PathOf("mpibind/coral-lassen.xml"));
  std::string xml((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto all = LoadHwlocXmlText(xml, "lassen");
  ASSERT_EQ(all->nics.size(), 4u);
  auto filtered = LoadHwlocXmlText(xml + "\n<!-- gpulaunch-ucx-devices: mlx5_0:1 mlx5_2:1 eth0 lo -->\n", "lassen");
  ASSERT_TRUE(filtered.ok()) << filtered.status().ToString();
  ASSERT_EQ(filtered->nics.size(), 2u);
  EXPECT_EQ(filtered->nics[0].name, "mlx5_0:1");
  EXPECT_EQ(filtered->nics[1].name, "mlx5_2:1");
}


}  // namespace
}  // namespace gpulaunch
