#include "tests/runtime/local_reducer_conformance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <mutex>

#include "runtime/hierarchical_reduce.h"
#include "runtime/thread_communicator.h"

namespace gpulaunch::rt::testing {
namespace {

std::vector<double> LeafValues(int l, size_t count) {
  std::vector<double> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = std::ldexp(1.0 + double((l * 37 + i * 11) % 89) / 89, int((l * 7 + i) % 90) - 45) * ((l + i) % 3 ? 1 : -1);
  return v;
}

// The node's value evaluated in one process from its leaves.
std::vector<double> Reference(const TreeNode& node, int leaves, size_t count) {
  LeafSum<double> sum(count, leaves, node.lo, node.hi);
  for (int l = node.lo; l < node.hi; ++l) EXPECT_TRUE(sum.AddLeaf(LeafValues(l, count).data()).ok());
  EXPECT_EQ(sum.nodes().size(), 1u);
  return std::vector<double>(sum.values(0), sum.values(0) + count);
}

void RunCase(const std::function<std::unique_ptr<LocalReducer>()>& make, const std::vector<int>& host_of, int leaves,
             size_t count) {
  const int world = static_cast<int>(host_of.size());
  const auto pure = PureNodes(leaves, host_of);
  std::mutex mu;
  RunOnThreads(world, [&](Communicator& c) {
    const int host = host_of[static_cast<size_t>(c.rank())];
    LocalStep step;
    step.comm = &c;
    step.host_of = host_of;
    step.leaves = leaves;
    for (int r = 0; r < world; ++r) {
      if (host_of[static_cast<size_t>(r)] == host) step.local.push_back(r);
    }
    for (const auto& [node, h] : pure) {
      if (h == host) step.host_nodes.push_back(node);
    }
    auto mine = LeafSum<double>::ForRank(count, leaves, c.rank(), world);
    for (int l = mine.first_leaf(); l < mine.end_leaf(); ++l) ASSERT_TRUE(mine.AddLeaf(LeafValues(l, count).data()).ok());
    int j = 0;
    while (step.local[static_cast<size_t>(j)] != c.rank()) ++j;
    const auto [lo, hi] = ElementRange(count, j, static_cast<int>(step.local.size()));
    std::vector<double> out(step.host_nodes.size() * (hi - lo), -7.0);
    ReduceTraffic traffic;
    auto reducer = make();
    const Status s = reducer->Reduce(step, mine, out.data(), traffic);
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_TRUE(s.ok()) << reducer->Name() << ": " << s.ToString();
    EXPECT_EQ(traffic.inter_host_bytes, 0u) << reducer->Name() << ": step A left the host";
    for (size_t q = 0; q < step.host_nodes.size(); ++q) {
      const auto want = Reference(step.host_nodes[q], leaves, count);
      EXPECT_TRUE(hi == lo || std::memcmp(out.data() + q * (hi - lo), want.data() + lo, (hi - lo) * sizeof(double)) == 0)
          << reducer->Name() << ": rank " << c.rank() << ", node [" << step.host_nodes[q].lo << ","
          << step.host_nodes[q].hi << ")";
    }
  });
}

}  // namespace

void RunLocalReducerConformance(const std::function<std::unique_ptr<LocalReducer>()>& make) {
  for (const auto& host_of : std::vector<std::vector<int>>{
           {0}, {0, 0, 0, 0}, {0, 0, 0, 1, 1, 2, 2, 3}, {0, 1, 0, 1, 0}, {1, 1, 0}, {0, 1, 2, 3}}) {
    for (int leaves : {64, 7, 2}) {
      for (size_t count : {0, 1, 5, 301}) RunCase(make, host_of, leaves, count);
    }
  }
}

}  // namespace gpulaunch::rt::testing
