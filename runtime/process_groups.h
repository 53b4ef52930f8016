// Process groups of a parallel layout: one communicator per axis (tp, pp,
// dp), created in the same order on every rank. The layout value itself is
// common/parallel_layout.h.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "common/parallel_layout.h"
#include "common/status.h"
#include "runtime/communicator.h"

namespace gpulaunch::rt {

using gpulaunch::Axis;
using gpulaunch::AxisName;
using gpulaunch::kDp;
using gpulaunch::kPp;
using gpulaunch::kTp;
using gpulaunch::ParallelLayout;
using gpulaunch::ParseLayout;

struct ProcessGroups {
  ParallelLayout layout;
  std::array<std::unique_ptr<Communicator>, 3> group;  // by Axis
  // The host of each rank of this rank's group, by group rank (dense indices,
  // HostIndices); empty when CreateGroups was given no hosts. What a
  // DeterministicReducer over the group takes as ReduceConfig::host_of_rank.
  std::array<std::vector<int>, 3> group_hosts;
  // The same for leaf switches (ReduceConfig::switch_of_rank); empty when
  // CreateGroups was given no switches.
  std::array<std::vector<int>, 3> group_switches;
  std::vector<std::string> warnings;  // e.g. a TP group spanning hosts
};

// Collective over `world`. With profiling on (runtime/step_profiler.h) each
// group's communication is counted under "tp", "pp" or "dp". `host_of_rank` (optional, world-sized) lets it warn
// when a tensor-parallel group spans hosts; `switch_of_rank` (optional,
// world-sized, Runtime::switches()) gives each group its switches.
StatusOr<ProcessGroups> CreateGroups(Communicator& world, const ParallelLayout& layout,
                                     const std::vector<std::string>& host_of_rank = {},
                                     const std::vector<std::string>& switch_of_rank = {});

}  // namespace gpulaunch::rt
