// ParallelLayout: how a job's ranks split into tensor (tp), pipeline (pp) and
// data (dp) parallel groups. A pure value shared by placement (policies/) and
// the runtime (runtime/process_groups.h). The order string lists axes fastest
// first ("tp,pp,dp" by default, as in Megatron: TP neighbours are adjacent
// ranks, so placement keeps them on one host).
//
//   "tp=2,pp=2,dp=2"          explicit
//   "tp=4" with 16 ranks      dp inferred (= 4), pp = 1
//   "tp=2,pp=4,order=tp-dp-pp"
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace gpulaunch {

enum Axis { kTp = 0, kPp = 1, kDp = 2 };
const char* AxisName(Axis a);

struct ParallelLayout {
  std::array<int, 3> extent = {1, 1, 1};         // by Axis
  std::array<Axis, 3> order = {kTp, kPp, kDp};   // fastest first

  int world_size() const { return extent[0] * extent[1] * extent[2]; }
  std::array<int, 3> CoordsOf(int rank) const;   // by Axis
  int RankOf(const std::array<int, 3>& coords) const;
  // Ranks in `rank`'s group along `axis`, ordered by their coordinate on it.
  std::vector<int> GroupOf(Axis axis, int rank) const;
  std::string ToString() const;  // "tp=2,pp=2,dp=2,order=tp-pp-dp"
};

// world_size > 0 infers a missing dp and checks the product; 0 skips both.
StatusOr<ParallelLayout> ParseLayout(std::string_view text, int world_size);

}  // namespace gpulaunch
