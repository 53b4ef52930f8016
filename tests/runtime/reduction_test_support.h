// Helpers for the tests of the deterministic reductions across hosts and
// switches (hierarchical_reduce_test.cc, switch_reduce_test.cc): leaves whose
// sums change bits under any other order, the one-rank result, an allreduce
// on in-process ranks with a given host (and switch) map, and the bytes each
// group sent.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "runtime/deterministic_reducer.h"
#include "runtime/thread_communicator.h"

namespace gpulaunch::rt::reduction_test {

// Leaf l's vector: a wide exponent range and cancelling pairs, so that any
// other order of additions changes bits somewhere.
inline uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

template <typename T>
std::vector<T> Leaf(int l, size_t count) {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t bits = SplitMix(7919ULL * static_cast<uint64_t>(l) + i);
    const double mag = std::ldexp(0.5 + static_cast<double>(bits >> 11) * 0x1p-54, int(bits % 120) - 60);
    v[i] = static_cast<T>((i % 4 == 0 && l % 2) ? -mag * 3 : mag * (1 + l % 5));
  }
  return v;
}

template <typename T>
std::vector<T> OneRank(int leaves, size_t count) {
  LeafSum<T> all(count, leaves, 0, leaves);
  for (int l = 0; l < leaves; ++l) EXPECT_TRUE(all.AddLeaf(Leaf<T>(l, count).data()).ok());
  std::vector<T> out(count);
  const std::vector<TreeNode> nodes = all.nodes();
  EXPECT_EQ(nodes.size(), 1u);
  if (count > 0) std::memcpy(out.data(), all.values(0), count * sizeof(T));
  return out;
}

struct Outcome {
  std::vector<std::vector<float>> results;  // by rank
  std::vector<ReduceTraffic> traffic;       // by rank
  std::vector<std::string> plans;           // by rank
};

// An allreduce of float leaves on world = host_of.size() ranks, with
// switch_of (every rank's switch) when given.
inline Outcome AllreduceOn(const std::vector<int>& host_of, int leaves, size_t count, ReduceAlgorithm algorithm,
                    const std::vector<int>& switch_of = {}) {
  const int world = static_cast<int>(host_of.size());
  Outcome run{std::vector<std::vector<float>>(world, std::vector<float>(count)), std::vector<ReduceTraffic>(world),
          std::vector<std::string>(world)};
  RunOnThreads(world, [&](Communicator& c) {
    auto reducer = DeterministicReducer::Create(c, {leaves, ElementType::kFloat32, algorithm, host_of, switch_of});
    ASSERT_TRUE(reducer.ok()) << reducer.status().ToString();
    auto sum = LeafSum<float>::ForRank(count, leaves, c.rank(), c.size());
    for (int l = sum.first_leaf(); l < sum.end_leaf(); ++l) {
      ASSERT_TRUE(sum.AddLeaf(Leaf<float>(l, count).data()).ok());
    }
    ASSERT_TRUE(reducer->Allreduce(sum, run.results[c.rank()].data()).ok());
    run.traffic[c.rank()] = reducer->traffic();
    run.plans[c.rank()] = ReductionPlanText(reducer->config());
  });
  return run;
}

inline std::string Describe(const std::vector<int>& host_of) {
  std::string s = "hosts";
  for (int h : host_of) s += " " + std::to_string(h);
  return s;
}

inline void ExpectOneRankBits(const Outcome& run, const std::vector<float>& want, const std::string& what) {
  for (size_t r = 0; r < run.results.size(); ++r) {
    ASSERT_TRUE(want.empty() || std::memcmp(run.results[r].data(), want.data(), want.size() * sizeof(float)) == 0)
        << what << ": rank " << r << " differs from the one-rank result";
  }
}

// Every way to put 8 ranks on exactly k hosts (set partitions: the hosts'
// names do not matter, which ranks share one does).
inline void ForEveryMapping(int ranks, int hosts, const std::function<void(const std::vector<int>&)>& fn) {
  std::vector<int> host_of(static_cast<size_t>(ranks), 0);
  std::function<void(int, int)> next = [&](int r, int used) {
    if (r == ranks) {
      if (used == hosts) fn(host_of);
      return;
    }
    for (int h = 0; h <= used && h < hosts; ++h) {
      host_of[static_cast<size_t>(r)] = h;
      next(r + 1, std::max(used, h + 1));
    }
  };
  next(0, 0);
}

// Bytes each group (host, switch) sent out of it, in multiples of one rank's
// payload: `bytes` picks the counter (inter_host_bytes, inter_switch_bytes).
inline std::vector<double> PayloadsSentBy(const Outcome& run, const std::vector<int>& group_of, size_t payload_bytes,
                                          uint64_t ReduceTraffic::*bytes) {
  std::vector<double> per_group;
  for (size_t r = 0; r < group_of.size(); ++r) {
    if (static_cast<size_t>(group_of[r]) >= per_group.size()) per_group.resize(static_cast<size_t>(group_of[r]) + 1);
    per_group[static_cast<size_t>(group_of[r])] +=
        static_cast<double>(run.traffic[r].*bytes) / static_cast<double>(payload_bytes);
  }
  return per_group;
}

// Bytes a host sent to other hosts, in multiples of one rank's payload.
inline std::vector<double> InterHostPayloads(const Outcome& run, const std::vector<int>& host_of, size_t payload_bytes) {
  return PayloadsSentBy(run, host_of, payload_bytes, &ReduceTraffic::inter_host_bytes);
}

}  // namespace gpulaunch::rt::reduction_test
