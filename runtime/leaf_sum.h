// LeafSum: a rank's share of a deterministic reduction. Feed it the rank's
// leaves in order (e.g. one gradient per micro-batch); it folds them into the
// maximal tree nodes of the rank's leaf range exactly as the fixed tree says,
// keeping at most log2(leaves)+1 vectors. bf16/fp16 leaves are widened to
// float first (accumulation in float32).
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "runtime/reduction_tree.h"

namespace gpulaunch::rt {

template <typename T>
class LeafSum {
 public:
  // Leaves [first_leaf, end_leaf) of a tree over `leaves`, vectors of `count`.
  LeafSum(size_t count, int leaves, int first_leaf, int end_leaf);
  // The leaf range LeafRange(rank, world, leaves) assigns.
  static LeafSum ForRank(size_t count, int leaves, int rank, int world);

  // Adds the next leaf (in leaf order). Fails when all leaves are in.
  Status AddLeaf(const T* values);
  Status AddLeafBf16(const uint16_t* values);  // float only
  Status AddLeafHalf(const uint16_t* values);  // float only

  bool Complete() const { return next_leaf_ == end_; }
  size_t count() const { return count_; }
  int leaves() const { return leaves_; }
  int first_leaf() const { return first_; }
  int end_leaf() const { return end_; }
  // Complete() only: the maximal nodes (= MaximalNodes(...)) and their values.
  std::vector<TreeNode> nodes() const;
  const T* values(size_t node_index) const { return stack_[node_index].values.data(); }

 private:
  struct Entry {
    TreeNode node;
    std::vector<T> values;
  };
  void FoldSiblings();

  size_t count_;
  int leaves_, first_, end_, next_leaf_;
  std::vector<Entry> stack_;
  std::vector<std::vector<T>> spare_;  // buffers to reuse
};

// True when `node` is a node of the tree over [0, leaves).
bool IsTreeNode(const TreeNode& node, int leaves);

}  // namespace gpulaunch::rt
