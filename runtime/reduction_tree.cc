#include "runtime/reduction_tree.h"

namespace gpulaunch::rt {
namespace {

void Collect(const TreeNode& node, int first, int end, std::vector<TreeNode>& out) {
  if (node.hi <= first || node.lo >= end) return;
  if (first <= node.lo && node.hi <= end) {
    out.push_back(node);
    return;
  }
  Collect(node.Left(), first, end, out);
  Collect(node.Right(), first, end, out);
}

}  // namespace

std::pair<int, int> LeafRange(int rank, int world, int leaves) {
  const auto at = [&](int r) { return static_cast<int>(static_cast<int64_t>(r) * leaves / world); };
  return {at(rank), at(rank + 1)};
}

std::vector<TreeNode> MaximalNodes(int leaves, int first, int end) {
  std::vector<TreeNode> out;
  if (first < end) Collect(TreeNode{0, leaves}, first, end, out);
  return out;
}

std::pair<size_t, size_t> ElementRange(size_t count, int rank, int world) {
  const auto at = [&](int r) { return static_cast<size_t>(static_cast<unsigned __int128>(count) * r / world); };
  return {at(rank), at(rank + 1)};
}

}  // namespace gpulaunch::rt
