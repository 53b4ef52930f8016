#include "common/parallel_layout.h"

#include <cstdint>
#include <optional>
#include <set>

#include "common/strings.h"

namespace gpulaunch {
namespace {

std::optional<Axis> AxisFromName(std::string_view s) {
  if (s == "tp") return kTp;
  if (s == "pp") return kPp;
  if (s == "dp") return kDp;
  return std::nullopt;
}

Status Bad(std::string_view text, const std::string& why) {
  return InvalidArgument("layout '" + std::string(text) + "': " + why +
                         " (expected e.g. tp=2,pp=2,dp=2 or tp=4,order=tp-dp-pp)");
}

}  // namespace

const char* AxisName(Axis a) { return a == kTp ? "tp" : a == kPp ? "pp" : "dp"; }

std::array<int, 3> ParallelLayout::CoordsOf(int rank) const {
  std::array<int, 3> c{};
  for (Axis a : order) {
    c[a] = rank % extent[a];
    rank /= extent[a];
  }
  return c;
}

int ParallelLayout::RankOf(const std::array<int, 3>& c) const {
  int rank = 0;
  for (int i = 2; i >= 0; --i) rank = rank * extent[order[i]] + c[order[i]];
  return rank;
}

std::vector<int> ParallelLayout::GroupOf(Axis axis, int rank) const {
  std::array<int, 3> c = CoordsOf(rank);
  std::vector<int> members;
  for (int k = 0; k < extent[axis]; ++k) {
    c[axis] = k;
    members.push_back(RankOf(c));
  }
  return members;
}

std::string ParallelLayout::ToString() const {
  return "tp=" + std::to_string(extent[kTp]) + ",pp=" + std::to_string(extent[kPp]) + ",dp=" +
         std::to_string(extent[kDp]) + ",order=" + AxisName(order[0]) + "-" + AxisName(order[1]) + "-" +
         AxisName(order[2]);
}

constexpr int64_t kMaxLayoutRanks = int64_t{1} << 20;

StatusOr<ParallelLayout> ParseLayout(std::string_view text, int world_size) {
  ParallelLayout layout;
  std::set<Axis> given;
  for (const std::string& item : Split(text, ',')) {
    const std::string_view part = Trim(item);
    if (part.empty()) continue;
    const auto eq = part.find('=');
    if (eq == std::string_view::npos) return Bad(text, "'" + std::string(part) + "' has no '='");
    const std::string_view key = part.substr(0, eq), value = part.substr(eq + 1);
    if (key == "order") {
      const auto names = Split(value, '-');
      std::set<Axis> seen;
      if (names.size() != 3) return Bad(text, "order must name tp, pp and dp once each, fastest first");
      for (size_t i = 0; i < 3; ++i) {
        const auto a = AxisFromName(names[i]);
        if (!a || !seen.insert(*a).second) return Bad(text, "order must name tp, pp and dp once each, fastest first");
        layout.order[i] = *a;
      }
      continue;
    }
    const auto axis = AxisFromName(key);
    if (!axis) return Bad(text, "unknown key '" + std::string(key) + "'");
    const auto n = ParseInt(value);
    if (!n || *n < 1 || *n > 1 << 20) return Bad(text, std::string(key) + " must be a positive whole number");
    if (!given.insert(*axis).second) return Bad(text, std::string(key) + " given twice");
    layout.extent[*axis] = static_cast<int>(*n);
  }
  // Each extent is at most 2^20, their product could overflow an int.
  const int64_t needed = int64_t{layout.extent[kTp]} * layout.extent[kPp] * (given.count(kDp) ? layout.extent[kDp] : 1);
  if (needed > kMaxLayoutRanks) {
    return Bad(text, "it needs " + std::to_string(needed) + " ranks, more than the " + std::to_string(kMaxLayoutRanks) +
                         " a layout may have");
  }
  if (world_size > 0) {
    if (!given.count(kDp)) {
      const int rest = layout.extent[kTp] * layout.extent[kPp];
      if (world_size % rest != 0) {
        return Bad(text, "tp*pp=" + std::to_string(rest) + " does not divide the " + std::to_string(world_size) +
                             " ranks");
      }
      layout.extent[kDp] = world_size / rest;
    }
    if (layout.world_size() != world_size) {
      return Bad(text, "it needs " + std::to_string(layout.world_size()) + " ranks but the job has " +
                           std::to_string(world_size));
    }
  }
  return layout;
}

}  // namespace gpulaunch
