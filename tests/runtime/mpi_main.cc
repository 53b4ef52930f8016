// runtime_mpi_test: the communicator conformance suite and the deterministic
// reduction over real MPI ranks. Run it under gpulaunch or mpirun with any
// number of ranks; only rank 0 prints; every rank's result decides the exit.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "runtime/deterministic_reducer.h"
#include "runtime/gpurt.h"
#include "runtime/mpi_communicator.h"
#include "runtime/process_groups.h"
#include "tests/runtime/communicator_conformance.h"

namespace gpulaunch::rt {
namespace {

std::unique_ptr<Runtime> g_runtime;

TEST(MpiConformance, Passes) { testing::RunCommunicatorConformance(g_runtime->world()); }

TEST(MpiRuntime, InitReadsTheContractAndHosts) {
  EXPECT_EQ(g_runtime->env().world_size, g_runtime->world().size());
  EXPECT_EQ(static_cast<int>(g_runtime->hosts().size()), g_runtime->world().size());
  if (std::getenv("GPULAUNCH_PLAN_HASH")) {
    EXPECT_EQ(g_runtime->env().plan_hash.size(), 64u);
  }
}

TEST(MpiRuntime, DeterministicAllreduceEqualsTheOneRankResult) {
  Communicator& world = g_runtime->world();
  const size_t count = 10007;
  const int leaves = 64;
  auto leaf = [&](int l) {
    std::vector<double> v(count);
    for (size_t i = 0; i < count; ++i) v[i] = std::ldexp(1.0 + ((l * 31 + i * 17) % 97) / 97.0, int((l * 13 + i) % 200) - 100) * ((l + i) % 3 ? 1 : -1);
    return v;
  };
  // The one-rank result, computed on every rank alone.
  LeafSum<double> alone(count, leaves, 0, leaves);
  for (int l = 0; l < leaves; ++l) ASSERT_TRUE(alone.AddLeaf(leaf(l).data()).ok());
  auto mine = LeafSum<double>::ForRank(count, leaves, world.rank(), world.size());
  for (int l = mine.first_leaf(); l < mine.end_leaf(); ++l) ASSERT_TRUE(mine.AddLeaf(leaf(l).data()).ok());
  ASSERT_EQ(alone.nodes().size(), 1u);
  // The flat algorithm; the ranks' real hosts (hierarchical when they span
  // several); and the hierarchical one over pretend hosts of 2 and 3 ranks,
  // so that even a one-host run sends its messages over real MPI.
  // With pretend switches of two pretend hosts, the switch level runs too;
  // and the plan's switches (GPULAUNCH_SWITCH) when the launch had a tree.
  std::vector<int> pairs, triples, quads;
  for (int r = 0; r < world.size(); ++r) {
    pairs.push_back(r / 2), triples.push_back(r / 3), quads.push_back(r / 4);
  }
  const std::vector<ReduceConfig> configs = {
      {leaves, ElementType::kFloat64, ReduceAlgorithm::kFlat},
      {leaves, ElementType::kFloat64, ReduceAlgorithm::kAuto, HostIndices(g_runtime->hosts())},
      {leaves, ElementType::kFloat64, ReduceAlgorithm::kHierarchical, pairs},
      {leaves, ElementType::kFloat64, ReduceAlgorithm::kHierarchical, triples},
      {leaves, ElementType::kFloat64, ReduceAlgorithm::kHierarchical, pairs, quads},
      {leaves, ElementType::kFloat64, ReduceAlgorithm::kAuto, HostIndices(g_runtime->hosts()),
       HostIndices(g_runtime->switches())}};
  for (const ReduceConfig& config : configs) {
    auto reducer = DeterministicReducer::Create(world, config);
    ASSERT_TRUE(reducer.ok()) << reducer.status().ToString();
    std::vector<double> out(count);
    ASSERT_TRUE(reducer->Allreduce(mine, out.data()).ok());
    EXPECT_EQ(std::memcmp(out.data(), alone.values(0), count * sizeof(double)), 0) << ReductionPlanText(config);
  }
}

// Launched with a network tree (--network) whose leaves hold several of the
// job's hosts, the plan's switches reach every rank and the reduction climbs
// through them (the bits are checked above with the same configuration).
TEST(MpiRuntime, ThePlansSwitchesFormALevelOfTheReduction) {
  const std::vector<std::string>& switches = g_runtime->switches();
  if (switches.empty()) GTEST_SKIP() << "launched without a network tree";
  ASSERT_EQ(switches.size(), static_cast<size_t>(g_runtime->world().size()));
  auto reducer = DeterministicReducer::Create(
      g_runtime->world(), {64, ElementType::kFloat64, ReduceAlgorithm::kAuto, HostIndices(g_runtime->hosts()),
                           HostIndices(switches)});
  ASSERT_TRUE(reducer.ok()) << reducer.status().ToString();
  std::map<std::string, std::set<std::string>> hosts_under;
  for (size_t r = 0; r < switches.size(); ++r) hosts_under[switches[r]].insert(g_runtime->hosts()[r]);
  bool groups_hosts = false;
  for (const auto& [name, hosts] : hosts_under) groups_hosts |= hosts.size() > 1;
  EXPECT_EQ(reducer->hierarchy().has_switches(), groups_hosts && hosts_under.size() > 1);
  if (g_runtime->world().rank() == 0) std::printf("reduction plan: %s\n", ReductionPlanText(reducer->config()).c_str());
}

TEST(MpiRuntime, LayoutGroupsOverMpi) {
  Communicator& world = g_runtime->world();
  if (world.size() % 2) GTEST_SKIP() << "needs an even number of ranks";
  auto layout = ParseLayout("tp=2", world.size());
  ASSERT_TRUE(layout.ok());
  auto pg = CreateGroups(world, *layout, g_runtime->hosts());
  ASSERT_TRUE(pg.ok()) << pg.status().ToString();
  EXPECT_EQ(pg->group[kTp]->size(), 2);
  EXPECT_EQ(pg->group[kDp]->size(), world.size() / 2);
}

}  // namespace
}  // namespace gpulaunch::rt

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto rt = gpulaunch::rt::Init(&argc, &argv);
  if (!rt.ok()) {
    std::fprintf(stderr, "runtime_mpi_test: %s\n", rt.status().message().c_str());
    return 1;
  }
  gpulaunch::rt::g_runtime = std::move(rt).value();
  if (gpulaunch::rt::g_runtime->world().rank() != 0) {
    delete ::testing::UnitTest::GetInstance()->listeners().Release(
        ::testing::UnitTest::GetInstance()->listeners().default_result_printer());
  }
  const int local = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&local, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  gpulaunch::rt::g_runtime.reset();
  return worst;
}
