#include "runtime/process_groups.h"

#include <set>

#include "common/strings.h"
#include "runtime/hierarchical_reduce.h"
#include "runtime/step_profiler.h"

namespace gpulaunch::rt {

StatusOr<ProcessGroups> CreateGroups(Communicator& world, const ParallelLayout& layout,
                                     const std::vector<std::string>& host_of_rank,
                                     const std::vector<std::string>& switch_of_rank) {
  if (layout.world_size() != world.size()) {
    return InvalidArgument("layout " + layout.ToString() + " needs " + std::to_string(layout.world_size()) +
                           " ranks, the communicator has " + std::to_string(world.size()));
  }
  ProcessGroups pg;
  pg.layout = layout;
  const auto coords = layout.CoordsOf(world.rank());
  const bool hosts_known = host_of_rank.size() == static_cast<size_t>(world.size());
  const bool switches_known = hosts_known && switch_of_rank.size() == static_cast<size_t>(world.size());
  for (Axis axis : {kTp, kPp, kDp}) {
    // Group rank k is the member whose coordinate on this axis is k (the split's key).
    auto names_of = [&](const std::vector<std::string>& of_rank) {
      std::vector<std::string> names;
      for (int r : layout.GroupOf(axis, world.rank())) names.push_back(of_rank[static_cast<size_t>(r)]);
      return HostIndices(names);
    };
    if (hosts_known) pg.group_hosts[axis] = names_of(host_of_rank);
    if (switches_known) pg.group_switches[axis] = names_of(switch_of_rank);
    // Color: the rank's position with this axis' coordinate set to 0.
    auto c = coords;
    c[axis] = 0;
    GL_ASSIGN_OR_RETURN(pg.group[axis], world.Split(layout.RankOf(c), coords[axis]));
    // With --profile, each group's traffic is counted under its axis' name
    // (a group of one rank never communicates).
    if (pg.group[axis]->size() > 1) {
      pg.group[axis] = ProfileCommunicator(std::move(pg.group[axis]), AxisName(axis), StepProfiler::Process(),
                                           pg.group_hosts[axis]);
    }
  }
  if (hosts_known) {
    std::set<std::string> hosts;
    for (int r : layout.GroupOf(kTp, world.rank())) hosts.insert(host_of_rank[r]);
    if (hosts.size() > 1) {
      pg.warnings.push_back("tensor-parallel group of rank " + std::to_string(world.rank()) + " spans " +
                            std::to_string(hosts.size()) + " hosts (" + Join({hosts.begin(), hosts.end()}, ", ") +
                            "): its collectives cross the network every layer");
    }
  }
  return pg;
}

}  // namespace gpulaunch::rt
