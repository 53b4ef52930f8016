#include "common/cluster_json.h"

#include <gtest/gtest.h>

#include "common/json.h"
#include "common/synthetic_cluster.h"
#include "launcher/discovery/hwloc_source.h"

namespace gpulaunch {
namespace {

TEST(ClusterJson, RoundTripsByteForByte) {
  auto c = *MakeSyntheticCluster("switch:2 node:2 gpu:8 nic:4");
  c.hosts[1].healthy = false;
  c.hosts[2].gpu_busy = {true, false, false, true, false, false, false, false};
  const std::string once = DumpClusterJson(c);
  auto back = LoadClusterJson(once, "c.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(DumpClusterJson(*back), once);
  EXPECT_FALSE(back->hosts[1].healthy);
  EXPECT_EQ(back->hosts[2].FreeGpus(), 6);
  EXPECT_EQ(back->network.SwitchesBetween("node0001", "node0004"), 3);
  EXPECT_EQ(back->hosts[0].topology.GpuLinkGbps(0, 7), 300.0);
}

TEST(ClusterJson, RoundTripsEveryRecordedMachine) {
  for (const char* f : {"open-mpi-hwloc/nvidiaDGX2.xml", "mpibind/coral-lassen.xml", "flux-core/tuo.CPX.xml",
                        "flux-sched/chimera.xml", "mpibind/g4dnmetal.xml"}) {
    ClusterTopology c;
    c.hosts.push_back({"h", *LoadHwlocXmlFile(std::string(GL_TEST_DATA) + "/topologies/hwloc/" + f), true, {}, std::nullopt});
    const std::string once = DumpClusterJson(c);
    auto back = LoadClusterJson(once, f);
    ASSERT_TRUE(back.ok()) << f << ": " << back.status().ToString();
    EXPECT_EQ(DumpClusterJson(*back), once) << f;
    EXPECT_EQ(back->hosts[0].topology.gpus.size(), c.hosts[0].topology.gpus.size());
  }
}

TEST(ClusterJson, ErrorsNameFileAndLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"{\"schema\":\"gpulaunch-cluster/v1\",\n\"nic_gbps\":25,\n\"switches\":[],\n\"hosts\":[{\"name\":\"a\"}]}",
       "c.json:4: missing \"healthy\""},
      {"{\"schema\":\"other/v9\"}", "c.json:1: unknown schema"},
      {"{\n\"schema\": \"gpulaunch-cluster/v1\",\n\"nic_gbps\": \"fast\"}", "c.json:3: \"nic_gbps\" has the wrong type"},
      {"{\"schema\":\n\"gpulaunch-cluster/v1\" \"x\"}", "c.json:2: expected ',' or '}'"},
      {"[1,2", "c.json:1: expected ',' or ']'"},
      {"{\"a\":1,\"a\":2}", "appears twice"},
  };
  for (const auto& [text, want] : cases) {
    auto c = LoadClusterJson(text, "c.json");
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_NE(c.status().message().find(want), std::string::npos) << c.status().message();
  }
}

TEST(Json, WritesWhatItReads) {
  const std::string text = "{\"a\":[1,2.5,-3e-07],\"b\":{\"c\":true,\"d\":null},\"e\":\"x\\\"y\\n\"}\n";
  auto j = ParseJson(text, "t");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->Write(), text);
}

}  // namespace
}  // namespace gpulaunch
