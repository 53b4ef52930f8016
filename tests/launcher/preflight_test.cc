#include "launcher/check/preflight.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

// Four healthy hosts node1..node4 on 10.0.0.1..4 (eth0, MTU 9000, 100 Gb/s).
std::vector<HostProbe> Healthy() {
  std::vector<HostProbe> probes;
  for (int i = 1; i <= 4; ++i) {
    HostProbe p;
    p.host = "node" + std::to_string(i);
    p.addresses = {"10.0.0." + std::to_string(i)};
    p.reverse_name = p.host + ".cluster";
    p.asked_s = 1000.0;
    p.answered_s = 1000.4;
    HostFacts f;
    f.host = p.host;
    f.hostname = p.host;
    f.time_s = 1000.3;
    f.gpulaunch_version = "0.1.0";
    f.mpi_version = "mpirun (Open MPI) 4.1.4";
    f.ucx_version = "1.13.1";
    f.driver_version = "550.54";
    f.interfaces = {{"lo", "unknown", 65536, -1, {"127.0.0.1"}}, {"eth0", "up", 9000, 100000, {p.addresses[0]}}};
    f.nvml = true;
    f.hwloc_gpus = 2;
    f.gpus = {{"0000:1a:00.0", "GPU-a" + std::to_string(i), "NVIDIA H100", 80ull << 30, 40, 0},
              {"0000:1b:00.0", "GPU-b" + std::to_string(i), "NVIDIA H100", 80ull << 30, 45, 0}};
    f.gpu_nics = {{"0000:1a:00.0", "mlx5_0:1", "PIX"}, {"0000:1b:00.0", "mlx5_1:1", "PIX"}};
    f.free_ports = 1000;
    f.tmp_dir = "/tmp";
    f.recorded = {{"vm.swappiness", "60"}};
    p.facts = f;
    probes.push_back(p);
  }
  return probes;
}

const CheckOutcome& Check(const PreflightHost& h, const std::string& name) {
  for (const CheckOutcome& c : h.checks)
    if (c.name == name) return c;
  static const CheckOutcome none;
  return none;
}

TEST(Preflight, HealthyHostsPassEveryCheck) {
  const auto hosts = EvaluatePreflight(Healthy(), {});
  ASSERT_EQ(hosts.size(), 4u);
  for (const PreflightHost& h : hosts) {
    EXPECT_TRUE(h.ok()) << h.host;
    EXPECT_EQ(Check(h, "binary").state, CheckState::kSkip);
  }
  EXPECT_EQ(Check(hosts[0], "clock").detail, "offset +0.10 s (within 0.20 s)");
  EXPECT_EQ(Check(hosts[0], "mtu").detail, "eth0 9000");
  EXPECT_EQ(Check(hosts[0], "nic").detail, "eth0 up, 100000 Mb/s");
  EXPECT_EQ(Check(hosts[0], "gpus").detail, "2 GPUs, hottest 45 C, no ECC errors");
  const std::string table = RenderPreflightTable(hosts);
  EXPECT_EQ(Check(hosts[0], "gpu-nic").detail, "0000:1a:00.0 -> mlx5_0:1 PIX, 0000:1b:00.0 -> mlx5_1:1 PIX");
  EXPECT_NE(table.find("node3            ok       ok       ok       ok       ok       ok       ok       ok       ok       ok       -"),
            std::string::npos)
      << table;
}

TEST(Preflight, EachPlantedFaultIsNamedOnItsHost) {
  auto probes = Healthy();
  probes[0].facts->time_s += 5;                          // node1: clock 5 s ahead
  probes[1].reverse_name = "node7.cluster";              // node2: reverse DNS points elsewhere
  probes[2].facts->interfaces[1].mtu = 1500;             // node3: MTU mismatch
  probes[2].facts->ucx_version = "1.12.0";               //        and an older UCX
  probes[3].facts->interfaces[1].state = "down";         // node4: data NIC down
  probes[3].facts->gpus.pop_back();                      //        a GPU gone from NVML
  probes[3].facts->free_ports = 0;
  probes[3].facts->tmp_error = "cannot create a file in /tmp: Read-only file system";
  PreflightOptions o;
  o.binary_given = true;
  probes[1].facts->binary_error = "/opt/job does not exist";
  const auto hosts = EvaluatePreflight(probes, o);
  EXPECT_EQ(Check(hosts[0], "clock").state, CheckState::kFail);
  EXPECT_NE(Check(hosts[0], "clock").detail.find("offset +5.10 s"), std::string::npos) << Check(hosts[0], "clock").detail;
  EXPECT_EQ(Check(hosts[1], "clock").state, CheckState::kPass);
  EXPECT_EQ(Check(hosts[1], "dns").detail, "node2 -> 10.0.0.2 -> node7.cluster, not back to it");
  EXPECT_EQ(Check(hosts[1], "binary").detail, "/opt/job does not exist");
  EXPECT_EQ(Check(hosts[2], "mtu").detail, "eth0 MTU 1500 here, 9000 on node1, node2, node4");
  EXPECT_EQ(Check(hosts[2], "versions").detail, "UCX 1.12.0 here, 1.13.1 on node1, node2, node4");
  EXPECT_EQ(Check(hosts[3], "nic").detail, "eth0 is down");
  EXPECT_EQ(Check(hosts[3], "gpus").detail, "NVML sees 1 of the 2 GPUs on the PCI bus");
  EXPECT_EQ(Check(hosts[3], "ports").state, CheckState::kFail);
  EXPECT_EQ(Check(hosts[3], "tmp").state, CheckState::kFail);
  for (const PreflightHost& h : hosts) EXPECT_FALSE(h.ok()) << h.host;
  EXPECT_NE(RenderPreflightTable(hosts).find("node3: mtu: eth0 MTU 1500 here, 9000 on node1, node2, node4\n"),
            std::string::npos);
}

// --binary: each host's MPI for the program is shown; a host whose copy links
// another MPI fails, and so does every host when no engine starts the MPI.
TEST(Preflight, TheBinarysMpiMustBeOneAndStartable) {
  auto probes = Healthy();
  for (auto& p : probes) {
    p.facts->binary = "/opt/job";
    p.facts->binary_mpi = "Open MPI (libmpi.so.40)";
  }
  probes[2].facts->binary_mpi = "MPICH ABI (MPICH, Intel MPI, MVAPICH) (libmpich.so.12)";
  PreflightOptions o;
  o.binary_given = true;
  auto hosts = EvaluatePreflight(probes, o);
  EXPECT_EQ(Check(hosts[0], "binary").state, CheckState::kPass);
  EXPECT_EQ(Check(hosts[0], "binary").detail, "/opt/job: MPI Open MPI (libmpi.so.40)");
  EXPECT_EQ(Check(hosts[2], "binary").state, CheckState::kFail);
  EXPECT_EQ(Check(hosts[2], "binary").detail,
            "/opt/job: MPI MPICH ABI (MPICH, Intel MPI, MVAPICH) (libmpich.so.12) here, Open MPI (libmpi.so.40) on "
            "node1, node2, node4");
  EXPECT_NE(RenderPreflightTable(hosts).find("node1: binary: /opt/job: MPI Open MPI (libmpi.so.40)\n"),
            std::string::npos);
  probes[2].facts->binary_mpi = "Open MPI (libmpi.so.40)";
  o.binary_engine_refusal = "no engine here starts it";
  hosts = EvaluatePreflight(probes, o);
  for (const PreflightHost& h : hosts) {
    EXPECT_EQ(Check(h, "binary").state, CheckState::kFail) << h.host;
    EXPECT_EQ(Check(h, "binary").detail, "no engine here starts it");
  }
}

TEST(Preflight, GpuHealthAndAMissingDriver) {
  auto probes = Healthy();
  probes[0].facts->gpus[0].temperature_c = 93;
  probes[1].facts->gpus[1].ecc_uncorrected = 2;
  probes[2].facts->nvml = false;
  probes[2].facts->gpus.clear();
  const auto hosts = EvaluatePreflight(probes, {});
  EXPECT_EQ(Check(hosts[0], "gpus").detail, "0000:1a:00.0 at 93 C");
  EXPECT_EQ(Check(hosts[1], "gpus").detail, "0000:1b:00.0 has 2 uncorrected ECC errors");
  EXPECT_EQ(Check(hosts[2], "gpus").detail,
            "2 NVIDIA GPUs on the PCI bus but NVML does not answer (is the driver loaded?)");
  EXPECT_TRUE(hosts[3].ok());
}

// A GPU whose nearest NIC is farther than on the other hosts with as many
// GPUs (its own NIC missing): named on that host. A host with other GPUs
// is compared with its own kind only; one without NICs or GPUs is skipped.
TEST(Preflight, AGpuWithAFartherNicThanOnItsPeersIsNamed) {
  auto probes = Healthy();
  probes[1].facts->gpu_nics[1] = {"0000:1b:00.0", "mlx5_0:1", "SYS"};
  probes[2].facts->gpu_nics.clear();
  probes[3].facts->gpu_nics.push_back({"0000:1c:00.0", "mlx5_1:1", "SYS"});
  HostProbe bare = probes[0];
  bare.host = "cpu1";
  bare.facts->hwloc_gpus = 0;
  bare.facts->gpus.clear();
  bare.facts->gpu_nics.clear();
  probes.push_back(bare);
  const auto hosts = EvaluatePreflight(probes, {});
  EXPECT_EQ(Check(hosts[0], "gpu-nic").state, CheckState::kPass);
  EXPECT_EQ(Check(hosts[1], "gpu-nic").state, CheckState::kFail);
  EXPECT_EQ(Check(hosts[1], "gpu-nic").detail,
            "nearest NICs per GPU PIX,SYS here, PIX,PIX on node1: is a NIC missing, down or in another slot?");
  EXPECT_EQ(Check(hosts[2], "gpu-nic").state, CheckState::kSkip);
  EXPECT_EQ(Check(hosts[2], "gpu-nic").detail, "no data NICs");
  EXPECT_EQ(Check(hosts[3], "gpu-nic").state, CheckState::kPass);  // the only host with 3 GPUs
  EXPECT_EQ(Check(hosts[4], "gpu-nic").detail, "no GPUs");
}

TEST(Preflight, AnUnreachableHostFailsReachAndSkipsTheRest) {
  auto probes = Healthy();
  probes[1].facts.reset();
  probes[1].error = "no answer within --budget 3 s";
  const auto hosts = EvaluatePreflight(probes, {});
  EXPECT_EQ(Check(hosts[1], "reach").state, CheckState::kFail);
  EXPECT_EQ(Check(hosts[1], "reach").detail, "no answer within --budget 3 s");
  EXPECT_EQ(Check(hosts[1], "mtu").state, CheckState::kSkip);
  EXPECT_TRUE(hosts[0].ok());
  EXPECT_NE(PreflightJson(hosts).find("\"reach\":{\"state\":\"fail\",\"detail\":\"no answer within --budget 3 s\"}"),
            std::string::npos);
}

TEST(Preflight, LoopbackAliasResolvesBackThroughLocalhost) {
  auto probes = Healthy();
  probes.resize(1);
  probes[0].host = "vm";
  probes[0].addresses = {"127.0.0.1"};
  probes[0].reverse_name = "localhost";
  probes[0].reverse_confirms = false;
  EXPECT_EQ(Check(EvaluatePreflight(probes, {})[0], "dns").state, CheckState::kFail);
  probes[0].reverse_confirms = true;  // localhost -> 127.0.0.1 again
  EXPECT_EQ(Check(EvaluatePreflight(probes, {})[0], "dns").state, CheckState::kPass);
}

TEST(Preflight, BaselineRoundTripsAndComparisonSaysWhatChanged) {
  auto probes = Healthy();
  const std::string saved = BaselineJson(probes);
  auto baseline = ParseBaseline(saved, "base.json");
  ASSERT_TRUE(baseline.ok()) << baseline.status().message();
  ASSERT_EQ(baseline->size(), 4u);
  EXPECT_EQ(baseline->at("node2").gpus[1].uuid, "GPU-b2");
  EXPECT_TRUE(CompareWithBaseline(*baseline, probes).empty());
  probes[2].facts->interfaces[1].mtu = 1500;
  probes[0].facts->driver_version = "555.42";
  probes[1].facts->recorded["vm.swappiness"] = "10";
  probes.pop_back();  // node4 not checked now
  const auto changes = CompareWithBaseline(*baseline, probes);
  EXPECT_EQ(changes, (std::vector<std::string>{"node1: driver_version 550.54 -> 555.42",
                                               "node2: vm.swappiness 60 -> 10", "node3: mtu eth0 9000 -> 1500",
                                               "node4: in the baseline, not checked now"}));
  EXPECT_FALSE(ParseBaseline("{\"format\":\"other\"}", "x.json").ok());
  auto bad = ParseBaseline("{", "x.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("x.json"), std::string::npos);
}

TEST(HostFacts, JsonRoundTripAndTheProbesMarkers) {
  const HostFacts f = *Healthy()[0].facts;
  const std::string out = "engine noise\n" + std::string(kFactsBegin) + "\n" + HostFactsToJson(f).Write() + "\n" +
                          kFactsEnd + "\nmore noise\n";
  auto back = ParseFactsOutput(out, "facts of node1");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(HostFactsToJson(*back).Write(), HostFactsToJson(f).Write());
  EXPECT_FALSE(ParseFactsOutput("nothing", "facts of node1").ok());
}

TEST(HostFacts, GatheredHereAreSane) {
  const HostFacts f = GatherHostFacts("here", "/bin/sh");
  EXPECT_EQ(f.host, "here");
  EXPECT_FALSE(f.hostname.empty());
  EXPECT_GT(f.time_s, 1.7e9);
  EXPECT_FALSE(f.interfaces.empty());
  EXPECT_EQ(f.binary, "/bin/sh");
  EXPECT_EQ(f.binary_error, "");
  EXPECT_EQ(f.tmp_error, "");
  EXPECT_TRUE(f.recorded.count("memlock"));
  EXPECT_EQ(GatherHostFacts("here", "gl-no-such-program").binary_error, "gl-no-such-program is not in PATH");
}

}  // namespace
}  // namespace gpulaunch
