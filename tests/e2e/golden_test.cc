// Golden `gpulaunch --dry-run` outputs on real recorded topologies: the plan
// table, the rankfile and the exact mpirun command. Regenerate after an
// intended change with GL_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "launcher/base/process.h"

namespace gpulaunch {
namespace {

struct GoldenCase {
  const char* name;
  const char* topology;
  std::vector<std::string> args;
};

// Names the case in test listings (instead of its bytes).
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
  return s;
}

class Golden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(Golden, DryRunMatches) {
  const GoldenCase& c = GetParam();
  const std::string data = GL_TEST_DATA;
  std::vector<std::string> argv = {GL_BIN_DIR "/gpulaunch", "--dry-run", "--topology-file",
                                   data + "/topologies/hwloc/" + c.topology, "--hostfile", data + "/golden/hosts"};
  argv.insert(argv.end(), c.args.begin(), c.args.end());
  argv.insert(argv.end(), {"./train", "--config", "a b.yaml"});
  const CapturedRun run = RunCaptured(argv, EnvironmentWith({}), 30000);
  ASSERT_EQ(WEXITSTATUS(run.wait_status), 0) << run.err;
  const std::string got = ReplaceAll(run.out, GL_BIN_DIR, "{bin}");
  const std::string path = data + "/golden/" + c.name + ".txt";
  if (std::getenv("GL_UPDATE_GOLDEN")) {
    std::ofstream(path) << got;
    GTEST_SKIP() << "updated " << path;
  }
  EXPECT_EQ(got, ReadFile(path)) << "golden " << path << " differs; if intended, rerun with GL_UPDATE_GOLDEN=1";
}

INSTANTIATE_TEST_SUITE_P(
    RecordedTopologies, Golden,
    ::testing::Values(GoldenCase{"lassen_n8", "mpibind/coral-lassen.xml", {"-n", "8"}},
                      GoldenCase{"lassen_n6_x", "mpibind/coral-lassen.xml", {"-n", "6", "-x", "NCCL_DEBUG=INFO"}},
                      GoldenCase{"g4dn_n16", "mpibind/g4dnmetal.xml", {"-n", "16"}},
                      GoldenCase{"dgx2_n32", "open-mpi-hwloc/nvidiaDGX2.xml", {"-n", "32"}},
                      GoldenCase{"tuolumne_n8", "flux-core/tuo.SPX.xml", {"-n", "8"}},
                      GoldenCase{"sierra_n4", "flux-core/sierra.xml", {"-n", "4"}},
                      GoldenCase{"corona_n3", "flux-core/corona.xml", {"-n", "3"}},
                      GoldenCase{"chimera_oversubscribed", "flux-sched/chimera.xml", {"-n", "6", "--oversubscribe"}}),
    [](const ::testing::TestParamInfo<GoldenCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace gpulaunch
