// The climb of the hierarchical reduction (hierarchical_reduce.h, step B),
// internal to hierarchical_reduce.cc: what a rank holds after each level,
// who collects which final range (RankHierarchy::Collector), and one level's
// lift. Every rank walks the same arithmetic, so sender and receiver agree on
// each message's pieces without exchanging their layout.
#pragma once

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/communicator.h"
#include "runtime/hierarchical_reduce.h"
#include "runtime/rank_hierarchy.h"
#include "runtime/reduce_traffic.h"
#include "runtime/tree_evaluation.h"

namespace gpulaunch::rt::climb {

inline constexpr int kTagLift = 0x6730;  // + the level lifted to: pure nodes to a range's collector

// Elements [lo, hi).
struct Span {
  size_t lo = 0, hi = 0;
  size_t size() const { return hi > lo ? hi - lo : 0; }
};

inline Span Intersect(Span a, Span b) { return {std::max(a.lo, b.lo), std::min(a.hi, b.hi)}; }

inline Span Elements(size_t count, int index, int parts) {
  const auto [lo, hi] = ElementRange(count, index, parts);
  return {lo, hi};
}

// Whether `inner` lies inside `outer` in the tree.
inline bool Within(const TreeNode& inner, const TreeNode& outer) { return inner.lo >= outer.lo && inner.hi <= outer.hi; }

// The pure nodes of every level, and which belong to each group.
struct LevelNodes {
  std::vector<std::pair<TreeNode, int>> pure;     // PureNodes at this level
  std::vector<std::vector<size_t>> of_group;      // indices into `pure`, by group
  LevelNodes(int leaves, const RankGroups& groups) : pure(PureNodes(leaves, groups.group_of)) {
    of_group.resize(static_cast<size_t>(groups.groups()));
    for (size_t k = 0; k < pure.size(); ++k) of_group[static_cast<size_t>(pure[k].second)].push_back(k);
  }
};

// What one rank holds after a level of the climb: its group's pure nodes
// over some spans of elements, each span's values node after node.
struct Holding {
  std::vector<Span> spans;
  std::vector<size_t> offsets;  // where each span's values start in the level's buffer
  size_t nodes = 0;             // its group's pure nodes at that level
};

// RankHierarchy::CollectedBy, each (level, group) worked out once per call
// (it walks every rank).
class CollectedCache {
 public:
  explicit CollectedCache(const RankHierarchy& h) : h_(h) {}
  const std::vector<std::vector<int>>& Of(int level, int group) {
    auto [it, fresh] = cache_.try_emplace({level, group});
    if (fresh) it->second = h_.CollectedBy(level, group);
    return it->second;
  }

 private:
  const RankHierarchy& h_;
  std::map<std::pair<int, int>, std::vector<std::vector<int>>> cache_;
};

// Rank i's holding after `level` of the climb (without offsets): its host
// share at level 0, else the final ranges it collects.
inline Holding HoldingOf(const RankHierarchy& h, const std::vector<LevelNodes>& nodes, CollectedCache& collected,
                  size_t count, int level, int i) {
  const RankGroups& groups = h.levels()[static_cast<size_t>(level)];
  const int group = groups.group_of[static_cast<size_t>(i)];
  Holding out;
  out.nodes = nodes[static_cast<size_t>(level)].of_group[static_cast<size_t>(group)].size();
  if (level == 0) {
    out.spans.push_back(Elements(count, groups.index[static_cast<size_t>(i)], static_cast<int>(groups.MembersOf(i).size())));
    return out;
  }
  for (int t : collected.Of(level, group)[static_cast<size_t>(groups.index[static_cast<size_t>(i)])]) {
    out.spans.push_back(Elements(count, t, h.size()));
  }
  return out;
}

// Elements a sender's holding contributes to a collector's ranges, in the
// order both sides walk them: each collected range, each sender span.
template <typename F>
void ForEachPiece(const Holding& from, const std::vector<Span>& to, F&& f) {
  for (size_t c = 0; c < to.size(); ++c) {
    for (size_t s = 0; s < from.spans.size(); ++s) {
      const Span piece = Intersect(from.spans[s], to[c]);
      if (piece.size() > 0) f(s, c, piece);
    }
  }
}

inline size_t PieceElements(const Holding& from, const std::vector<Span>& to) {
  size_t total = 0;
  ForEachPiece(from, to, [&](size_t, size_t, Span piece) { total += piece.size(); });
  return total * from.nodes;
}

// What every level of the climb shares.
template <typename T>
struct ClimbContext {
  Communicator& comm;
  const RankHierarchy& hierarchy;
  const std::vector<LevelNodes>& nodes;
  CollectedCache& collected;
  ReduceScratch::Of<T>& scratch;
  CountingSender& sender;
  size_t count;
};

// One level of the climb (step B) on this rank, inside its group at
// `level`: send each collector of the group the pieces of its ranges held
// here, assemble the level below's pure nodes over the ranges this rank
// collects, and evaluate the group's pure nodes over them.
template <typename T>
class Lift {
 public:
  Lift(const ClimbContext<T>& c, int level)
      : c_(c),
        level_(level),
        groups_(c.hierarchy.levels()[static_cast<size_t>(level)]),
        below_groups_(c.hierarchy.levels()[static_cast<size_t>(level) - 1]),
        lower_(c.nodes[static_cast<size_t>(level) - 1]),
        upper_(c.nodes[static_cast<size_t>(level)]),
        group_(groups_.group_of[static_cast<size_t>(c.comm.rank())]),
        members_(groups_.members[static_cast<size_t>(group_)]),
        j_(groups_.index[static_cast<size_t>(c.comm.rank())]),
        my_upper_(upper_.of_group[static_cast<size_t>(group_)]),
        below_(c.scratch.levels[static_cast<size_t>(level) - 1]) {
    // The level below's pure nodes inside this group are the rows of each
    // collected range's assembly.
    row_of_.assign(lower_.pure.size(), -1);
    for (size_t k = 0; k < lower_.pure.size(); ++k) {
      for (size_t u : my_upper_) {
        if (Within(lower_.pure[k].first, upper_.pure[u].first)) row_of_[k] = rows_++;
      }
    }
    collecting_ = RangesOf(j_);
    size_t at = 0;
    for (const Span& range : collecting_) {
      assembly_at_.push_back(at);
      at += static_cast<size_t>(rows_) * range.size();
    }
    c_.scratch.assembled.resize(at);
  }

  // `held`: this rank's holding after the level below (values in
  // scratch.levels[level - 1]). Returns its holding after this level, whose
  // values are in scratch.levels[level], or in `out` at the top.
  StatusOr<Holding> Run(const Holding& held, T* out) {
    GL_RETURN_IF_ERROR(SendPieces(held));
    Place(c_.comm.rank(), held, nullptr);
    GL_RETURN_IF_ERROR(ReceivePieces());
    Holding next = Evaluate(out);
    GL_RETURN_IF_ERROR(c_.comm.FlushSends());
    return next;
  }

 private:
  // The final ranges member `index` of the group collects.
  std::vector<Span> RangesOf(int index) const {
    std::vector<Span> spans;
    for (int t : c_.collected.Of(level_, group_)[static_cast<size_t>(index)]) {
      spans.push_back(Elements(c_.count, t, c_.comm.size()));
    }
    return spans;
  }
  // Node q of holding h (of the level below) over `piece` of its span s.
  const T* Below(const Holding& h, size_t s, size_t q, Span piece) const {
    return below_.data() + h.offsets[s] + q * h.spans[s].size() + (piece.lo - h.spans[s].lo);
  }
  // Where the row of the level below's pure node k goes for `piece` of
  // collected range c.
  T* Row(size_t c, size_t k, Span piece) {
    const Span range = collecting_[c];
    return c_.scratch.assembled.data() + assembly_at_[c] + static_cast<size_t>(row_of_[k]) * range.size() +
           (piece.lo - range.lo);
  }
  // The pure nodes (at the level below) of rank `from`'s group, by its q.
  const std::vector<size_t>& NodesOf(int from) const {
    return lower_.of_group[static_cast<size_t>(below_groups_.group_of[static_cast<size_t>(from)])];
  }

  Status SendPieces(const Holding& held) {
    const int size = static_cast<int>(members_.size());
    size_t packed = 0;  // scratch.packs in use, alive until FlushSends
    for (int step = 1; step < size; ++step) {
      const int k = (j_ + step) % size;
      const std::vector<Span> to = RangesOf(k);
      const size_t elements = PieceElements(held, to);
      if (elements == 0) continue;
      const T* data = nullptr;
      int pieces = 0;
      ForEachPiece(held, to, [&](size_t s, size_t, Span piece) {
        if (pieces++ == 0) data = Below(held, s, 0, piece);
      });
      if (pieces > 1 || held.nodes > 1) {  // one piece of one node is contiguous already: no copy
        T* at = c_.scratch.Pack(packed++, elements);
        data = at;
        ForEachPiece(held, to, [&](size_t s, size_t, Span piece) {
          for (size_t q = 0; q < held.nodes; ++q, at += piece.size()) {
            std::memcpy(at, Below(held, s, q, piece), piece.size() * sizeof(T));
          }
        });
      }
      GL_RETURN_IF_ERROR(
          c_.sender.Post(members_[static_cast<size_t>(k)], kTagLift + level_, data, elements * sizeof(T)));
    }
    return Status::Ok();
  }

  // Copies rank `from`'s pieces into their rows: from its own values below
  // when `data` is null (this rank's), else from a received message laid out
  // as SendPieces packs it.
  void Place(int from, const Holding& h, const T* data) {
    const std::vector<size_t>& from_nodes = NodesOf(from);
    ForEachPiece(h, collecting_, [&](size_t s, size_t c, Span piece) {
      for (size_t q = 0; q < h.nodes; ++q) {
        const T* src = data ? data : Below(h, s, q, piece);
        if (data) data += piece.size();
        std::memcpy(Row(c, from_nodes[q], piece), src, piece.size() * sizeof(T));
      }
    });
  }

  Status ReceivePieces() {
    const int size = static_cast<int>(members_.size());
    if (c_.scratch.received.empty()) c_.scratch.received.resize(1);
    for (int step = 1; step < size; ++step) {
      const int i = members_[static_cast<size_t>((j_ - step + size) % size)];
      const Holding theirs = HoldingOf(c_.hierarchy, c_.nodes, c_.collected, c_.count, level_ - 1, i);
      const size_t elements = PieceElements(theirs, collecting_);
      if (elements == 0) continue;
      T* direct = nullptr;  // one piece of one node goes straight into its row
      int pieces = 0;
      ForEachPiece(theirs, collecting_, [&](size_t, size_t c, Span piece) {
        if (pieces++ == 0 && theirs.nodes == 1) direct = Row(c, NodesOf(i)[0], piece);
      });
      if (pieces == 1 && direct) {
        GL_RETURN_IF_ERROR(c_.comm.Recv(i, kTagLift + level_, direct, elements * sizeof(T)));
        continue;
      }
      std::vector<T>& incoming = c_.scratch.received[0];
      incoming.resize(elements);
      GL_RETURN_IF_ERROR(c_.comm.Recv(i, kTagLift + level_, incoming.data(), elements * sizeof(T)));
      Place(i, theirs, incoming.data());
    }
    return Status::Ok();
  }

  // This group's pure nodes over each collected range, from the rows.
  Holding Evaluate(T* out) {
    Holding next;
    next.nodes = my_upper_.size();
    next.spans = collecting_;
    size_t size = 0;
    for (const Span& span : collecting_) {
      next.offsets.push_back(size);
      size += next.nodes * span.size();
    }
    const bool top = level_ == c_.hierarchy.top();
    std::vector<T>& values = c_.scratch.levels[static_cast<size_t>(level_)];
    if (!top) values.resize(size);
    for (size_t c = 0; c < collecting_.size(); ++c) {
      const size_t len = collecting_[c].size();
      if (len == 0) continue;
      std::vector<NodeValues<T>> parts;
      for (size_t k = 0; k < lower_.pure.size(); ++k) {
        if (row_of_[k] >= 0) parts.push_back({lower_.pure[k].first, Row(c, k, collecting_[c])});
      }
      for (size_t q = 0; q < my_upper_.size(); ++q) {
        EvaluateTree(upper_.pure[my_upper_[q]].first, parts, len, top ? out : values.data() + next.offsets[c] + q * len);
      }
    }
    return next;
  }

  const ClimbContext<T>& c_;
  const int level_;
  const RankGroups& groups_;
  const RankGroups& below_groups_;
  const LevelNodes& lower_;
  const LevelNodes& upper_;
  const int group_;
  const std::vector<int>& members_;
  const int j_;
  const std::vector<size_t>& my_upper_;
  const std::vector<T>& below_;
  std::vector<int> row_of_;       // by pure node of the level below: its row, -1 outside this group
  int rows_ = 0;
  std::vector<Span> collecting_;  // the final ranges this rank collects at this level
  std::vector<size_t> assembly_at_;
};

}  // namespace gpulaunch::rt::climb
