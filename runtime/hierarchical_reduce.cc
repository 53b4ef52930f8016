#include "runtime/hierarchical_reduce.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "runtime/tree_evaluation.h"

namespace gpulaunch::rt {
namespace {

// 0x6711: step A, inside a host (cpu_local_reducer.cc)
constexpr int kTagLift = 0x6730;    // B: + the level lifted to; pure nodes to a range's collector
constexpr int kTagSpread = 0x6740;  // C: + the level; a finished range to its collector in another group
constexpr int kTagShare = 0x6714;   // C: inside a host, the ranges each rank holds

struct Span {
  size_t lo = 0, hi = 0;
  size_t size() const { return hi > lo ? hi - lo : 0; }
};

Span Intersect(Span a, Span b) { return {std::max(a.lo, b.lo), std::min(a.hi, b.hi)}; }

Span Elements(size_t count, int index, int parts) {
  const auto [lo, hi] = ElementRange(count, index, parts);
  return {lo, hi};
}

void CollectPure(const TreeNode& node, const std::vector<int>& leaf_group, std::vector<std::pair<TreeNode, int>>& out) {
  const int group = leaf_group[static_cast<size_t>(node.lo)];
  bool pure = true;
  for (int l = node.lo + 1; l < node.hi && pure; ++l) pure = leaf_group[static_cast<size_t>(l)] == group;
  if (pure) {
    out.push_back({node, group});
    return;
  }
  CollectPure(node.Left(), leaf_group, out);
  CollectPure(node.Right(), leaf_group, out);
}

// Whether `inner` lies inside `outer` in the tree.
bool Within(const TreeNode& inner, const TreeNode& outer) { return inner.lo >= outer.lo && inner.hi <= outer.hi; }

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
Holding HoldingOf(const RankHierarchy& h, const std::vector<LevelNodes>& nodes, CollectedCache& collected,
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

size_t PieceElements(const Holding& from, const std::vector<Span>& to) {
  size_t total = 0;
  ForEachPiece(from, to, [&](size_t, size_t, Span piece) { total += piece.size(); });
  return total * from.nodes;
}

}  // namespace

std::vector<int> HostIndices(const std::vector<std::string>& host_names) {
  std::map<std::string, int> index;
  std::vector<int> out;
  out.reserve(host_names.size());
  for (const std::string& h : host_names) out.push_back(index.emplace(h, static_cast<int>(index.size())).first->second);
  return out;
}

std::vector<std::pair<TreeNode, int>> PureNodes(int leaves, const std::vector<int>& group_of) {
  const int world = static_cast<int>(group_of.size());
  std::vector<int> leaf_group(static_cast<size_t>(leaves));
  for (int r = 0; r < world; ++r) {
    const auto [first, end] = LeafRange(r, world, leaves);
    for (int l = first; l < end; ++l) leaf_group[static_cast<size_t>(l)] = group_of[static_cast<size_t>(r)];
  }
  std::vector<std::pair<TreeNode, int>> out;
  CollectPure(TreeNode{0, leaves}, leaf_group, out);
  return out;
}

template <typename T>
Status HierarchicalReduceScatter(Communicator& comm, const RankHierarchy& hierarchy, const LeafSum<T>& mine, T* out,
                                 LocalReducer& local_reducer, ReduceScratch& scratch_of, ReduceTraffic& traffic) {
  ReduceScratch::Of<T>& scratch = scratch_of.For<T>();
  const int n = comm.size(), me = comm.rank();
  const size_t count = mine.count();
  const int leaves = mine.leaves();
  const std::vector<RankGroups>& levels = hierarchy.levels();
  std::vector<LevelNodes> nodes;
  for (const RankGroups& groups : levels) nodes.emplace_back(leaves, groups);
  CountingSender sender(comm, hierarchy.host_of(), traffic, &hierarchy.switch_of());
  if (scratch.levels.size() < levels.size()) scratch.levels.resize(levels.size());

  // A: this host's pure nodes over this rank's share of its host's elements.
  CollectedCache collected_at(hierarchy);
  Holding held = HoldingOf(hierarchy, nodes, collected_at, count, 0, me);
  held.offsets = {0};
  {
    LocalStep step;
    step.comm = &comm;
    step.host_of = hierarchy.host_of();
    step.local = levels[0].MembersOf(me);
    step.leaves = leaves;
    const int host = levels[0].group_of[static_cast<size_t>(me)];
    for (size_t k : nodes[0].of_group[static_cast<size_t>(host)]) step.host_nodes.push_back(nodes[0].pure[k].first);
    scratch.levels[0].resize(held.nodes * held.spans[0].size());
    GL_RETURN_IF_ERROR(local_reducer.Reduce(step, mine, scratch.levels[0].data(), traffic));
  }

  // B: lift a level at a time; at the top the one pure node is the root.
  for (int level = 1; level < static_cast<int>(levels.size()); ++level) {
    const RankGroups& groups = levels[static_cast<size_t>(level)];
    const int group = groups.group_of[static_cast<size_t>(me)];
    const std::vector<int>& members = groups.members[static_cast<size_t>(group)];
    const int size = static_cast<int>(members.size()), j = groups.index[static_cast<size_t>(me)];
    const std::vector<std::vector<int>>& collected = collected_at.Of(level, group);
    auto ranges_of = [&](int member) {
      std::vector<Span> spans;
      for (int t : collected[static_cast<size_t>(member)]) spans.push_back(Elements(count, t, n));
      return spans;
    };
    const std::vector<T>& below = scratch.levels[static_cast<size_t>(level) - 1];
    auto values_of = [&](const Holding& h, size_t s, size_t q, Span piece) {
      return below.data() + h.offsets[s] + q * h.spans[s].size() + (piece.lo - h.spans[s].lo);
    };

    // Send each collector of this group the pieces of its ranges held here.
    size_t packed = 0;
    for (int step = 1; step < size; ++step) {
      const int k = (j + step) % size;
      const std::vector<Span> to = ranges_of(k);
      const size_t elements = PieceElements(held, to);
      if (elements == 0) continue;
      const T* data = nullptr;
      int pieces = 0;
      ForEachPiece(held, to, [&](size_t s, size_t, Span piece) {
        if (pieces++ == 0) data = values_of(held, s, 0, piece);
      });
      if (pieces > 1 || held.nodes > 1) {  // one piece of one node is contiguous already: no copy
        T* at = scratch.Pack(packed++, elements);
        data = at;
        ForEachPiece(held, to, [&](size_t s, size_t, Span piece) {
          for (size_t q = 0; q < held.nodes; ++q, at += piece.size()) {
            std::memcpy(at, values_of(held, s, q, piece), piece.size() * sizeof(T));
          }
        });
      }
      GL_RETURN_IF_ERROR(sender.Post(members[static_cast<size_t>(k)], kTagLift + level, data, elements * sizeof(T)));
    }

    // The pure nodes of the level below inside this group, as rows of each
    // collected range's assembly.
    const LevelNodes& lower = nodes[static_cast<size_t>(level) - 1];
    const LevelNodes& upper = nodes[static_cast<size_t>(level)];
    const std::vector<size_t>& my_upper = upper.of_group[static_cast<size_t>(group)];
    std::vector<int> row_of(lower.pure.size(), -1);
    int rows = 0;
    for (size_t k = 0; k < lower.pure.size(); ++k) {
      for (size_t u : my_upper) {
        if (Within(lower.pure[k].first, upper.pure[u].first)) row_of[k] = rows++;
      }
    }
    const std::vector<Span> mine_to = ranges_of(j);
    std::vector<size_t> assembly_at(mine_to.size());  // each collected range's rows
    size_t assembly_size = 0;
    for (size_t c = 0; c < mine_to.size(); ++c) {
      assembly_at[c] = assembly_size;
      assembly_size += static_cast<size_t>(rows) * mine_to[c].size();
    }
    std::vector<T>& assembled = scratch.assembled;
    assembled.resize(assembly_size);
    // Rows of the sender's group's pure nodes at the level below.
    auto place = [&](int from, const Holding& h, const T* data, bool in_place_values) {
      const int from_group = levels[static_cast<size_t>(level) - 1].group_of[static_cast<size_t>(from)];
      const std::vector<size_t>& from_nodes = lower.of_group[static_cast<size_t>(from_group)];
      ForEachPiece(h, mine_to, [&](size_t s, size_t c, Span piece) {
        for (size_t q = 0; q < h.nodes; ++q) {
          const T* src = in_place_values ? values_of(h, s, q, piece) : data;
          if (!in_place_values) data += piece.size();
          std::memcpy(assembled.data() + assembly_at[c] +
                          static_cast<size_t>(row_of[from_nodes[q]]) * mine_to[c].size() + (piece.lo - mine_to[c].lo),
                      src, piece.size() * sizeof(T));
        }
      });
    };
    place(me, held, nullptr, true);
    if (scratch.received.empty()) scratch.received.resize(1);
    for (int step = 1; step < size; ++step) {
      const int i = members[static_cast<size_t>((j - step + size) % size)];
      const Holding theirs = HoldingOf(hierarchy, nodes, collected_at, count, level - 1, i);
      const size_t elements = PieceElements(theirs, mine_to);
      if (elements == 0) continue;
      T* direct = nullptr;  // one piece of one node goes straight into its row
      int pieces = 0;
      ForEachPiece(theirs, mine_to, [&](size_t, size_t c, Span piece) {
        if (pieces++ > 0 || theirs.nodes != 1) return;
        const int from_group = levels[static_cast<size_t>(level) - 1].group_of[static_cast<size_t>(i)];
        const size_t row = static_cast<size_t>(row_of[lower.of_group[static_cast<size_t>(from_group)][0]]);
        direct = assembled.data() + assembly_at[c] + row * mine_to[c].size() + (piece.lo - mine_to[c].lo);
      });
      if (pieces == 1 && direct) {
        GL_RETURN_IF_ERROR(comm.Recv(i, kTagLift + level, direct, elements * sizeof(T)));
        continue;
      }
      std::vector<T>& incoming = scratch.received[0];
      incoming.resize(elements);
      GL_RETURN_IF_ERROR(comm.Recv(i, kTagLift + level, incoming.data(), elements * sizeof(T)));
      place(i, theirs, incoming.data(), false);
    }

    // Evaluate this group's pure nodes over each collected range.
    Holding next;
    next.nodes = my_upper.size();
    next.spans = mine_to;
    size_t next_size = 0;
    for (const Span& span : mine_to) {
      next.offsets.push_back(next_size);
      next_size += next.nodes * span.size();
    }
    const bool top = level == hierarchy.top();
    std::vector<T>& values = scratch.levels[static_cast<size_t>(level)];
    if (!top) values.resize(next_size);
    for (size_t c = 0; c < mine_to.size(); ++c) {
      const size_t len = mine_to[c].size();
      if (len == 0) continue;
      std::vector<NodeValues<T>> parts;
      for (size_t k = 0; k < lower.pure.size(); ++k) {
        if (row_of[k] >= 0) parts.push_back({lower.pure[k].first, assembled.data() + assembly_at[c] + static_cast<size_t>(row_of[k]) * len});
      }
      for (size_t q = 0; q < my_upper.size(); ++q) {
        T* dest = top ? out : values.data() + next.offsets[c] + q * len;
        EvaluateTree(upper.pure[my_upper[q]].first, parts, len, dest);
      }
    }
    GL_RETURN_IF_ERROR(comm.FlushSends());
    held = std::move(next);
  }
  return Status::Ok();
}

template <typename T>
Status HierarchicalAllgatherRanges(Communicator& comm, const RankHierarchy& hierarchy, T* out, size_t count,
                                   ReduceTraffic& traffic) {
  const int n = comm.size(), me = comm.rank();
  const std::vector<RankGroups>& levels = hierarchy.levels();
  CountingSender sender(comm, hierarchy.host_of(), traffic, &hierarchy.switch_of());
  auto range = [&](int t) { return Elements(count, t, n); };

  // Down a level at a time: the holder of each range sends it to the range's
  // collector in every other group below its own.
  std::vector<int> held{me};
  for (int level = hierarchy.top() - 1; level >= 0; --level) {
    const RankGroups& above = levels[static_cast<size_t>(level) + 1];
    const RankGroups& here = levels[static_cast<size_t>(level)];
    const int my_group = here.group_of[static_cast<size_t>(me)];
    // The groups of this level inside my group of the level above.
    std::vector<int> siblings;
    for (int r : above.MembersOf(me)) {
      const int g = here.group_of[static_cast<size_t>(r)];
      if (g != my_group && std::find(siblings.begin(), siblings.end(), g) == siblings.end()) siblings.push_back(g);
    }
    for (int t : held) {
      for (int g : siblings) {
        GL_RETURN_IF_ERROR(sender.Post(hierarchy.Collector(level, g, t), kTagSpread + level, out + range(t).lo,
                                       range(t).size() * sizeof(T)));
      }
    }
    // Received: each range this rank collects that another group held.
    std::vector<int> now = hierarchy.CollectedBy(level, my_group)[static_cast<size_t>(here.index[static_cast<size_t>(me)])];
    const int up_group = above.group_of[static_cast<size_t>(me)];
    for (int t : now) {
      const int holder = hierarchy.Collector(level + 1, up_group, t);
      if (here.group_of[static_cast<size_t>(holder)] == my_group || range(t).size() == 0) continue;
      GL_RETURN_IF_ERROR(comm.Recv(holder, kTagSpread + level, out + range(t).lo, range(t).size() * sizeof(T)));
    }
    GL_RETURN_IF_ERROR(comm.FlushSends());
    held = std::move(now);
  }

  // Inside the host, everyone's holdings to everyone.
  const RankGroups& hosts = levels[0];
  const int host = hosts.group_of[static_cast<size_t>(me)];
  const std::vector<int>& local = hosts.members[static_cast<size_t>(host)];
  const int p = static_cast<int>(local.size()), j = hosts.index[static_cast<size_t>(me)];
  const std::vector<std::vector<int>> holdings = hierarchy.CollectedBy(0, host);
  for (int step = 1; step < p; ++step) {
    const int dst = local[static_cast<size_t>((j + step) % p)];
    for (int t : holdings[static_cast<size_t>(j)]) {
      GL_RETURN_IF_ERROR(sender.Post(dst, kTagShare, out + range(t).lo, range(t).size() * sizeof(T)));
    }
  }
  for (int step = 1; step < p; ++step) {
    const int i = (j - step + p) % p;
    for (int t : holdings[static_cast<size_t>(i)]) {
      if (range(t).size() == 0) continue;
      GL_RETURN_IF_ERROR(comm.Recv(local[static_cast<size_t>(i)], kTagShare, out + range(t).lo,
                                   range(t).size() * sizeof(T)));
    }
  }
  return comm.FlushSends();
}

template Status HierarchicalReduceScatter(Communicator&, const RankHierarchy&, const LeafSum<float>&, float*,
                                          LocalReducer&, ReduceScratch&, ReduceTraffic&);
template Status HierarchicalReduceScatter(Communicator&, const RankHierarchy&, const LeafSum<double>&, double*,
                                          LocalReducer&, ReduceScratch&, ReduceTraffic&);
template Status HierarchicalAllgatherRanges(Communicator&, const RankHierarchy&, float*, size_t, ReduceTraffic&);
template Status HierarchicalAllgatherRanges(Communicator&, const RankHierarchy&, double*, size_t, ReduceTraffic&);

}  // namespace gpulaunch::rt
