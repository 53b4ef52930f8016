// A simple checkpoint hook for jobs gpulaunch may launch again
// (--on-failure=restart:N sets GPULAUNCH_RESTART_COUNT in every rank).
//
//   rt::Checkpointer ckpt(world, dir, fingerprint);
//   auto last = ckpt.LoadLatest();            // collective; nullopt: start fresh
//   ... restore from last->state, continue after last->step ...
//   ckpt.Save(step, MyStateBytes());          // collective, at a step boundary
//
// Every rank saves its own bytes (its shard of the weights, optimizer state,
// whatever it needs). A step counts as saved only once every rank's file of
// it is complete: each rank writes DIR/step-S/rank-R.bin through a temporary
// name, all meet at a barrier, then rank 0 points DIR/latest at S and
// removes older steps. A crash at any moment leaves the previous complete
// step loadable. `fingerprint` (world size, layout, model: whatever makes
// states incompatible) is stored in every file; loading a checkpoint written
// under another fingerprint fails with both named. DIR must be the same
// directory for every rank (shared storage when ranks span hosts).
#pragma once

#include <optional>
#include <string>

#include "common/status.h"
#include "runtime/communicator.h"

namespace gpulaunch::rt {

struct Checkpoint {
  int step = -1;
  std::string state;  // what this rank saved
};

class Checkpointer {
 public:
  Checkpointer(Communicator& world, std::string dir, std::string fingerprint);

  // Collective, at a step boundary. Ok on every rank only once the
  // checkpoint is committed (every rank's file written, then `latest` naming
  // `step`): a rank that dies right after its Save returned still leaves a
  // checkpoint a restart resumes from. A failure on any rank is every rank's.
  Status Save(int step, const std::string& state);
  StatusOr<std::optional<Checkpoint>> LoadLatest();

 private:
  Communicator& world_;
  std::string dir_, fingerprint_;
};

// GPULAUNCH_RESTART_COUNT: 0 on the first launch (or outside gpulaunch).
int RestartCount();

}  // namespace gpulaunch::rt
