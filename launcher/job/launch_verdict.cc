#include "launcher/job/launch_verdict.h"

#include <filesystem>
#include <iostream>

#include "common/file_write.h"
#include "launcher/base/exit_codes.h"

namespace gpulaunch {

LaunchOutcome StopOutcome(const JobRunResult& result, const MonitorVerdict& verdict, int checked_in,
                          const RunSettings& o, JobOutcome& job) {
  LaunchOutcome out;
  out.exit_code = JobExitCode(result.wait_status, checked_in > 0);
  if (result.timed_out) {
    out.stop = StopReason::kTimeout;
    job.limit_s = *o.timeout_s;
    out.exit_code = kExitTimeout;
  } else if (result.stopped_by_watchdog) {
    out.stop = verdict.stop;
    job.stalled = verdict.stalled;
    job.limit_s = verdict.stop == StopReason::kStall ? o.stall_timeout_s : o.startup_timeout_s;
    out.exit_code = verdict.stop == StopReason::kStall ? kExitTimeout : kExitLaunchFailure;
  } else if (result.user_signal) {
    out.stop = StopReason::kUserSignal;
    job.user_signal = result.user_signal;
    if (out.exit_code != 0) out.exit_code = 128 + result.user_signal;
  } else if (out.exit_code == kExitLaunchFailure && checked_in == 0) {
    std::cerr << "gpulaunch: the engine failed before any rank started (see what it printed, if anything, above); exit "
              << out.exit_code << "\n";
  }
  job.stop = out.stop;
  job.exit_code = out.exit_code;
  return out;
}

bool EveryRankSucceeded(const std::map<int, RankRecord>& records, size_t world) {
  if (records.size() < world) return false;
  for (const auto& [rank, r] : records)
    if (!r.ended || r.signaled || r.exit_value != 0) return false;
  return true;
}

void Blame(const std::map<int, RankRecord>& records, int checked_in, JobOutcome& job, LaunchOutcome& out) {
  out.cause = FindRootCause(job, records);
  // The engine's code can name a rank our teardown stopped; the job's code is
  // the first failure's.
  if (out.stop == StopReason::kNone && out.cause && out.cause->rank >= 0 && records.count(out.cause->rank)) {
    const RankRecord& r = records.at(out.cause->rank);
    if (r.ended && (r.signaled || r.exit_value != 0)) {
      out.exit_code = r.signaled ? 128 + r.exit_value : r.exit_value;
    } else if (r.lost) {
      out.exit_code = kExitLaunchFailure;  // its host or shim vanished: not the job's own doing
    }
    job.exit_code = out.exit_code;
  }
  bool refused = false;
  for (const auto& [rank, r] : records) {
    refused = refused || !r.refusal.empty();
    if (r.lost) out.failed_hosts.insert(r.host);
  }
  if (out.cause && out.cause->rank >= 0 && static_cast<size_t>(out.cause->rank) < job.planned_hosts.size()) {
    out.failed_hosts.insert(job.planned_hosts[static_cast<size_t>(out.cause->rank)]);
  }
  out.restartable = out.exit_code != 0 && checked_in > 0 && !refused &&
                    (out.stop == StopReason::kNone || out.stop == StopReason::kStall);
}

void Report(const RunSettings& o, const JobOutcome& job, const std::map<int, RankRecord>& records,
            const LaunchOutcome& out) {
  if (!o.summary_path.empty()) {
    if (Status s = WriteFileAtomically(o.summary_path, SummaryJson(job, records, out.cause), kPrivateFileMode); !s.ok()) {
      std::cerr << "gpulaunch: warning: " << s.message() << "\n";
    }
  }
  if (out.cause) {
    std::cerr << RenderRootCause(*out.cause, o.summary_path.empty() ? "" : std::filesystem::absolute(o.summary_path).string());
  }
}

}  // namespace gpulaunch
