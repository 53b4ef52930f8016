// The fixed reduction tree behind deterministic (L2) reductions.
//
// A reduction is defined over a fixed number L of logical leaves (e.g. the
// micro-batches of a data-parallel step), never over ranks. Leaves are
// combined by one balanced binary tree: a node over leaves [lo, hi) with more
// than one leaf is left + right, where left covers the first ceil(n/2)
// leaves. Rank r of N owns leaves [floor(rL/N), floor((r+1)L/N)) and
// contributes the maximal tree nodes inside its range; the nodes of all
// ranks partition the tree, so the root is evaluated the same way whatever N
// is and wherever ranks run. Elementwise, so buffer offsets, chunking and
// fusing tensors cannot change a bit either.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gpulaunch::rt {

struct TreeNode {
  int lo = 0;  // first leaf
  int hi = 0;  // one past the last leaf
  bool operator==(const TreeNode&) const = default;
  bool IsLeaf() const { return hi - lo == 1; }
  int Mid() const { return lo + (hi - lo + 1) / 2; }
  TreeNode Left() const { return {lo, Mid()}; }
  TreeNode Right() const { return {Mid(), hi}; }
};

// Leaves [first, end) owned by `rank` of `world` when there are `leaves`.
std::pair<int, int> LeafRange(int rank, int world, int leaves);

// The maximal nodes of the tree over [0, leaves) that lie inside [first, end),
// left to right. Empty when the range is empty.
std::vector<TreeNode> MaximalNodes(int leaves, int first, int end);

// Elements [first, end) of `count` that rank `rank` of `world` finishes in a
// reduce-scatter. Depends only on count and world.
std::pair<size_t, size_t> ElementRange(size_t count, int rank, int world);

}  // namespace gpulaunch::rt
