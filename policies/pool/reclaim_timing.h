// When a preempted job is killed and its GPUs come free, as the simulator
// and the scheduler model it:
//   - at once (pass_period_s 0): killed at the decision (Slurm with
//     GraceTime 0 requeues its victims in the scheduling pass itself);
//   - at Slurm's passes (pass_period_s > 0): with a GraceTime, slurmctld
//     kills a victim at its periodic time-limit pass (every 30 s, compiled
//     in), the first one at least GraceTime after the preemption
//     (docs/slurm.md, "Reclaim timing, measured"). The passes run at
//     pass_at_s + k x pass_period_s on the trace's clock.
// Either way the GPUs come free `delay_s` after the kill (the job's end, the
// next scheduling pass). A requeued victim's hold
// (SchedulerConfig::requeue_hold_s) runs from the kill, as Slurm sets its
// BeginTime then.
#pragma once

#include <cmath>

namespace gpulaunch::pool {

// slurmctld's time-limit pass: PERIODIC_TIMEOUT, 30 s, not configurable.
inline constexpr double kSlurmKillPassSeconds = 30;

struct ReclaimTiming {
  double delay_s = 0;          // from the kill to the GPUs being free
  double grace_time_s = 0;     // with passes: the victim runs at least this long after the decision
  double pass_period_s = 0;    // 0: killed at the decision
  double pass_at_s = 0;        // a pass's time (any one; s, the trace's clock)
  // With passes: while one of a team's jobs waits for its victims (picked in
  // an earlier pass), Slurm's main scheduling pass picks no victims for the
  // team's other jobs (their partition is marked failed for the pass); they
  // get theirs together once it has started, or at a backfill cycle
  // (docs/slurm.md: a burst of owner jobs).
  bool one_at_a_time = true;

  bool passes() const { return pass_period_s > 0; }

  // When the victims of a preemption decided at `decided` are killed.
  double KilledAt(double decided) const {
    if (!passes()) return decided;
    const double earliest = decided + grace_time_s;
    const double k = std::ceil((earliest - pass_at_s) / pass_period_s - 1e-9);
    return pass_at_s + k * pass_period_s;
  }
  // When their GPUs are free for the job that preempted them.
  double FreedAt(double decided) const { return KilledAt(decided) + delay_s; }
};

}  // namespace gpulaunch::pool
