// `gpulaunch nodes`: the resource table of a pool. Pure functions from what
// was gathered (a topology per host that answered, the error of one that did
// not, Slurm's node states) to rows and their table or JSON text, so they are
// tested without hosts.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
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
  // Memory in use, summed over the group's GPUs, when NVML reported every one.
  std::optional<uint64_t> used_bytes;
};

// GPU memory as NVML reported it on a host, by PCI bus id.
struct GpuMemory {
  uint64_t total_bytes = 0;
  uint64_t used_bytes = 0;
};
using GpuMemoryByBus = std::map<std::string, GpuMemory>;

// gpulaunch-probe appends NVML's memory figures to its hwloc XML as one
// comment: "<!-- gpulaunch-gpu-memory: BUS=TOTAL/USED ... -->". Parsing
// skips malformed entries; no comment (no driver) gives an empty map.
std::string FormatGpuMemoryComment(const GpuMemoryByBus& memory);
GpuMemoryByBus ParseGpuMemoryComment(const std::string& probe_output);

struct NodeRow {
  std::string host;
  // online: it answered; suspect: it answered before (--watch) but missed
  // the last one or two rounds; down: it did not answer within the budget
  // (three rounds in a row under --watch); drained / draining: Slurm says so
  // (it may still answer).
  std::string state = "down";
  std::string reason;              // why it is down or drained
  std::optional<std::chrono::system_clock::time_point> answered;  // when it last answered
  int cores = 0;
  std::vector<GpuGroup> gpus;      // by model, in bus order of first appearance
};

// The row of a host that answered with `topology` at `when`; `memory` (from
// NVML on that host) adds memory in use and fills in totals hwloc lacks.
NodeRow RowFromTopology(const std::string& host, const HostTopology& topology,
                        std::chrono::system_clock::time_point when, const GpuMemoryByBus& memory = {});
// The row of a host that did not answer: `why` says what failed.
NodeRow DownRow(const std::string& host, const std::string& why);

// Folds `scontrol show node -o` output in: DRAIN and DOWN states (with
// Slurm's Reason=) override "online"; hosts Slurm does not know are left.
void ApplySlurmStates(std::vector<NodeRow>& rows, const std::string& scontrol_text);

// What --watch remembers of each host between rounds.
struct NodeHistory {
  std::optional<std::chrono::system_clock::time_point> last_answer;
  int missed = 0;  // rounds in a row without an answer
};
inline constexpr int kRoundsBeforeDown = 3;
// A host that does not answer this round but answered in an earlier one is
// suspect until it missed kRoundsBeforeDown rounds in a row; updates `history`.
void ApplyHistory(std::vector<NodeRow>& rows, std::map<std::string, NodeHistory>& history);

// One line per host and GPU model: HOST STATE GPUS MODEL MEMORY IN-USE FREE
// CORES ANSWERED REASON (MEMORY per GPU; IN USE and FREE for the group).
std::string RenderNodeTable(const std::vector<NodeRow>& rows);
// {"format":"gpulaunch-nodes/v1","hosts":[...]}.
std::string RenderNodeJson(const std::vector<NodeRow>& rows);

}  // namespace gpulaunch
