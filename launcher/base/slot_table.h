// The slot table: what a rank needs from the plan, handed to every rank by
// the engine in one environment variable (GPULAUNCH_SLOT_TABLE; `mpirun -x`,
// srun's environment). It needs no shared filesystem. Each rank's exec shim
// finds its own row by its engine rank, applies it and refuses to start when
// reality differs.
//
// The variable holds the job's header and, normally, no rows: the shim asks
// gpulaunch's control server for its own row ("slot <rank>" on the
// connection it opens anyway, control_protocol.h), so the environment of
// every rank is the same few hundred bytes whatever the world size. Only a
// job without a control address carries every row inline (then bounded by
// kMaxSlotTableBytes).
//
// Format (version 3), fields never contain the separators:
//   v3|<job id>|<plan hash>|<master addr>|<master port>|<control addr:port or ->|<world>|<layout or ->|<rows or ->
// rows are space-separated, one per rank in rank order, each
//   host/local/local_size/node_rank/bound(0|1)/cpus/mem(-1 none)/gpus(- none)/host_has_gpus(0|1)/nic(- none)/
//   leaf switch(- none; absent in rows of a gpulaunch before it)
// with id lists in the "0-3,8" form; "-" means "ask the control server".
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "policies/placement.h"

namespace gpulaunch {

inline constexpr const char* kSlotTableEnv = "GPULAUNCH_SLOT_TABLE";
// The job's kill grace in milliseconds, for each shim: the time from SIGTERM
// to SIGKILL for what a rank leaves behind (launcher/shim/descendants.h).
inline constexpr const char* kKillGraceEnv = "GPULAUNCH_KILL_GRACE_MS";
// The variables an engine tells each rank who it is by, for an engine whose
// ranks the shim does not know by itself (apply_slot.h): "RANK SIZE [LOCAL]",
// names separated by spaces, the local rank's left out when the engine's
// count differs from the plan's. Set by the engine (EngineJob::env),
// removed by the shim before the job starts.
inline constexpr const char* kEngineIdentityEnv = "GPULAUNCH_ENGINE_IDENTITY";
// Linux limits one environment string to 128 KiB (MAX_ARG_STRLEN); only an
// inline table can come near it.
inline constexpr size_t kMaxSlotTableBytes = 120 * 1024;

struct SlotTable {
  std::string job_id;
  std::string plan_hash;
  std::string master_addr;
  int master_port = 0;
  std::string control;  // "addr:port" where ranks check in, empty when none
  std::string layout;   // ParallelLayout::ToString(), empty for plain data parallelism
  int world = 0;        // ranks in the job (ranks.size() when the rows are inline)
  std::vector<RankSlot> ranks;  // every row, or empty: each rank fetches its own
};

// With `with_rows` false the rows are left to the control server.
std::string EncodeSlotTable(const SlotTable& table, bool with_rows = true);
StatusOr<SlotTable> DecodeSlotTable(const std::string& text);

// One rank's row, as in the table and in the control server's answer.
std::string EncodeSlotRow(const RankSlot& slot);
StatusOr<RankSlot> DecodeSlotRow(const std::string& text, int rank);

}  // namespace gpulaunch
