#include "launcher/sim/replay_submit.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <thread>

#include "common/strings.h"
#include "launcher/base/process.h"
#include "slurm/sacct_export.h"

namespace gpulaunch {

using pool::TraceJob;

ClusterTiming ReadClusterTiming() {
  ClusterTiming out;
  const CapturedRun config = RunCaptured({"scontrol", "show", "config"}, EnvironmentWith({}), 10000);
  const CapturedRun partitions = RunCaptured({"scontrol", "-o", "show", "partition"}, EnvironmentWith({}), 10000);
  if (!config.Succeeded() || !partitions.Succeeded()) return out;
  auto site = ParseRunningSlurmConfig(config.out, partitions.out);
  if (!site.ok()) return out;
  out.timing = SchedulerTimingOf(*site);
  out.answered = true;
  return out;
}

double ReadLastBackfillEpoch() {
  // sdiag: "Backfilling stats" ... "Last cycle when: Sat Dec 05 13:41:19 2026 (1796478079)".
  const CapturedRun diag = RunCaptured({"sdiag"}, EnvironmentWith({}), 10000);
  const size_t section = diag.out.find("Backfilling stats");
  const size_t when = section == std::string::npos ? section : diag.out.find("Last cycle when:", section);
  const size_t open = when == std::string::npos ? when : diag.out.find('(', when);
  if (!diag.Succeeded() || open == std::string::npos) return -1;
  const auto epoch = ParseInt(diag.out.substr(open + 1, diag.out.find(')', open) - open - 1));
  return epoch && *epoch > 0 ? static_cast<double>(*epoch) : -1;
}

bool WaitForQuietCluster(double quiet_s, double give_up_s) {
  using Clock = std::chrono::steady_clock;
  const auto give_up = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(give_up_s));
  auto empty_since = Clock::now();
  bool empty_before = false;
  while (Clock::now() < give_up) {
    const CapturedRun q = RunCaptured({"squeue", "-h", "-o", "%i"}, EnvironmentWith({}), 30000);
    const bool empty = q.Succeeded() && Trim(q.out).empty();
    if (empty && !empty_before) empty_since = Clock::now();
    empty_before = empty;
    if (empty && std::chrono::duration<double>(Clock::now() - empty_since).count() >= quiet_s) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return false;
}

namespace {

std::vector<std::string> SbatchArgv(const TraceJob& j, const ReplaySubmission& how, double run) {
  const int per = how.gpus_per_host;
  const int hosts = j.gpus <= per ? 1 : (j.gpus + per - 1) / per;
  char sleep[64];
  std::snprintf(sleep, sizeof sleep, "exec sleep %.1f", run);
  const int limit_min = static_cast<int>(std::ceil((run + 30) / 60));  // a minute's grain, with slack
  std::vector<std::string> argv = {"sbatch", "--parsable", "-J", "gl-replay-" + std::to_string(j.id), "-o",
                                   "/dev/null", "-e", "/dev/null", "--time", std::to_string(limit_min), "-N",
                                   std::to_string(hosts), "--gres=gpu:" + std::to_string(hosts > 1 ? per : j.gpus)};
  if (!how.accounts.empty()) argv.push_back("--account=" + how.accounts[static_cast<size_t>(j.team)]);
  argv.insert(argv.end(), {"--wrap", sleep});
  return argv;
}

// Blocks until none of `submitted` is in this user's queue, or the deadline.
bool WaitUntilAllEnded(const std::set<std::string>& submitted, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    // This user's queue, not `squeue -j ids`: slurmctld forgets ended jobs
    // after MinJobAge, and asking for one it forgot is an error.
    const CapturedRun q = RunCaptured({"squeue", "-h", "-o", "%i", "--me"}, EnvironmentWith({}), 30000);
    bool waiting = !q.Succeeded();
    for (const std::string& id : Split(q.out, '\n')) waiting |= submitted.count(std::string(Trim(id))) > 0;
    if (!waiting) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

}  // namespace

StatusOr<std::string> SubmitAndRecord(const std::vector<TraceJob>& trace, const ReplaySubmission& how) {
  for (const TraceJob& j : trace) {
    const int per = how.gpus_per_host;
    if (j.gpus > per && j.gpus % per != 0) {
      return InvalidArgument("trace job " + std::to_string(j.id) + " (line " + std::to_string(j.line) + ") has " +
                             std::to_string(j.gpus) + " GPUs: more than a host's " + std::to_string(per) +
                             " and not whole hosts");
    }
    if (!how.accounts.empty() && (j.team < 0 || j.team >= static_cast<int>(how.accounts.size()))) {
      return InvalidArgument("trace job " + std::to_string(j.id) + " (line " + std::to_string(j.line) + ") is of team " +
                             std::to_string(j.team) + ": --quota names " + std::to_string(how.accounts.size()) +
                             " teams (0.." + std::to_string(how.accounts.size() - 1) + ")");
    }
  }
  std::vector<std::string> ids;
  auto cancel = [&ids] {
    if (ids.empty()) return;
    std::vector<std::string> argv = {"scancel"};
    argv.insert(argv.end(), ids.begin(), ids.end());
    RunCaptured(argv, EnvironmentWith({}), 30000);
  };
  const auto t0 = std::chrono::steady_clock::now();
  double last_end = 0;
  for (const TraceJob& j : trace) {
    const double at = j.submit / how.time_scale, run = std::max(1.0, j.duration / how.time_scale);
    last_end = std::max(last_end, at) + run;
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                           std::chrono::duration<double>(at)));
    const CapturedRun r = RunCaptured(SbatchArgv(j, how, run), EnvironmentWith({}), 30000);
    const std::string id(Trim(Split(r.out, ';')[0]));
    if (!r.Succeeded() || !ParseInt(id)) {
      cancel();
      return FailedPrecondition("sbatch refused trace job " + std::to_string(j.id) + ": " + Excerpt(Trim(r.err), 200));
    }
    ids.push_back(id);
  }
  // Generous: requeued jobs run again after their hold.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(600 + static_cast<int>(4 * last_end));
  if (!WaitUntilAllEnded(std::set<std::string>(ids.begin(), ids.end()), deadline)) {
    cancel();
    return FailedPrecondition("the replayed jobs did not all end in time; cancelled them");
  }
  // slurmdbd records the ends a moment after slurmctld: until every job has one.
  std::vector<std::string> argv = Split(kSacctExportCommand, ' ');
  argv.insert(argv.end(), {"-j", Join(ids, ",")});
  for (int attempt = 0; attempt < 60; ++attempt) {
    const CapturedRun a = RunCaptured(argv, EnvironmentWith({{"TZ", "UTC0"}}), 30000);
    if (!a.Succeeded()) return FailedPrecondition("sacct failed: " + Excerpt(Trim(a.err), 200));
    auto jobs = ParseSacctExport(a.out, "sacct");
    if (jobs.ok() && jobs->size() == ids.size() &&
        std::all_of(jobs->begin(), jobs->end(), [](const SacctJob& s) { return s.end >= 0; })) {
      return a.out;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return FailedPrecondition("sacct did not record every replayed job's end within 30 s");
}

}  // namespace gpulaunch
