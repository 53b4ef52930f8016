// Step A of the hierarchical reduction (hierarchical_reduce.h) behind a seam:
// the ranks of one host combine their LeafSum nodes into the host's pure
// tree nodes, each rank ending with them over its share of the elements.
// This is the step that stays inside a machine, so it is where a GPU
// implementation belongs: over device buffers, through CUDA IPC or NCCL on
// NVLink. The CPU implementation (MakeCpuLocalReducer) exchanges host
// memory through the Communicator (shared memory inside a host under Open
// MPI). tests/runtime/local_reducer_conformance.h holds the contract's test,
// run against every implementation.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/communicator.h"
#include "runtime/leaf_sum.h"
#include "runtime/reduce_traffic.h"

namespace gpulaunch::rt {

// One host's part of a reduction, the same on each of its ranks.
struct LocalStep {
  Communicator* comm = nullptr;      // all ranks of the reduction; rank r owns LeafRange(r, size, leaves)
  std::vector<int> host_of;          // every rank's host (dense), for counting bytes
  std::vector<int> local;            // the ranks of this host, in rank order (this rank among them)
  int leaves = 0;
  std::vector<TreeNode> host_nodes;  // this host's pure nodes (PureNodes over hosts), left to right
};

// One instance serves one rank's reductions, one at a time (it may keep
// buffers between calls).
class LocalReducer {
 public:
  virtual ~LocalReducer() = default;
  // Short description for messages, e.g. "cpu-pairwise".
  virtual std::string Name() const = 0;

  // Collective over the ranks of step.local. Writes the host's pure nodes
  // over this rank's share ElementRange(count, j, p) of the elements (j: its
  // index in step.local, p: step.local.size()) to `out`, node after node
  // (host_nodes.size() x share elements). Each node's value must be the fixed
  // tree's, left + right of the same operands (tree_evaluation.h): that is
  // what keeps the bits of the whole reduction.
  virtual Status Reduce(const LocalStep& step, const LeafSum<float>& mine, float* out, ReduceTraffic& traffic) = 0;
  virtual Status Reduce(const LocalStep& step, const LeafSum<double>& mine, double* out, ReduceTraffic& traffic) = 0;
};

// Pairwise exchanges of the ranks' nodes over the Communicator; each rank
// evaluates the host's nodes over its share.
std::unique_ptr<LocalReducer> MakeCpuLocalReducer();

}  // namespace gpulaunch::rt
