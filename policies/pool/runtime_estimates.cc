#include "policies/pool/runtime_estimates.h"

#include <algorithm>
#include <cmath>

#include "policies/pool/seeded_rng.h"

namespace gpulaunch::pool {

const char* EstimateModeName(EstimateMode m) {
  switch (m) {
    case EstimateMode::kPerfect: return "perfect";
    case EstimateMode::kUser: return "user";
    case EstimateMode::kNone: return "none";
  }
  return "?";
}

StatusOr<EstimateMode> ParseEstimateMode(const std::string& text) {
  for (EstimateMode m : {EstimateMode::kPerfect, EstimateMode::kUser, EstimateMode::kNone})
    if (text == EstimateModeName(m)) return m;
  return InvalidArgument("estimates '" + text + "': choose perfect, user or none");
}

double RoundUpToCommonLimit(double seconds) {
  constexpr double kMin = 60, kHour = 3600, kDay = 86400, kWeek = 7 * kDay;
  static constexpr double kValues[] = {15 * kMin, 30 * kMin, kHour,    2 * kHour, 4 * kHour, 6 * kHour, 8 * kHour,
                                       12 * kHour, kDay,     2 * kDay, 3 * kDay,  4 * kDay,  5 * kDay,  kWeek};
  for (double v : kValues)
    if (seconds <= v) return v;
  return std::ceil(seconds / kWeek) * kWeek;
}

void DrawUserLimits(std::vector<TraceJob>& jobs, const UserLimitModel& model) {
  for (TraceJob& j : jobs) {
    if (j.limit > 0) continue;
    SeededRng rng(model.seed * 0x100000001b3ULL + static_cast<uint64_t>(j.id) + 1);
    const double kind = rng.Uniform(), factor = std::exp(rng.Uniform() * std::log(model.max_factor));
    const double site_max = std::max(model.site_max_s, RoundUpToCommonLimit(j.duration));
    if (kind < model.reach_share) {
      j.limit = j.duration;
    } else if (kind < model.reach_share + model.site_max_share) {
      j.limit = site_max;
    } else {
      j.limit = std::min(site_max, RoundUpToCommonLimit(j.duration * factor));
    }
    j.limit = std::max(j.limit, 1.0);  // a 0 s job still has a limit
  }
}

}  // namespace gpulaunch::pool
