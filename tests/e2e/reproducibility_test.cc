// The reproducibility promise, end to end: `gpulaunch -n K reduction_check`
// prints the same SHA-256 for K = 1..8, for permuted rank -> host mappings,
// buffer offsets, and fused versus separate buffers; every rank holds the
// same bits. Plain MPI_Allreduce on the same data does not.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <regex>
#include <set>

#include "launcher/base/process.h"

namespace gpulaunch {
namespace {

std::string Hash(int ranks, std::vector<std::string> extra) {
  std::vector<std::string> argv = {GL_BIN_DIR "/gpulaunch", "-n", std::to_string(ranks), "--oversubscribe",
                                   "--allow-run-as-root", GL_BIN_DIR "/reduction_check", "--elements", "20000",
                                   "--seed", "11"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const CapturedRun run = RunCaptured(argv, EnvironmentWith({}), 120000);
  EXPECT_EQ(WEXITSTATUS(run.wait_status), 0) << run.err;
  EXPECT_NE(run.err.find("every rank holds identical bits"), std::string::npos) << run.err;
  std::smatch m;
  static const std::regex re("^sha256 ([0-9a-f]{64})$");
  const std::string line = run.out.substr(0, run.out.find('\n'));
  EXPECT_TRUE(std::regex_match(line, m, re)) << "rank 0 must print exactly one sha256 line: " << run.out;
  return m.size() > 1 ? m[1].str() : "";
}

TEST(Reproducibility, SameHashForOneToEightRanks) {
  for (const char* dtype : {"f64", "f32"}) {
    const std::string one = Hash(1, {"--dtype", dtype});
    ASSERT_EQ(one.size(), 64u);
    for (int k = 2; k <= 8; ++k) EXPECT_EQ(Hash(k, {"--dtype", dtype}), one) << dtype << " with " << k << " ranks";
  }
}

TEST(Reproducibility, PermutedRanksOffsetsAndSplitBuffers) {
  const std::string base = Hash(4, {});
  for (const char* seed : {"1", "2", "3"}) EXPECT_EQ(Hash(4, {"--permute", seed}), base) << "permutation " << seed;
  for (const char* offset : {"1", "7"}) EXPECT_EQ(Hash(3, {"--offset", offset}), base) << "offset " << offset;
  EXPECT_EQ(Hash(5, {"--split", "7777"}), base) << "separate buffers";
  EXPECT_EQ(Hash(2, {"--leaves", "64", "--split", "1"}), base);
}

TEST(Reproducibility, ExactModeIsRankCountIndependent) {
  const std::string one = Hash(1, {"--mode", "exact", "--elements", "2000"});
  EXPECT_EQ(Hash(3, {"--mode", "exact", "--elements", "2000"}), one);
  EXPECT_EQ(Hash(4, {"--mode", "exact", "--elements", "2000", "--dtype", "f64"}), one);
}

TEST(Reproducibility, PlainMpiAllreduceIsNot) {
  std::set<std::string> hashes;
  for (int k = 1; k <= 4; ++k) hashes.insert(Hash(k, {"--mode", "mpi"}));
  EXPECT_GT(hashes.size(), 1u) << "the data is too easy: plain MPI sums agree for every rank count";
}

}  // namespace
}  // namespace gpulaunch
