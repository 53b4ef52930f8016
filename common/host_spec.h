// Host specifications as mpirun users write them:
//   -H/--host    "a:2,b:2", "node[01-04]:4", "a" (one slot, as in mpirun)
//   --hostfile   Open MPI form "host slots=N [max_slots=M]", Hydra form
//                "host:N", Slurm hostlists, '#' comments and blank lines.
// A hostfile reads as Open MPI 4.1 reads it, where both accept the text
// (tests/data/oracles/, docs/launch.md's table): repeated lines merge as
// mpirun merges them, or are refused where mpirun refuses them. The -H list
// merges repeated hosts by adding slots, as mpirun's -H does.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/env.h"
#include "common/status.h"

namespace gpulaunch {

struct HostSpec {
  std::string name;
  // Slots the user gave; nullopt means "ask the topology" (hostfile lines
  // without slots, as Open MPI counts cores there).
  std::optional<int> slots;
  std::optional<int> max_slots;  // hard cap, even with --oversubscribe
  bool operator==(const HostSpec&) const = default;
};

// Parses a -H/--host argument. Each name without ":N" gets one slot, as mpirun.
StatusOr<std::vector<HostSpec>> ParseHostArgument(std::string_view text);

// Parses hostfile text; `origin` names the file in errors ("hosts.txt:3: ...").
StatusOr<std::vector<HostSpec>> ParseHostfileText(std::string_view text, std::string_view origin);

// Hosts of the Slurm allocation this process runs in: SLURM_JOB_NODELIST
// (hostlist) with slots from SLURM_TASKS_PER_NODE ("2(x3),1"), falling back
// to SLURM_NODELIST. Empty when not inside an allocation.
StatusOr<std::vector<HostSpec>> HostsFromSlurmAllocation(const EnvLookup& env);

// Reads and parses a hostfile from disk.
StatusOr<std::vector<HostSpec>> ReadHostfile(const std::string& path);

}  // namespace gpulaunch
