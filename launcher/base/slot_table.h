// The slot table: the whole plan in one environment variable
// (GPULAUNCH_SLOT_TABLE), handed to every rank by the engine (`mpirun -x`).
// It needs no shared filesystem. Each rank's exec shim finds its own row by
// its engine rank, applies it and refuses to start when reality differs.
//
// Format (version 2), fields never contain the separators:
//   v2|<job id>|<plan hash>|<master addr>|<master port>|<control addr:port or ->|<world>|<layout>|<rank> <rank> ...
// and each rank is
//   host/local/local_size/node_rank/bound(0|1)/cpus/mem(-1 none)/gpus(- none)/host_has_gpus(0|1)/nic(- none)
// with id lists in the "0-3,8" form.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "policies/placement.h"

namespace gpulaunch {

inline constexpr const char* kSlotTableEnv = "GPULAUNCH_SLOT_TABLE";
// Linux limits one environment string to 128 KiB (MAX_ARG_STRLEN).
inline constexpr size_t kMaxSlotTableBytes = 120 * 1024;

struct SlotTable {
  std::string job_id;
  std::string plan_hash;
  std::string master_addr;
  int master_port = 0;
  std::string control;  // "addr:port" where ranks check in, empty when none
  std::string layout;   // ParallelLayout::ToString(), empty for plain data parallelism
  std::vector<RankSlot> ranks;
};

std::string EncodeSlotTable(const SlotTable& table);
StatusOr<SlotTable> DecodeSlotTable(const std::string& text);

}  // namespace gpulaunch
