#include "launcher/sim/replay_export.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/strings.h"

namespace gpulaunch {

using pool::ObservedRun;
using pool::TraceJob;

namespace {

// The team of `account` in `quotas`; -1: none.
int TeamOf(const pool::QuotaBook& quotas, const std::string& account) {
  for (int t = 0; t < quotas.teams(); ++t)
    if (quotas.quota(t).team == account) return t;
  return -1;
}

}  // namespace

StatusOr<RecordedJobs> RecordedFromExport(std::vector<SacctJob> jobs, const pool::QuotaBook& quotas,
                                          const std::string& origin) {
  RecordedJobs out;
  std::stable_sort(jobs.begin(), jobs.end(), [](const SacctJob& a, const SacctJob& b) { return a.submit < b.submit; });
  const double t0 = jobs.empty() ? 0 : jobs.front().submit;
  out.t0 = t0;
  for (const SacctJob& s : jobs) {
    if (s.gpus <= 0 || s.start < 0 || s.end < 0) {
      ++out.skipped;
      continue;
    }
    TraceJob j;
    j.id = static_cast<int>(out.trace.size());
    j.submit = s.submit - t0;
    j.duration = std::max(1.0, s.last_run_s);
    j.gpus = s.gpus;
    j.cpus = s.cpus;
    j.limit = s.limit_s;
    j.line = s.line;
    if (quotas.enabled()) {
      j.team = TeamOf(quotas, s.account);
      if (j.team < 0) {
        return InvalidArgument(origin + ":" + std::to_string(s.line) + ": job " + Excerpt(s.id) + "'s account '" +
                               Excerpt(s.account) + "' is no team of --quota" +
                               (s.account.empty() ? " (the export needs an Account column: " +
                                                        std::string(kSacctExportCommand) + ")"
                                                  : ""));
      }
    }
    for (double end : s.preempted_ends) out.kills.push_back(end - t0);
    out.trace.push_back(j);
    out.observed.push_back(ObservedRun{j.id, s.id, s.submit - t0, s.start - t0, s.end - t0, s.runs > 1,
                                           s.backfilled});
  }
  std::sort(out.kills.begin(), out.kills.end());
  return out;
}

pool::ReclaimTiming ReclaimOfRun(const RecordedJobs& run, double grace_time_s, double delay_s, double mean_delay_s,
                                 std::string* phase_from) {
  pool::ReclaimTiming r;
  r.delay_s = delay_s;
  if (grace_time_s <= 0) return r;
  if (run.kills.empty()) {
    r.delay_s = mean_delay_s;
    if (phase_from) *phase_from = "no kill recorded: the mean wait";
    return r;
  }
  r.grace_time_s = grace_time_s;
  r.pass_period_s = pool::kSlurmKillPassSeconds;
  r.pass_at_s = run.kills.front();
  if (phase_from) *phase_from = "the run's first kill";
  return r;
}

Status SameJobs(const RecordedJobs& a, const std::string& origin_a, const RecordedJobs& b,
                const std::string& origin_b, double submit_slack_s) {
  if (a.trace.size() != b.trace.size()) {
    return InvalidArgument(origin_b + " holds " + std::to_string(b.trace.size()) + " jobs that ran on GPUs, " +
                           origin_a + " " + std::to_string(a.trace.size()) +
                           ": compare two runs of the same trace (sim --replay --trace T --save FILE, twice)");
  }
  for (size_t i = 0; i < a.trace.size(); ++i) {
    const pool::TraceJob& x = a.trace[i];
    const pool::TraceJob& y = b.trace[i];
    if (x.gpus == y.gpus && std::fabs(x.submit - y.submit) <= submit_slack_s) continue;
    char what[160];
    std::snprintf(what, sizeof what, "job %zu in submit order: %d GPUs submitted at %.0f s there, %d GPUs at %.0f s here",
                  i, x.gpus, x.submit, y.gpus, y.submit);
    return InvalidArgument(origin_b + ":" + std::to_string(y.line) + ": not the jobs of " + origin_a + ":" +
                           std::to_string(x.line) + " (" + what +
                           "): compare two runs of the same trace (sim --replay --trace T --save FILE, twice)");
  }
  return Status::Ok();
}

}  // namespace gpulaunch
