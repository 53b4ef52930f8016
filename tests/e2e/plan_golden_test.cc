// Golden `gpulaunch plan` outputs on recorded machines and a synthetic
// fabric, JSON well-formedness, and bad input through the binary.
// Regenerate after an intended change: GL_UPDATE_GOLDEN=1, review the diff.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "common/strings.h"
#include "launcher/base/process.h"
#include "tests/e2e/launch_helpers.h"

namespace gpulaunch {
namespace {

const std::string kData = GL_TEST_DATA;

CapturedRun Plan(std::vector<std::string> args) {
  args.insert(args.begin(), {GL_BIN_DIR "/gpulaunch", "plan"});
  return RunCaptured(args, EnvironmentWith({}), 60000);
}

std::vector<std::string> Recorded(const char* file) {
  return {"--topology-file", kData + "/topologies/hwloc/" + file, "--hostfile", kData + "/golden/plan-hosts"};
}

struct GoldenPlan {
  const char* name;
  std::vector<std::string> args;
};

class PlanGolden : public ::testing::TestWithParam<GoldenPlan> {};

void PrintTo(const GoldenPlan& g, std::ostream* os) { *os << g.name; }

TEST_P(PlanGolden, Matches) {
  const GoldenPlan& g = GetParam();
  const CapturedRun run = Plan(g.args);
  ASSERT_EQ(WEXITSTATUS(run.wait_status), 0) << run.err;
  const std::string path = kData + "/golden/plan/" + g.name + ".txt";
  if (std::getenv("GL_UPDATE_GOLDEN")) {
    std::ofstream(path) << run.out;
    GTEST_SKIP() << "updated " << path;
  }
  std::ifstream f(path);
  std::stringstream want;
  want << f.rdbuf();
  EXPECT_EQ(run.out, want.str()) << "golden " << path << " differs; if intended, rerun with GL_UPDATE_GOLDEN=1";
}

std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

INSTANTIATE_TEST_SUITE_P(
    Topologies, PlanGolden,
    ::testing::Values(
        GoldenPlan{"dgx2_tp8_pp2_dp2", With(Recorded("open-mpi-hwloc/nvidiaDGX2.xml"), {"-n", "32", "--layout", "tp=8,pp=2"})},
        GoldenPlan{"dgx2_tp4_spread", With(Recorded("open-mpi-hwloc/nvidiaDGX2.xml"), {"-n", "8", "--layout", "tp=4", "--policy", "spread"})},
        GoldenPlan{"lassen_tp2", With(Recorded("mpibind/coral-lassen.xml"), {"-n", "8", "--layout", "tp=2", "--explain"})},
        GoldenPlan{"g4dn_tp4_pp2", With(Recorded("mpibind/g4dnmetal.xml"), {"-n", "16", "--layout", "tp=4,pp=2"})},
        GoldenPlan{"minsky_tp2", With(Recorded("open-mpi-hwloc/power8gpudistances.xml"), {"-n", "4", "--layout", "tp=2"})},
        GoldenPlan{"tuolumne_tp4", With(Recorded("flux-core/tuo.SPX.xml"), {"-n", "8", "--layout", "tp=4"})},
        GoldenPlan{"sierra_pp4", With(Recorded("flux-core/sierra.xml"), {"-n", "8", "--layout", "pp=4"})},
        GoldenPlan{"corona_order", With(Recorded("flux-core/corona.xml"), {"-n", "16", "--layout", "tp=2,pp=2,order=tp-dp-pp"})},
        GoldenPlan{"mixed_hosts", {"-n", "12", "--layout", "tp=2", "-H", "lassen:4,g4dn:8", "--topology-file",
                                   kData + "/topologies/hwloc/mpibind/coral-lassen.xml", "--topology-file",
                                   "g4dn=" + kData + "/topologies/hwloc/mpibind/g4dnmetal.xml", "--explain"}},
        GoldenPlan{"fabric_explain", {"-n", "24", "--layout", "tp=8", "--synthetic", "switch:2 node:2 gpu:8 nic:4", "--explain"}}),
    [](const ::testing::TestParamInfo<GoldenPlan>& i) { return std::string(i.param.name); });

std::string PrintedPlanHash(const std::string& out) {
  std::smatch m;
  static const std::regex re("plan hash: ([0-9a-f]{64})");
  return std::regex_search(out, m, re) ? m[1].str() : "";
}

// One plan hash: `gpulaunch plan` and a launch's --dry-run (whose hash every
// rank gets as GPULAUNCH_PLAN_HASH) name the same plan alike, on every
// recorded machine, on one host and on two, with a layout and without.
TEST(PlanCommand, PrintsTheSameHashAsTheLaunchForTheSamePlan) {
  int compared = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kData + "/topologies/hwloc")) {
    if (entry.path().extension() != ".xml") continue;
    for (const std::vector<std::string>& shape :
         {std::vector<std::string>{"-n", "2"}, std::vector<std::string>{"-n", "4", "-H", "a:2,b:2", "--layout", "pp=2"}}) {
      std::vector<std::string> common = shape;
      common.insert(common.end(), {"--topology-file", entry.path().string()});
      const CapturedRun plan = Plan(common);
      std::vector<std::string> launch = {GL_BIN_DIR "/gpulaunch", "--dry-run"};
      launch.insert(launch.end(), common.begin(), common.end());
      launch.push_back("/bin/true");
      const CapturedRun dry = RunCaptured(launch, EnvironmentWith({}), 60000);
      ASSERT_EQ(WEXITSTATUS(plan.wait_status), 0) << entry.path() << plan.err;
      ASSERT_EQ(WEXITSTATUS(dry.wait_status), 0) << entry.path() << dry.err;
      const std::string want = PrintedPlanHash(dry.out);
      ASSERT_EQ(want.size(), 64u) << dry.out;
      EXPECT_EQ(PrintedPlanHash(plan.out), want) << entry.path() << " " << Join(shape, " ") << "\nplan:\n" << plan.out
                                                 << "\ndry-run:\n" << dry.out;
      ++compared;
    }
  }
  EXPECT_GE(compared, 28) << "every recorded machine, in both shapes";
}

TEST(PlanCommand, JsonIsWellFormedAndComplete) {
  const CapturedRun run = Plan({"-n", "16", "--layout", "tp=4,pp=2", "--synthetic", "switch:2 node:2 gpu:8 nic:4",
                                "--format", "json"});
  ASSERT_EQ(WEXITSTATUS(run.wait_status), 0) << run.err;
  const auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["schema"], "gpulaunch-plan/v1");
  ASSERT_EQ(j["ranks"].size(), 16u);
  EXPECT_EQ(j["ranks"][5]["coords"]["tp"], 1);
  EXPECT_EQ(j["summary"]["hosts"], 2);
  EXPECT_GT(j["summary"]["total_seconds"].get<double>(), 0.0);
  EXPECT_TRUE(j["openmpi_by_slot"].is_object());
  // One line per host, then one per distinct NIC answer (8 GPUs a host, the same on both).
  ASSERT_EQ(j["explain"].size(), 4u + 8u);
  EXPECT_EQ(j["explain"][4], "node[0001-0002]: GPU 0 -> mlx5_0:1: PIX; mlx5_1:1 is PHB; mlx5_2:1, mlx5_3:1 are SYS");
}

TEST(PlanCommand, LayoutAutoChoosesAndExplains) {
  // GPT-2 small in 2 GiB per GPU on 2 hosts x 8 GPUs: tensor and pipeline
  // parallelism are needed, and tp must divide the 12 heads.
  const CapturedRun run = Plan({"-n", "16", "--layout", "auto", "--synthetic", "switch:2 node:2 gpu:8 nic:4",
                                "--gpu-memory", "2"});
  ASSERT_EQ(WEXITSTATUS(run.wait_status), 0) << run.err;
  EXPECT_NE(run.out.find("layout auto: gpt2-small (124M parameters, 26 layers), training step of 8 micro-batches"),
            std::string::npos) << run.out;
  EXPECT_NE(run.out.find("rejected: tp=8 does not divide the 12 attention heads"), std::string::npos);
  EXPECT_NE(run.out.find("chosen: tp=4,pp=2,dp=2,order=tp-pp-dp, the fastest modelled step"), std::string::npos);
  EXPECT_NE(run.out.find("plan: 16 ranks, layout tp=4,pp=2,dp=2,order=tp-pp-dp"), std::string::npos);
  // With room and fast links inside one host, less tensor parallelism wins.
  const CapturedRun roomy = Plan({"-n", "8", "--layout", "auto", "--synthetic", "node:1 gpu:8 nic:4", "--gpu-memory", "80"});
  ASSERT_EQ(WEXITSTATUS(roomy.wait_status), 0) << roomy.err;
  EXPECT_NE(roomy.out.find("chosen: tp=2,pp=1,dp=4"), std::string::npos) << roomy.out;
  // Nothing fits: exit 2 with every candidate's reason.
  const CapturedRun none = Plan({"-n", "2", "--layout", "auto", "--synthetic", "node:1 gpu:2", "--gpu-memory", "0.5",
                                 "--model", "gpt2-xl"});
  EXPECT_EQ(WEXITSTATUS(none.wait_status), 2);
  EXPECT_NE(none.err.find("layer 0 (embedding) alone needs"), std::string::npos) << none.err;
}

// Runs `gpulaunch plan args` (output discarded); its exit code and peak
// resident memory in KiB. Memory, unlike time, does not depend on the load.
std::pair<int, long> PlanPeakRss(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {GL_BIN_DIR "/gpulaunch", "plan"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execv(raw[0], raw.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, usage.ru_maxrss};
}

// 65,536 hosts of one topology file share one copy of it (cluster_topology.h):
// 32 MB here, where a copy per host took 675 MB.
TEST(PlanCommand, ALongHostListOfOneTopologyStaysSmall) {
  const auto [code, kib] = PlanPeakRss({"-H", "n[1-65536]", "-n", "1", "--topology-file",
                                        kData + "/topologies/hwloc/flux-core/sierra.xml"});
  EXPECT_EQ(code, 0);
  EXPECT_LT(kib, 160 * 1024) << "peak RSS " << kib << " KiB";
}

TEST(PlanCommand, BadInputExitsTwoWithTheReason) {
  const TempDir scratch("bad-input");  // removed at the end: the suite leaves nothing in /tmp
  std::ofstream(scratch / "bad.topology.conf") << "SwitchName=a Nodes=node[1-2]\nSwitchName=b Nodes=x y\n";
  std::ofstream(scratch / "bad.xml") << "<?xml version=\"1.0\"?>\n<topology>\n <object type=\"Machine\">\n</topology>\n";
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"-n", "64", "--synthetic", "node:2 gpu:8"}, "needs 64 GPUs (64 ranks x 1) but the 2 eligible hosts offer 16 usable free GPUs: short by 48"},
      {{"-n", "8", "--layout", "tp=3", "--synthetic", "node:2 gpu:8"}, "does not divide"},
      {{"-n", "8", "--synthetic", "node:2 gpu:8", "--policy", "random"}, "unknown policy 'random'"},
      {{"-n", "8", "--synthetic", "node:2 gpux:8"}, "'gpux:8' has no known key"},
      {{"-n", "4", "--synthetic", "node:2 gpu:8", "--network", scratch / "bad.topology.conf"}, "bad.topology.conf:2: 'y' is not KEY=VALUE"},
      {{"-n", "4", "--topology-file", scratch / "bad.xml", "-H", "a"}, "bad.xml:4: </topology> closes <object> opened on line 3"},
      {{"--synthetic", "node:1"}, "needs -n N"},
      {{"-n", "2", "--layout", "auto", "--synthetic", "node:1 gpu:2", "--model", "gpt9"}, "unknown model 'gpt9'"},
      {{"-n", "2", "-H", "a,b", "--topology-file", "c=" + kData + "/topologies/hwloc/mpibind/g4dnmetal.xml"},
       "host 'c' is not among the hosts"},
      {{"-n", "2", "-H", "a,b", "--topology-file", "a=" + kData + "/topologies/hwloc/mpibind/g4dnmetal.xml"},
       "no topology for host 'b'"},
  };
  for (const auto& [args, want] : cases) {
    const CapturedRun run = Plan(args);
    EXPECT_EQ(WEXITSTATUS(run.wait_status), 2) << want << ": " << run.err;
    EXPECT_NE(run.err.find(want), std::string::npos) << run.err;
  }
}

}  // namespace
}  // namespace gpulaunch
