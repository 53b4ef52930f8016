// The hierarchical deterministic reduction (algo=hier-rs-ag): the same bits
// as the flat one (every node of the fixed tree is still left + right of the
// same operands, see tree_evaluation.h), but data crosses hosts only once it
// has been combined inside its host.
//
// Given every rank's host, the tree splits into its maximal host-pure nodes
// (HostPureNodes): nodes whose leaves all belong to ranks of one host. Then:
//   A. inside each host, a reduce-scatter: local rank j of p evaluates its
//      host's pure nodes over elements ElementRange(count, j, p), from the
//      host's ranks' LeafSum nodes (behind the LocalReducer seam,
//      local_reducer.h, where a GPU implementation belongs);
//   B. between hosts: rank t finishes elements ElementRange(count, t, n) (the
//      flat algorithm's ranges, so ReduceScatter's contract is unchanged);
//      every rank sends t its host's pure-node values over the part of t's
//      range it holds, and t evaluates the root from all hosts' pure nodes;
//   C. allgather: t sends its range to one rank of every other host (local
//      index t's local index mod that host's size), then each host's ranks
//      exchange what they hold.
// Bytes a host sends to other hosts, for payload P and h hosts each owning
// about P/h of the elements: k·P·(h-1)/h in B, where k is the number of its
// pure nodes, and P·(h-1)/h in C. When each host's leaves form one tree node
// (p ranks on each of h hosts, leaves and h powers of two, ranks in host
// order) that is 2·P·(h-1)/h, a ring allreduce's figure.
//
// Every rank must pass the same host map; DeterministicReducer makes sure of
// that through the reduction-plan fingerprint.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/communicator.h"
#include "runtime/leaf_sum.h"
#include "runtime/local_reducer.h"
#include "runtime/reduce_traffic.h"
#include "runtime/superaccumulator.h"

namespace gpulaunch::rt {

// Host indices by first appearance in rank order: {"b","a","b"} -> {0,1,0}.
std::vector<int> HostIndices(const std::vector<std::string>& host_names);

// The maximal tree nodes whose leaves all belong to ranks of one host, left
// to right, each with that host. host_of[r] is rank r's host; leaves are
// owned as LeafRange says. They partition the tree.
std::vector<std::pair<TreeNode, int>> HostPureNodes(int leaves, const std::vector<int>& host_of);

// Writes this rank's elements ElementRange(count, rank, size) of the root's
// value to `out`. Step A runs through `local_reducer`; `scratch` keeps the
// buffers for the next call.
template <typename T>
Status HierarchicalReduceScatter(Communicator& comm, const std::vector<int>& host_of, const LeafSum<T>& mine, T* out,
                                 LocalReducer& local_reducer, ReduceScratch& scratch, ReduceTraffic& traffic);

// Each rank holds its range ElementRange(count, rank, size) of `out`;
// afterwards every rank holds all of it.
template <typename T>
Status HierarchicalAllgatherRanges(Communicator& comm, const std::vector<int>& host_of, T* out, size_t count,
                                   ReduceTraffic& traffic);

// The exact (L3) elementwise allreduce with the same three steps: merge
// inside each host, each range's finisher merges every host's part and
// rounds once into T, then the hierarchical allgather. Any grouping of exact
// merges gives the same bits; the hierarchy saves bytes between hosts.
template <typename T>
Status HierarchicalExactAllreduce(Communicator& comm, const std::vector<int>& host_of,
                                  const std::vector<Superaccumulator>& mine, T* out, ReduceTraffic& traffic);

}  // namespace gpulaunch::rt
