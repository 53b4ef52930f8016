// The hierarchical deterministic reduction (algo=hier-rs-ag): the same bits
// as the flat one (every node of the fixed tree is still left + right of the
// same operands, see tree_evaluation.h), but data crosses a level of the
// network (host, leaf switch) only once it has been combined below it.
//
// The levels come from a RankHierarchy (rank_hierarchy.h): hosts, leaf
// switches when known, the whole job. At each level the tree splits into its
// maximal pure nodes (PureNodes): nodes whose leaves all belong to ranks of
// one group. A group's pure nodes are made of the pure nodes of the level
// below, so the reduction climbs:
//   A. inside each host, a reduce-scatter: local rank j of p evaluates its
//      host's pure nodes over elements ElementRange(count, j, p), from the
//      host's ranks' LeafSum nodes (behind the LocalReducer seam,
//      local_reducer.h, where a GPU implementation belongs);
//   B. one lift a level: inside each group of the next level, every final
//      range F(t) = ElementRange(count, t, n) (the flat algorithm's ranges,
//      so ReduceScatter's contract is unchanged) has one collector
//      (RankHierarchy::Collector); every rank sends each collector the
//      values of its group's pure nodes over the part of F(t) it holds, and
//      the collector evaluates its group's pure nodes over F(t). At the top
//      the collector of F(t) is t, and the group's one pure node the root;
//   C. the allgather climbs down: the holder of F(t) sends it to the
//      collector of F(t) in every other group of the level below, down to
//      hosts; then each host's ranks exchange what they hold.
// Bytes a host sends to other hosts, for payload P and h hosts each
// finishing about P/h of the elements, with hosts only: k·P·(h-1)/h in B,
// where k is the number of its pure nodes, and P·(h-1)/h in C. When each
// host's leaves form one tree node (p ranks on each of h hosts, leaves and h
// powers of two, ranks in host order) that is 2·P·(h-1)/h, a ring
// allreduce's figure. With s switches of equal size, what crosses between
// switches is 2·P·(s-1)/s a switch (each element once up, once down), not
// the hosts' 2·P·(h-1)/h.
//
// Every rank must pass the same hierarchy; DeterministicReducer makes sure of
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
#include "runtime/rank_hierarchy.h"
#include "runtime/reduce_traffic.h"
#include "runtime/superaccumulator.h"

namespace gpulaunch::rt {

// Host indices by first appearance in rank order: {"b","a","b"} -> {0,1,0}.
std::vector<int> HostIndices(const std::vector<std::string>& host_names);

// The maximal tree nodes whose leaves all belong to ranks of one group, left
// to right, each with that group. group_of[r] is rank r's group (host,
// switch); leaves are owned as LeafRange says. They partition the tree.
std::vector<std::pair<TreeNode, int>> PureNodes(int leaves, const std::vector<int>& group_of);

// Writes this rank's elements ElementRange(count, rank, size) of the root's
// value to `out`. Step A runs through `local_reducer`; `scratch` keeps the
// buffers for the next call.
template <typename T>
Status HierarchicalReduceScatter(Communicator& comm, const RankHierarchy& hierarchy, const LeafSum<T>& mine, T* out,
                                 LocalReducer& local_reducer, ReduceScratch& scratch, ReduceTraffic& traffic);

// Each rank holds its range ElementRange(count, rank, size) of `out`;
// afterwards every rank holds all of it.
template <typename T>
Status HierarchicalAllgatherRanges(Communicator& comm, const RankHierarchy& hierarchy, T* out, size_t count,
                                   ReduceTraffic& traffic);

// The exact (L3) elementwise allreduce with the same three steps: merge
// inside each host, each range's finisher merges every host's part and
// rounds once into T, then the hierarchical allgather (which uses switches
// too when the hierarchy has them). Any grouping of exact
// merges gives the same bits; the hierarchy saves bytes between hosts.
template <typename T>
Status HierarchicalExactAllreduce(Communicator& comm, const RankHierarchy& hierarchy,
                                  const std::vector<Superaccumulator>& mine, T* out, ReduceTraffic& traffic);

}  // namespace gpulaunch::rt
