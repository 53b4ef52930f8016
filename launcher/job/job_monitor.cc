#include "launcher/job/job_monitor.h"

#include <algorithm>

namespace gpulaunch {

MonitorVerdict WatchJob(const MonitorSettings& s, const std::map<int, RankRecord>& ranks,
                        ControlClock::time_point started, ControlClock::time_point now) {
  MonitorVerdict v;
  int checked_in = 0;
  for (const auto& [rank, r] : ranks) {
    if (!r.refusal.empty()) {
      v.stop = StopReason::kRefused;
      return v;
    }
    checked_in += r.pid > 0;
    const bool failed = (r.ended && (r.signaled || r.exit_value != 0)) || r.lost;
    if (failed && v.failed_rank < 0) v.failed_rank = rank;
  }
  if (s.startup_timeout_s > 0 && checked_in < s.world && now - started >= std::chrono::seconds(s.startup_timeout_s)) {
    v.stop = StopReason::kStartupTimeout;
    return v;
  }
  if (s.stall_timeout_s > 0) {
    for (const auto& [rank, r] : ranks) {
      if (r.pid <= 0 || r.ended || r.lost) continue;
      const auto last = std::max(r.checked_in, r.last_beat);
      if (now - last >= std::chrono::seconds(s.stall_timeout_s)) v.stalled.insert(rank);
    }
    if (!v.stalled.empty()) v.stop = StopReason::kStall;
  }
  return v;
}

}  // namespace gpulaunch
