// Which ranks share each level of the network, for the hierarchical
// reduction (hierarchical_reduce.h): hosts, then leaf switches when the plan
// knows them, then the whole job. Every level's groups are whole groups of
// the level below, so data combined inside a group never needs to go back.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace gpulaunch::rt {

// Dense labels by first appearance: {7, 3, 7} -> {0, 1, 0}.
std::vector<int> DenseLabels(const std::vector<int>& labels);

// One level: which group each rank belongs to.
struct RankGroups {
  std::vector<int> group_of;              // by rank, dense
  std::vector<std::vector<int>> members;  // by group, its ranks in rank order
  std::vector<int> index;                 // by rank, its place in members[group_of[rank]]

  explicit RankGroups(const std::vector<int>& dense_group_of);
  int groups() const { return static_cast<int>(members.size()); }
  const std::vector<int>& MembersOf(int rank) const { return members[static_cast<size_t>(group_of[static_cast<size_t>(rank)])]; }
};

class RankHierarchy {
 public:
  // host_of: every rank's host; switch_of: every rank's leaf switch, empty
  // when unknown (any labels: only who shares one matters). A switch level
  // is kept when `switch_level` allows it, it groups hosts and there are
  // several switches. Fails when a host's ranks name different switches or
  // the sizes differ.
  static StatusOr<RankHierarchy> Make(const std::vector<int>& host_of, const std::vector<int>& switch_of = {},
                                      bool switch_level = true);

  int size() const { return static_cast<int>(levels_.front().group_of.size()); }
  // Levels, finest first: [0] hosts, [1] switches when kept, and last the
  // whole job as one group.
  const std::vector<RankGroups>& levels() const { return levels_; }
  int top() const { return static_cast<int>(levels_.size()) - 1; }
  const std::vector<int>& host_of() const { return levels_.front().group_of; }
  // Whether switches form a level of the climb.
  bool has_switches() const { return levels_.size() > 2; }
  // Every rank's switch (dense) when given, a level or not (bytes are
  // counted by it either way), else empty.
  const std::vector<int>& switch_of() const { return switch_of_; }

  // Which rank of `group` at `level` collects rank t's final elements in the
  // reduce-scatter and holds them in the allgather: t itself at the top and
  // in t's own groups; in another group, the rank the level above chose when
  // it lies there, else one spread evenly over the group's members.
  int Collector(int level, int group, int t) const;
  // For each member of `group` at `level` (by index), the ranks t it
  // collects, ascending.
  std::vector<std::vector<int>> CollectedBy(int level, int group) const;

 private:
  RankHierarchy(std::vector<RankGroups> levels, std::vector<int> switch_of);
  std::vector<RankGroups> levels_;
  std::vector<int> switch_of_;
};

}  // namespace gpulaunch::rt
