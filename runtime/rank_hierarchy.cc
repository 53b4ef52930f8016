#include "runtime/rank_hierarchy.h"

#include <map>

namespace gpulaunch::rt {

std::vector<int> DenseLabels(const std::vector<int>& labels) {
  std::map<int, int> index;
  std::vector<int> out;
  out.reserve(labels.size());
  for (int label : labels) out.push_back(index.emplace(label, static_cast<int>(index.size())).first->second);
  return out;
}

RankGroups::RankGroups(const std::vector<int>& dense_group_of) : group_of(dense_group_of), index(dense_group_of.size()) {
  for (size_t r = 0; r < group_of.size(); ++r) {
    const auto g = static_cast<size_t>(group_of[r]);
    if (g >= members.size()) members.resize(g + 1);
    index[r] = static_cast<int>(members[g].size());
    members[g].push_back(static_cast<int>(r));
  }
}

RankHierarchy::RankHierarchy(std::vector<RankGroups> levels, std::vector<int> switch_of)
    : levels_(std::move(levels)), switch_of_(std::move(switch_of)) {}

StatusOr<RankHierarchy> RankHierarchy::Make(const std::vector<int>& host_of, const std::vector<int>& switch_of,
                                            bool switch_level) {
  if (host_of.empty()) return InvalidArgument("a rank hierarchy needs at least one rank");
  if (!switch_of.empty() && switch_of.size() != host_of.size()) {
    return InvalidArgument("the switch map names " + std::to_string(switch_of.size()) + " ranks, the host map " +
                           std::to_string(host_of.size()) + "; give one switch per rank, in rank order");
  }
  std::vector<RankGroups> levels{RankGroups(DenseLabels(host_of))};
  std::vector<int> dense;
  if (!switch_of.empty()) {
    dense = DenseLabels(switch_of);
    const RankGroups& hosts = levels[0];
    bool groups_hosts = false;  // some switch holds two hosts
    std::vector<int> switch_of_host(static_cast<size_t>(hosts.groups()), -1);
    for (size_t r = 0; r < dense.size(); ++r) {
      int& known = switch_of_host[static_cast<size_t>(hosts.group_of[r])];
      if (known >= 0 && known != dense[r]) {
        return InvalidArgument("ranks " + std::to_string(hosts.MembersOf(static_cast<int>(r)).front()) + " and " +
                               std::to_string(r) + " share a host but name different switches");
      }
      known = dense[r];
    }
    std::vector<int> hosts_under(static_cast<size_t>(hosts.groups()), 0);
    for (int s : switch_of_host) groups_hosts |= ++hosts_under[static_cast<size_t>(s)] > 1;
    const int switches = RankGroups(dense).groups();
    if (switch_level && groups_hosts && switches > 1) levels.emplace_back(dense);
  }
  levels.emplace_back(std::vector<int>(host_of.size(), 0));
  return RankHierarchy(std::move(levels), std::move(dense));
}

int RankHierarchy::Collector(int level, int group, int t) const {
  if (level == top()) return t;
  const RankGroups& here = levels_[static_cast<size_t>(level)];
  const auto& members = here.members[static_cast<size_t>(group)];
  const int parent = levels_[static_cast<size_t>(level) + 1].group_of[static_cast<size_t>(members.front())];
  const int above = Collector(level + 1, parent, t);
  if (here.group_of[static_cast<size_t>(above)] == group) return above;
  return members[static_cast<size_t>(here.index[static_cast<size_t>(above)]) % members.size()];
}

std::vector<std::vector<int>> RankHierarchy::CollectedBy(int level, int group) const {
  const RankGroups& here = levels_[static_cast<size_t>(level)];
  std::vector<std::vector<int>> out(here.members[static_cast<size_t>(group)].size());
  for (int t = 0; t < size(); ++t) {
    out[static_cast<size_t>(here.index[static_cast<size_t>(Collector(level, group, t))])].push_back(t);
  }
  return out;
}

}  // namespace gpulaunch::rt
