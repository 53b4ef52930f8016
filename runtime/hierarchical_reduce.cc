#include "runtime/hierarchical_reduce.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "runtime/reduction_climb.h"
#include "runtime/tree_evaluation.h"

namespace gpulaunch::rt {
namespace {

using namespace climb;  // NOLINT: the climb is this file's, split out only for size

// 0x6711: step A, inside a host (cpu_local_reducer.cc)
// 0x6730 + level: step B (climb::kTagLift)
constexpr int kTagSpread = 0x6740;  // C: + the level; a finished range to its collector in another group
constexpr int kTagShare = 0x6714;   // C: inside a host, the ranges each rank holds

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
  const int me = comm.rank();
  const std::vector<RankGroups>& levels = hierarchy.levels();
  std::vector<LevelNodes> nodes;
  for (const RankGroups& groups : levels) nodes.emplace_back(mine.leaves(), groups);
  CountingSender sender(comm, hierarchy.host_of(), traffic, &hierarchy.switch_of());
  CollectedCache collected(hierarchy);
  ReduceScratch::Of<T>& scratch = scratch_of.For<T>();
  if (scratch.levels.size() < levels.size()) scratch.levels.resize(levels.size());

  // A: this host's pure nodes over this rank's share of its host's elements.
  Holding held = HoldingOf(hierarchy, nodes, collected, mine.count(), 0, me);
  held.offsets = {0};
  LocalStep step;
  step.comm = &comm;
  step.host_of = hierarchy.host_of();
  step.local = levels[0].MembersOf(me);
  step.leaves = mine.leaves();
  const int host = levels[0].group_of[static_cast<size_t>(me)];
  for (size_t k : nodes[0].of_group[static_cast<size_t>(host)]) step.host_nodes.push_back(nodes[0].pure[k].first);
  scratch.levels[0].resize(held.nodes * held.spans[0].size());
  GL_RETURN_IF_ERROR(local_reducer.Reduce(step, mine, scratch.levels[0].data(), traffic));

  // B: a level at a time; at the top the one pure node is the root.
  const ClimbContext<T> context{comm, hierarchy, nodes, collected, scratch, sender, mine.count()};
  for (int level = 1; level <= hierarchy.top(); ++level) {
    Lift<T> lift(context, level);
    GL_ASSIGN_OR_RETURN(held, lift.Run(held, out));
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
