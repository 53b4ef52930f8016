#include "launcher/job/job_launch.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <random>

#include "common/file_write.h"
#include "common/sha256.h"
#include "launcher/base/control_server.h"
#include "launcher/base/exit_codes.h"
#include "launcher/base/host_identity.h"
#include "launcher/job/job_monitor.h"
#include "launcher/base/process.h"
#include "launcher/job/run_report.h"
#include "launcher/base/slot_table.h"

namespace fs = std::filesystem;

namespace gpulaunch {
namespace {

// How long the shims of stalled ranks get to send their stacks.
constexpr int kStackWaitMs = 20000;
// With --profile, how often the metrics files are refreshed while the job runs.
constexpr auto kProfileRefresh = std::chrono::seconds(10);

std::string NewJobId() {
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", rd());
  return std::string("gl-") + buf;
}

int FreePort(const char* addr_text) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(std::string(addr_text) == "127.0.0.1" ? INADDR_LOOPBACK : INADDR_ANY);
  socklen_t len = sizeof addr;
  int port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) close(fd);
  return port;
}

LaunchOutcome Failed(const Status& s) {
  std::cerr << "gpulaunch: " << s.message() << "\n";
  LaunchOutcome out;
  out.exit_code = kExitLaunchFailure;
  return out;
}


}  // namespace

LaunchOutcome LaunchPlannedJob(const LaunchPlan& plan, const Engine& engine, const EngineSettings& engine_settings,
                               const RunSettings& o) {
  // Per-job state lives in a private directory removed on every exit path.
  std::string dir_template = (fs::temp_directory_path() / "gpulaunch.XXXXXX").string();
  if (!mkdtemp(dir_template.data())) return Failed(Internal("cannot create a job directory under /tmp"));
  const fs::path job_dir = dir_template;
  struct DirGuard {
    fs::path p;
    ~DirGuard() { std::error_code ec; fs::remove_all(p, ec); }
  } guard{job_dir};

  const std::string first_remote = plan.all_local ? "" : [&] {
    for (const auto& h : plan.placement.hosts)
      if (!IsLocalHost(h)) return h;
    return std::string();
  }();
  const std::string advertise = plan.all_local ? "127.0.0.1" : LocalAddressTowards(first_remote);
  ControlServer control;
  if (Status s = control.Start(plan.all_local ? "127.0.0.1" : "0.0.0.0", plan.plan_hash); !s.ok()) return Failed(s);

  SlotTable table;
  table.job_id = NewJobId();
  table.plan_hash = plan.plan_hash;
  table.control = advertise.empty() ? "" : advertise + ":" + std::to_string(control.port());
  const RankSlot& rank0 = plan.placement.ranks.front();
  const bool rank0_local = plan.all_local || IsLocalHost(rank0.host);
  table.master_addr = plan.all_local ? "127.0.0.1" : (rank0_local && !advertise.empty() ? advertise : rank0.host);
  table.master_port = rank0_local ? FreePort(plan.all_local ? "127.0.0.1" : "0.0.0.0")
                                  : 29500 + static_cast<int>(std::stoul(Sha256Hex(table.job_id).substr(0, 4), nullptr, 16) % 1000);
  table.ranks = plan.placement.ranks;
  table.layout = plan.layout;
  const std::string encoded = EncodeSlotTable(table);
  if (encoded.size() > kMaxSlotTableBytes) {
    return Failed(Internal("the plan for " + std::to_string(table.ranks.size()) + " ranks takes " +
                           std::to_string(encoded.size()) + " bytes, over the " + std::to_string(kMaxSlotTableBytes) +
                           "-byte environment limit; launch fewer ranks per job"));
  }
  // --profile reaches the ranks as GPULAUNCH_PROFILE=1 (runtime/step_profiler.h);
  // it is not part of the plan, so it leaves the plan hash alone.
  LaunchPlan engine_plan = plan;
  if (o.profile) engine_plan.env.push_back({"GPULAUNCH_PROFILE", std::string("1")});
  auto engine_job = engine.PrepareJob(engine_plan, engine_settings, job_dir);
  if (!engine_job.ok()) return Failed(engine_job.status());
  std::map<std::string, std::string> engine_env = {{kSlotTableEnv, encoded}};
  for (const EnvAssignment& e : engine_plan.env)
    if (e.value) engine_env[e.name] = *e.value;
  for (const auto& [name, value] : engine_job->env) engine_env[name] = value;  // the engine's own files win

  JobRunOptions run;
  run.argv = engine_job->argv;
  run.env = EnvironmentWith(engine_env);
  run.tag = o.tag && !engine.LabelsOutputItself();
  run.host_of_rank = [&](int r) {
    return r >= 0 && r < static_cast<int>(plan.placement.ranks.size()) ? plan.placement.ranks[r].host : "?";
  };
  run.force_kill = [&] {
    for (int pid : control.LocalPids()) kill(pid, SIGKILL);
  };
  run.signal_local_ranks = [&](int sig) {
    for (int pid : control.LocalPids()) kill(pid, sig);
  };
  const int world = static_cast<int>(plan.placement.ranks.size());
  // The engine delivers stop signals its own way (engine.h); SIGKILL follows
  // a kill grace later.
  run.signal_all_ranks = [&](int sig) { return engine.SignalAllRanks(control, world, sig); };
  run.kill_grace_ms = o.kill_grace_s.value_or(engine.DefaultKillGraceS()) * 1000;
  run.timeout_ms = o.timeout_s.value_or(0) * 1000;

  JobOutcome job;
  job.job_id = table.job_id;
  job.plan_hash = plan.plan_hash;
  job.program = plan.program;
  job.restart = o.restart;
  for (const RankSlot& r : plan.placement.ranks) job.planned_hosts.push_back(r.host);
  const MonitorSettings monitor{world, o.startup_timeout_s, o.stall_timeout_s};
  MonitorVerdict verdict;
  // After the first failed rank: SIGTERM to every rank at once through the
  // shims, SIGKILL a kill grace later, whatever the engine does meanwhile.
  std::optional<ControlClock::time_point> teardown_since;
  bool teardown_killed = false;
  RunProfile profile;
  profile.job_id = table.job_id;
  profile.layout = plan.layout;
  profile.host_of_rank = job.planned_hosts;
  auto write_profile = [&](bool final) {
    profile.steps = control.Metrics();
    const RunReport report = AnalyzeRun(profile);
    if (Status s = WriteProfileFiles(o.profile_dir, profile, report); !s.ok()) {
      if (final) std::cerr << "gpulaunch: warning: " << s.message() << "\n";
    }
    if (final) {
      std::cerr << RenderRunReport(report);
      std::cerr << "gpulaunch: metrics in " << fs::absolute(o.profile_dir).string()
                << " (rank-<R>.jsonl, metrics.prom, run-report.json)\n";
      if (const int bad = control.MalformedMetrics(); bad > 0) {
        std::cerr << "gpulaunch: warning: " << bad << " metrics record(s) from ranks did not parse and were left out\n";
      }
    }
  };
  auto profile_written = ControlClock::now();
  run.watchdog = [&] {
    const auto now = ControlClock::now();
    if (o.profile && now - profile_written >= kProfileRefresh) {
      write_profile(false);
      profile_written = now;
    }
    verdict = WatchJob(monitor, control.Records(), job.started, now);
    if (verdict.failed_rank >= 0 && !teardown_since) {
      teardown_since = now;
      control.SignalAllRanks(SIGTERM, world);
    } else if (teardown_since && !teardown_killed && now - *teardown_since >= std::chrono::milliseconds(run.kill_grace_ms)) {
      teardown_killed = true;
      control.SignalAllRanks(SIGKILL, world);
    }
    if (verdict.stop == StopReason::kStall) control.CollectStacks(verdict.stalled, kStackWaitMs);
    return verdict.stop != StopReason::kNone;
  };
  run.job_over = [&] {
    if (!teardown_since) return false;
    const auto records = control.Records();
    if (records.size() < plan.placement.ranks.size()) return false;
    for (const auto& [rank, r] : records)
      if (!r.ended && !r.lost && r.refusal.empty()) return false;
    return true;
  };
  job.started = ControlClock::now();
  job.started_wall = std::chrono::system_clock::now();
  const JobRunResult result = RunJob(run);

  // No rank outlives gpulaunch, even when the engine died before its ranks
  // (e.g. a crashed mpirun): give them a moment, then SIGKILL.
  std::set<int> alive = control.LocalPids();
  for (int waited_ms = 0; !alive.empty() && waited_ms <= 3000; waited_ms += 50) {
    std::erase_if(alive, [](int pid) { return kill(pid, 0) != 0; });
    if (!alive.empty()) usleep(50 * 1000);
  }
  for (int pid : alive) {
    std::cerr << "gpulaunch: rank process " << pid << " outlived the engine; killing it\n";
    kill(pid, SIGKILL);
  }
  const std::set<int> mismatched = control.HashMismatches();
  const int checked_in = control.CheckedIn();
  control.Stop();
  const std::map<int, RankRecord> records = control.Records();
  job.ended = ControlClock::now();
  if (o.profile) write_profile(true);

  LaunchOutcome out;
  out.exit_code = JobExitCode(result.wait_status, checked_in > 0);
  if (!mismatched.empty()) {
    std::cerr << "gpulaunch: warning: " << mismatched.size() << " rank(s) reported a different plan hash\n";
  }
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
    std::cerr << "gpulaunch: the engine failed before any rank started (see its messages above); exit "
              << out.exit_code << "\n";
  }
  job.stop = out.stop;
  job.exit_code = out.exit_code;
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
  if (out.cause && out.cause->rank >= 0) out.failed_hosts.insert(job.planned_hosts[out.cause->rank]);
  out.restartable = out.exit_code != 0 && checked_in > 0 && !refused &&
                    (out.stop == StopReason::kNone || out.stop == StopReason::kStall);

  const std::string summary = o.summary_path;
  if (!summary.empty()) {
    if (Status s = WriteFileAtomically(summary, SummaryJson(job, records, out.cause)); !s.ok()) {
      std::cerr << "gpulaunch: warning: " << s.message() << "\n";
    }
  }
  if (out.cause) std::cerr << RenderRootCause(*out.cause, summary.empty() ? "" : fs::absolute(summary).string());
  return out;
}

}  // namespace gpulaunch
