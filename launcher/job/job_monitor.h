// gpulaunch's watch over a running job, beyond the engine's own: did every
// rank check in within --startup-timeout, did a shim refuse its slot, has a
// rank gone --stall-timeout without a progress heartbeat. A pure decision over
// the control server's records, called a few times a second.
#pragma once

#include <map>
#include <set>

#include "launcher/base/control_server.h"
#include "launcher/job/job_summary.h"

namespace gpulaunch {

struct MonitorSettings {
  int world = 0;
  int startup_timeout_s = 0;  // 0: not watched
  int stall_timeout_s = 0;    // 0: not watched
};

struct MonitorVerdict {
  StopReason stop = StopReason::kNone;  // kNone: let it run
  std::set<int> stalled;                // with kStall
  // A rank that failed (non-zero exit, a signal, or lost): the job is over
  // and every other rank should be stopped now. -1 when none has.
  int failed_rank = -1;
};

// `started`: when the engine was started. A rank is stalled when it checked
// in, has not ended, and neither its check-in nor its last heartbeat is
// within the stall timeout.
MonitorVerdict WatchJob(const MonitorSettings& settings, const std::map<int, RankRecord>& ranks,
                        ControlClock::time_point started, ControlClock::time_point now);

}  // namespace gpulaunch
