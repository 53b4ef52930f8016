// Evaluating the fixed reduction tree (reduction_tree.h) over a range of
// elements from parts that partition a subtree. Both reduction algorithms
// (flat and hierarchical) evaluate through this one function, so a node's
// value is always left + right of the same operands, whichever rank computes
// it and whatever parts it starts from: that is what keeps their bits equal.
#pragma once

#include <cstring>
#include <vector>

#include "runtime/local_kernels.h"
#include "runtime/reduction_tree.h"

namespace gpulaunch::rt {

template <typename T>
struct NodeValues {
  TreeNode node;
  const T* values;  // `len` elements of the node's value
};

namespace tree_evaluation_detail {

// The node's value: a part's own buffer when it is a part (no copy), else
// left + right written to `dest`, or to a buffer kept in `temps` when dest is
// null.
template <typename T>
const T* Evaluate(const TreeNode& node, const std::vector<NodeValues<T>>& parts, size_t len, T* dest,
                  std::vector<std::vector<T>>& temps) {
  for (const NodeValues<T>& p : parts) {
    if (!(p.node == node)) continue;
    if (!dest) return p.values;
    std::memcpy(dest, p.values, len * sizeof(T));
    return dest;
  }
  const T* left = Evaluate(node.Left(), parts, len, static_cast<T*>(nullptr), temps);
  const T* right = Evaluate(node.Right(), parts, len, static_cast<T*>(nullptr), temps);
  if (!dest) {
    temps.emplace_back(len);
    dest = temps.back().data();
  }
  AddInto(left, right, dest, len);
  return dest;
}

}  // namespace tree_evaluation_detail

// Writes the value of `node` over `len` elements to `dest`. Contract: the
// parts' nodes partition `node`'s subtree (every leaf under `node` lies in
// exactly one part), each part holding the same `len` elements.
template <typename T>
void EvaluateTree(const TreeNode& node, const std::vector<NodeValues<T>>& parts, size_t len, T* dest) {
  std::vector<std::vector<T>> temps;
  tree_evaluation_detail::Evaluate(node, parts, len, dest, temps);
}

}  // namespace gpulaunch::rt
