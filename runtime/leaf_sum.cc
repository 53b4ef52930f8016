#include "runtime/leaf_sum.h"

#include <cstring>

#include "runtime/local_kernels.h"

namespace gpulaunch::rt {

bool IsTreeNode(const TreeNode& node, int leaves) {
  TreeNode cur{0, leaves};
  while (true) {
    if (cur == node) return true;
    if (cur.IsLeaf() || node.lo < cur.lo || node.hi > cur.hi) return false;
    const TreeNode left = cur.Left();
    if (node.hi <= left.hi) cur = left;
    else if (node.lo >= left.hi) cur = cur.Right();
    else return false;
  }
}

template <typename T>
LeafSum<T>::LeafSum(size_t count, int leaves, int first_leaf, int end_leaf)
    : count_(count), leaves_(leaves), first_(first_leaf), end_(end_leaf), next_leaf_(first_leaf) {}

template <typename T>
LeafSum<T> LeafSum<T>::ForRank(size_t count, int leaves, int rank, int world) {
  const auto [first, end] = LeafRange(rank, world, leaves);
  return LeafSum(count, leaves, first, end);
}

template <typename T>
Status LeafSum<T>::AddLeaf(const T* values) {
  if (next_leaf_ >= end_) {
    return FailedPrecondition("all " + std::to_string(end_ - first_) + " leaves of this rank were already added");
  }
  std::vector<T> buf;
  if (!spare_.empty()) {
    buf = std::move(spare_.back());
    spare_.pop_back();
  }
  buf.assign(values, values + count_);
  stack_.push_back({TreeNode{next_leaf_, next_leaf_ + 1}, std::move(buf)});
  ++next_leaf_;
  FoldSiblings();
  return Status::Ok();
}

template <typename T>
void LeafSum<T>::FoldSiblings() {
  // While the two newest entries are the left and right child of one tree
  // node, replace them by that node: left + right, the tree's only order.
  while (stack_.size() >= 2) {
    Entry& left = stack_[stack_.size() - 2];
    Entry& right = stack_.back();
    const TreeNode parent{left.node.lo, right.node.hi};
    if (!(parent.Left() == left.node && parent.Right() == right.node && IsTreeNode(parent, leaves_))) return;
    if (parent.lo < first_ || parent.hi > end_) return;
    AddInto(left.values.data(), right.values.data(), left.values.data(), count_);
    left.node = parent;
    spare_.push_back(std::move(right.values));
    stack_.pop_back();
  }
}

template <typename T>
Status LeafSum<T>::AddLeafBf16(const uint16_t* values) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  std::vector<T> wide(count_);
  for (size_t i = 0; i < count_; ++i) wide[i] = Bf16ToFloat(values[i]);
  return AddLeaf(wide.data());
}

template <typename T>
Status LeafSum<T>::AddLeafHalf(const uint16_t* values) {
  std::vector<T> wide(count_);
  for (size_t i = 0; i < count_; ++i) wide[i] = HalfToFloat(values[i]);
  return AddLeaf(wide.data());
}

template <typename T>
std::vector<TreeNode> LeafSum<T>::nodes() const {
  std::vector<TreeNode> out;
  for (const Entry& e : stack_) out.push_back(e.node);
  return out;
}

template class LeafSum<float>;
template class LeafSum<double>;

}  // namespace gpulaunch::rt
