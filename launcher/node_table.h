// `gpulaunch nodes`: the resource table of a pool. Pure functions from what
// was gathered (a topology per host that answered, the error of one that did
// not, Slurm's node states) to rows and their table or JSON text, so they are
// tested without hosts.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/host_topology.h"
#include "common/status.h"

namespace gpulaunch {

struct GpuGroup {
  std::string model;               // "unknown" when not recorded
  int count = 0;
  uint64_t memory_bytes = 0;       // per GPU, 0 when unknown
};

struct NodeRow {
  std::string host;
  // online: it answered; down: it did not within the budget; drained /
  // draining: Slurm says so (it may still answer).
  std::string state = "down";
  std::string reason;              // why it is down or drained
  std::optional<std::chrono::system_clock::time_point> answered;  // when it last answered
  int cores = 0;
  std::vector<GpuGroup> gpus;      // by model, in bus order of first appearance
};

// The row of a host that answered with `topology` at `when`.
NodeRow RowFromTopology(const std::string& host, const HostTopology& topology,
                        std::chrono::system_clock::time_point when);
// The row of a host that did not answer: `why` says what failed.
NodeRow DownRow(const std::string& host, const std::string& why);

// Folds `scontrol show node -o` output in: DRAIN and DOWN states (with
// Slurm's Reason=) override "online"; hosts Slurm does not know are left.
void ApplySlurmStates(std::vector<NodeRow>& rows, const std::string& scontrol_text);

// One line per host and GPU model: HOST STATE GPUS MODEL MEMORY CORES ANSWERED REASON.
std::string RenderNodeTable(const std::vector<NodeRow>& rows);
// {"format":"gpulaunch-nodes/v1","hosts":[...]}.
std::string RenderNodeJson(const std::vector<NodeRow>& rows);

}  // namespace gpulaunch
