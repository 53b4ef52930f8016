#include "common/cluster_json.h"

#include <gtest/gtest.h>

#include "common/cluster_spec.h"
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
  EXPECT_EQ(back->hosts[0].topology->GpuLinkGbps(0, 7), 300.0);
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
    EXPECT_EQ(back->hosts[0].topology->gpus.size(), c.hosts[0].topology->gpus.size());
  }
}

// The caches' form of one host: what goes in comes back equal, and a file of
// any other number of hosts is refused, not read as its first.
TEST(ClusterJson, OneHostRoundTripsAndOnlyOneHostLoads) {
  const auto c = *MakeSyntheticCluster("switch:1 node:2 gpu:4 nic:2");
  HostTopology host = *c.hosts[0].topology;
  host.hostname.clear();  // a cluster file keeps neither: its callers keep them beside it
  host.slurm_topology_addr.clear();
  host.slurm_topology_pattern.clear();
  auto back = LoadHostJson(DumpHostJson(host), "h.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(*back == host);
  auto two = LoadHostJson(DumpClusterJson(c), "two.json");
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("two.json: holds 2 hosts"), std::string::npos) << two.status().message();
}

TEST(ClusterJson, ErrorsNameFileAndLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"{\"schema\":\"gpulaunch-cluster/v1\",\n\"nic_gbps\":25,\n\"switches\":[],\n\"hosts\":[{\"name\":\"a\"}]}",
       "c.json:4: missing \"healthy\""},
      {"{\"schema\":\"other/v9\"}", "c.json:1: unknown schema"},
      {"{\n\"schema\": \"gpulaunch-cluster/v1\",\n\"nic_gbps\": \"fast\"}", "c.json:3: \"nic_gbps\" has the wrong type"},
      {"{\"schema\":\n\"gpulaunch-cluster/v1\" \"x\"}", "c.json:2: syntax error while parsing object - unexpected string literal; expected '}'"},
      {"[1,2", "c.json:1: syntax error while parsing array - unexpected end of input; expected ']'"},
      {"{\"a\":1,\"a\":2}", "appears twice"},
  };
  for (const auto& [text, want] : cases) {
    auto c = LoadClusterJson(text, "c.json");
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_NE(c.status().message().find(want), std::string::npos) << c.status().message();
  }
}

// Nonsense that parses is refused with file:line and the field, by
// meaning: what would give a rank another rank's CPUs or none, or change the
// model by orders of magnitude.
TEST(ClusterJson, RefusesWhatNoMachineHas) {
  auto c = MakeSyntheticCluster(*ParseClusterSpec("node:2 gpu:2 numa:2 core:2"));
  ASSERT_TRUE(c.ok());
  const std::string good = DumpClusterJson(*c);
  ASSERT_TRUE(LoadClusterJson(good, "c.json").ok());
  auto edited = [&](const std::string& from, const std::string& to, int nth = 0) {
    std::string t = good;
    size_t at = t.find(from);
    for (int i = 0; i < nth && at != std::string::npos; ++i) at = t.find(from, at + 1);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? t : t.replace(at, from.size(), to);
  };
  const std::pair<std::string, std::string> cases[] = {
      {edited("\"numa\":0", "\"numa\":-3"), "\"numa\" is -3; give a whole number from -1 to 1048576"},
      {edited("\"numa\":0", "\"numa\":7"), "\"numa\" is 7, which this host does not have"},
      {edited("\"numa_node\":1", "\"numa_node\":5"), "\"numa_node\" is 5, which this host does not have"},
      {edited("\"numa\":0", "\"numa\":0.5"), "give a whole number"},
      {edited("\"nic_gbps\":", "\"nic_gbps\":-"), "\"nic_gbps\" is -"},
      {edited("\"memory_bytes\":", "\"memory_bytes\":1e300,\"x\":"), "\"memory_bytes\" is 1e+300; give bytes"},
      {edited("\"name\":\"node0002\"", "\"name\":\"node0001\""), "host \"node0001\" appears twice"},
      {edited("\"pus\":\"1\"", "\"pus\":\"0\""), "PU 0 is in two cores"},
      {edited("{\"os_index\":1,", "{\"os_index\":0,"), "os_index 0 appears twice"},
  };
  for (const auto& [text, want] : cases) {
    auto loaded = LoadClusterJson(text, "c.json");
    ASSERT_FALSE(loaded.ok()) << want;
    EXPECT_NE(loaded.status().message().find(want), std::string::npos) << loaded.status().message();
    EXPECT_EQ(loaded.status().message().rfind("c.json:", 0), 0u) << loaded.status().message();
  }
  const std::string none = good.substr(0, good.find("\"hosts\":[")) + "\"hosts\":[]}\n";
  EXPECT_NE(LoadClusterJson(none, "c.json").status().message().find("no hosts"), std::string::npos);
}

TEST(Json, WritesWhatItReads) {
  const std::string text = "{\"a\":[1,2.5,-3e-07],\"b\":{\"c\":true,\"d\":null},\"e\":\"x\\\"y\\n\"}\n";
  auto j = ParseJson(text, "t");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->Write(), text);
}

TEST(Json, ValuesKnowTheLineTheyStartOn) {
  auto j = ParseJson("{\n\"a\": 1,\n\"b\":\n  [true,\n   {\"c\": \"x\"}]\n}", "t");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->line(), 1);
  EXPECT_EQ(j->Find("a")->line(), 2);
  EXPECT_EQ(j->Find("b")->line(), 4);
  EXPECT_EQ(j->Find("b")->items()[0].line(), 4);
  EXPECT_EQ(j->Find("b")->items()[1].Find("c")->line(), 5);
}

TEST(Json, RefusesWhatNoGpulaunchFileHolds) {
  const std::pair<std::string, std::string> cases[] = {
      {std::string(65, '[') + std::string(65, ']'), "t:1: nesting deeper than 64"},
      {"{\"a\":\n1e400}", "t:2: number overflow"},
      {"{\"a\":\n\"caf\xe9\"}", "t:2: "},
      {"{\"a\":1}\n{}", "t:2: "},
      {"", "t:1: "},
  };
  for (const auto& [text, want] : cases) {
    auto j = ParseJson(text, "t");
    ASSERT_FALSE(j.ok()) << text;
    EXPECT_EQ(j.status().message().rfind(want, 0), 0u) << j.status().message();
    EXPECT_EQ(j.status().message().find("json.exception"), std::string::npos) << j.status().message();
  }
  EXPECT_TRUE(ParseJson(std::string(64, '[') + std::string(64, ']'), "t").ok());
}

TEST(Json, OneEscaperForEveryString) {
  EXPECT_EQ(JsonQuote("a\"b\\c\n\t\x01"), "\"a\\\"b\\\\c\\n\\t\\u0001\"");
  EXPECT_EQ(JsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(JsonQuote("bad\xff"), "\"bad\xef\xbf\xbd\"");  // U+FFFD
  Json o = Json::Object();
  o.Set("k\x02", Json(std::string("v\r")));
  EXPECT_EQ(o.Write(), "{\"k\\u0002\":\"v\\r\"}\n");
  auto back = ParseJson(o.Write(), "t");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->Find("k\x02")->AsString(), "v\r");
}

}  // namespace
}  // namespace gpulaunch
