#include "launcher/job/job_launch.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <random>
#include <set>

#include "common/env.h"
#include "common/file_write.h"
#include "common/sha256.h"
#include "launcher/base/control_auth.h"
#include "launcher/base/control_server.h"
#include "launcher/base/exit_codes.h"
#include "launcher/base/host_identity.h"
#include "launcher/base/open_file_limit.h"
#include "launcher/base/process.h"
#include "launcher/base/slot_table.h"
#include "launcher/discovery/hwloc_source.h"
#include "launcher/discovery/topology_cache.h"
#include "launcher/job/job_folder.h"
#include "launcher/job/job_monitor.h"
#include "launcher/job/job_watch.h"
#include "launcher/job/kill_grace.h"
#include "launcher/job/launch_verdict.h"
#include "launcher/job/run_report.h"

namespace fs = std::filesystem;

namespace gpulaunch {
namespace {

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

// Nothing started: the user's to fix (an open-file limit too low) exits 2,
// the rest 125 (exit_codes.h).
LaunchOutcome Failed(const Status& s) {
  LaunchOutcome out;
  out.exit_code = Fail(s);
  return out;
}

// A Unix socket's path must fit sockaddr_un and the slot table's fields
// (which '|' and spaces separate); else a one-host job listens on an
// abstract Unix socket (LaunchPlannedJob).
bool UnixSocketPathFits(const fs::path& path) {
  const std::string p = path.string();
  return p.size() < 100 && p.find_first_of("| \t\n") == std::string::npos;
}

// The per-job directory (engine files): private, removed on every exit path.
struct JobDir {
  fs::path path;
  ~JobDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

// What every rank receives: the plan's rows, the job's id, where gpulaunch's
// control server and rank 0's MASTER_PORT are.
SlotTable MakeSlotTable(const LaunchPlan& plan, const std::string& advertise, const std::string& job_id,
                        const std::string& control_address) {
  SlotTable table;
  table.job_id = job_id;
  table.plan_hash = plan.plan_hash;
  table.control = control_address;
  const RankSlot& rank0 = plan.placement.ranks.front();
  const bool rank0_local = plan.all_local || IsLocalHost(rank0.host);
  table.master_addr = plan.all_local ? "127.0.0.1" : (rank0_local && !advertise.empty() ? advertise : rank0.host);
  table.master_port = rank0_local ? FreePort(plan.all_local ? "127.0.0.1" : "0.0.0.0")
                                  : 29500 + static_cast<int>(std::stoul(Sha256Hex(table.job_id).substr(0, 4), nullptr, 16) % 1000);
  table.ranks = plan.placement.ranks;
  table.world = static_cast<int>(plan.placement.ranks.size());
  table.layout = plan.layout;
  return table;
}

// The address ranks reach this host by: loopback for a one-host job, else
// the local address on the route to the first remote host.
std::string AdvertisedAddress(const LaunchPlan& plan) {
  if (plan.all_local) return "127.0.0.1";
  for (const auto& h : plan.placement.hosts)
    if (!IsLocalHost(h)) return LocalAddressTowards(h);
  return LocalAddressTowards("");
}

// The engine's command, environment and signal handling for this launch.
// The closures refer to `plan`, `engine` and `control`, which outlive RunJob.
StatusOr<JobRunOptions> EngineRun(const LaunchPlan& plan, const Engine& engine, const EngineSettings& engine_settings,
                                  const RunSettings& o, const fs::path& job_dir, const std::string& encoded_table,
                                  const std::string& job_file_limit, const std::string& secret,
                                  ControlServer& control) {
  // --profile reaches the ranks as GPULAUNCH_PROFILE=1 (runtime/step_profiler.h);
  // it is not part of the plan, so it leaves the plan hash alone.
  LaunchPlan engine_plan = plan;
  if (o.profile) engine_plan.env.push_back({"GPULAUNCH_PROFILE", std::string("1")});
  GL_ASSIGN_OR_RETURN(EngineJob engine_job, engine.PrepareJob(engine_plan, engine_settings, job_dir));
  // The secret travels as the slot table does: in the environment the engine
  // forwards (never argv), removed by each shim before its job starts.
  std::map<std::string, std::string> engine_env = {{kSlotTableEnv, encoded_table}, {kControlSecretEnv, secret}};
  // The ranks' shims put back the open-file limit gpulaunch raised (open_file_limit.h).
  if (!job_file_limit.empty()) engine_env[kJobFileLimitEnv] = job_file_limit;
  for (const EnvAssignment& e : engine_plan.env)
    if (e.value) engine_env[e.name] = *e.value;
  for (const auto& [name, value] : engine_job.env) engine_env[name] = value;  // the engine's own files win
  // Settings for the engine's own process (hwloc_source.h, and the engine's
  // own), which the shims remove again before the jobs start.
  for (auto& [name, value] : EngineOnlyEnvironment(engine_env, engine_job.engine_only_env)) {
    engine_env.emplace(name, value);
  }

  // Cut to fit Slurm's KillWait inside an allocation (kill_grace.h).
  const int kill_grace_ms = LaunchKillGraceMs(o.kill_grace_s, engine.DefaultKillGraceS());
  engine_env[kKillGraceEnv] = std::to_string(kill_grace_ms);
  JobRunOptions run;
  run.argv = engine_job.argv;
  run.env = EnvironmentWith(engine_env);
  run.tag = o.tag && !engine.LabelsOutputItself();
  run.host_of_rank = [&plan](int r) {
    return r >= 0 && r < static_cast<int>(plan.placement.ranks.size()) ? plan.placement.ranks[r].host : "?";
  };
  // Only processes gpulaunch can prove it started (a pidfd taken when they
  // checked in, process_tree.h), never a pid as a peer reported it.
  run.force_kill = [&control] { control.SignalLocalRanks(SIGKILL); };
  run.signal_local_ranks = [&control](int sig) { control.SignalLocalRanks(sig); };
  // The engine delivers stop signals its own way (engine.h); SIGKILL follows
  // a kill grace later.
  const int world = static_cast<int>(plan.placement.ranks.size());
  run.signal_all_ranks = [&engine, &control, world](int sig) { return engine.SignalAllRanks(control, world, sig); };
  run.kill_grace_ms = kill_grace_ms;
  run.timeout_ms = o.timeout_s.value_or(0) * 1000;
  return run;
}

// Raises the open-file limit that gpulaunch's control server and, inherited,
// the engine need for this job, or says why it cannot be raised far enough:
// an engine out of descriptors may hang instead of failing (open_file_limit.h).
StatusOr<FileLimitChange> MakeRoomForOpenFiles(const LaunchPlan& plan, const Engine& engine) {
  rlim_t local = 0;
  for (const auto& [host, ranks] : plan.placement.RanksByHost())
    if (IsLocalHost(host)) local += static_cast<rlim_t>(ranks);
  const rlim_t control = plan.placement.ranks.size() + kControlServerSpareFiles;
  const rlim_t engine_files = local * static_cast<rlim_t>(engine.OpenFilesPerLocalRank()) + kEngineOwnOpenFiles;
  if (engine_files <= control) {
    return RaiseOpenFileLimit(control, "the job has " + std::to_string(plan.placement.ranks.size()) +
                                           " ranks and gpulaunch holds one connection per rank: it needs");
  }
  return RaiseOpenFileLimit(engine_files, std::to_string(local) + " ranks start on this host and " + engine.Name() +
                                              " holds " + std::to_string(engine.OpenFilesPerLocalRank()) +
                                              " open files for each: it needs");
}

// No rank outlives gpulaunch, even when the engine died before its ranks
// (e.g. a crashed mpirun): give them a moment, then SIGKILL.
void KillSurvivors(ControlServer& control) {
  std::map<int, int> alive = control.LiveLocalRanks();
  for (int waited_ms = 0; !alive.empty() && waited_ms <= 3000; waited_ms += 50) {
    usleep(50 * 1000);
    alive = control.LiveLocalRanks();
  }
  for (const auto& [rank, pid] : alive) {
    std::cerr << "gpulaunch: rank " << rank << "'s process " << pid << " outlived the engine; killing it\n";
  }
  if (!alive.empty()) control.SignalLocalRanks(SIGKILL);
}

}  // namespace

LaunchOutcome LaunchPlannedJob(const LaunchPlan& plan, const Engine& engine, const EngineSettings& engine_settings,
                               const RunSettings& o) {
  // Removes what earlier launches of this user left when they were killed
  // (job_folder.h), then makes this one's.
  auto made = MakeJobFolder(fs::temp_directory_path());
  if (!made.ok()) return Failed(made.status());
  const JobDir job_dir{*made};

  const std::string advertise = AdvertisedAddress(plan);
  // Each rank's row is served by the control server when its shim asks
  // (slot_table.h): every rank's environment holds only the header.
  std::vector<std::string> rows;
  rows.reserve(plan.placement.ranks.size());
  for (const RankSlot& r : plan.placement.ranks) rows.push_back(EncodeSlotRow(r));
  // Cached topologies are confirmed before any rank gets its row.
  HostCheck check;
  if (!o.cached_fingerprints.empty()) {
    for (const RankSlot& r : plan.placement.ranks) check.host_of_rank.push_back(r.host);
    check.expected = o.cached_fingerprints;
  }
  const StatusOr<FileLimitChange> file_limit = MakeRoomForOpenFiles(plan, engine);
  if (!file_limit.ok()) return Failed(file_limit.status());
  ControlServer control;
  const std::string secret = NewControlSecretHex();
  const std::string job_id = NewJobId();
  ControlServerOptions server;
  server.job_id = job_id;
  server.secret = *DecodeControlSecret(secret);
  // One host: a Unix socket in the private job directory, which no other
  // user can reach; where its path does not fit (a long TMPDIR, one with a
  // space), one in Linux's abstract namespace, which others can see but
  // SO_PEERCRED refuses at accept, before it takes a slot. Never TCP: a
  // stranger's connections there cost a slot until they time out. Else the
  // address the ranks are told, and no other.
  if (plan.all_local) {
    server.unix_path = UnixSocketPathFits(job_dir.path / "control") ? (job_dir.path / "control").string()
                                                                     : "@gpulaunch-" + job_id + "-" + NewControlNonceHex();
  } else {
    server.bind_addr = advertise;
  }
  server.expected_hash = plan.plan_hash;
  server.world = static_cast<int>(rows.size());
  server.slot_rows = std::move(rows);
  server.check = std::move(check);
  server.keep_metrics = o.profile;
  server.slurm_job_id = GetEnv("SLURM_JOB_ID").value_or("");
  if (Status s = control.Start(std::move(server)); !s.ok()) return Failed(s);
  const SlotTable table = MakeSlotTable(plan, advertise, job_id, control.address());
  const std::string encoded = EncodeSlotTable(table, /*with_rows=*/table.control.empty());
  if (encoded.size() > kMaxSlotTableBytes) {
    return Failed(Internal("the plan for " + std::to_string(table.ranks.size()) + " ranks takes " +
                           std::to_string(encoded.size()) + " bytes, over the " + std::to_string(kMaxSlotTableBytes) +
                           "-byte environment limit (with no address the ranks reach this host by, they cannot ask for their "
                           "rows); launch fewer ranks per job"));
  }
  auto run = EngineRun(plan, engine, engine_settings, o, job_dir.path, encoded, JobFileLimitSetting(*file_limit), secret,
                       control);
  if (!run.ok()) return Failed(run.status());

  JobOutcome job;
  job.job_id = table.job_id;
  job.plan_hash = plan.plan_hash;
  job.program = plan.program;
  job.engine = engine.Name();
  job.restart = o.restart;
  for (const RankSlot& r : plan.placement.ranks) job.planned_hosts.push_back(r.host);
  JobWatch watch(plan, o, control, job, run->kill_grace_ms);
  run->watchdog = [&watch] { return watch.Poll(); };
  run->job_over = [&watch] { return watch.Over(); };
  // At the first stop signal (scancel, Slurm's time limit, a user's kill),
  // the summary is written at once, naming the cause; the full one replaces
  // it at the end if there is time (under Slurm, KillWait).
  run->on_first_stop = [&](int sig) {
    if (o.summary_path.empty()) return;
    JobOutcome early = job;
    early.provisional = true;
    early.stop = StopReason::kUserSignal;
    early.user_signal = sig;
    early.exit_code = 128 + sig;
    early.ended = ControlClock::now();
    RootCause cause;
    cause.headline = StoppedBySignalHeadline(sig);
    cause.notes.push_back("the ranks were told to stop too; this summary was written when the signal came, and "
                          "gpulaunch replaces it once every rank has ended (\"provisional\" is then gone)");
    (void)WriteFileAtomically(o.summary_path, SummaryJson(early, control.Records(), cause), kPrivateFileMode);
  };
  job.started = ControlClock::now();
  job.started_wall = std::chrono::system_clock::now();
  const JobRunResult result = RunJob(*run);

  KillSurvivors(control);
  if (std::set<std::string> changed = control.ChangedHosts(); !changed.empty()) {
    LaunchOutcome out;  // no rank got its row, so none ran: nothing to report
    out.exit_code = kExitLaunchFailure;
    out.changed_hosts = std::move(changed);
    return out;
  }
  job.held = control.HeldRanks();
  const std::set<int> mismatched = control.HashMismatches();
  const int checked_in = control.CheckedIn();
  job.rejected_connections = control.RejectedConnections();
  job.rejected_from = control.RejectedFrom();
  control.Stop();
  const std::map<int, RankRecord> records = control.Records();
  job.ended = ControlClock::now();
  if (o.profile) watch.WriteProfile(true);
  if (!mismatched.empty()) {
    std::cerr << "gpulaunch: warning: " << mismatched.size() << " rank(s) reported a different plan hash\n";
  }
  LaunchOutcome out = StopOutcome(result, watch.verdict(), checked_in, o, job);
  // An engine that read this host's topology from gpulaunch's cache and
  // failed before any rank started may have failed on that entry: it is
  // dropped, so that the next launch discovers the host afresh.
  if (out.exit_code == kExitLaunchFailure && checked_in == 0 && engine_settings.local_topology_xml) {
    if (const auto entry = LocalTopologyCacheEntry(); entry && DropCachedTopology(*entry)) {
      std::cerr << "gpulaunch: " << engine.Name() << " was given this host's topology from gpulaunch's cache ("
                << *entry << "); that entry is dropped, and the next launch discovers the host afresh\n";
    }
  }
  if (result.engine_killed_after_job && out.stop == StopReason::kNone &&
      EveryRankSucceeded(records, plan.placement.ranks.size())) {
    // The engine hung after its job (JobWatch::Over): the ranks' codes are the job's.
    std::cerr << "gpulaunch: warning: every rank ended with code 0, but " << engine.Name()
              << " did not exit; gpulaunch stopped it (Open MPI 4.1's mpirun can hang once its job is over)\n";
    out.exit_code = job.exit_code = 0;
  }
  // An engine's 0 is not the job's when ranks it started failed, were
  // stopped while they ran, or vanished: Open MPI 4.1's mpirun, for one, can
  // take a job for over while ranks still run (rank_supervisor.h), stop them
  // and exit 0.
  if (out.exit_code == 0 && out.stop == StopReason::kNone && !RanksCutShort(records).empty()) {
    job.engine_exited_zero = true;
    out.exit_code = job.exit_code = kExitLaunchFailure;
  }
  // N singletons that all exit 0 ran N copies of the job, not the job.
  if (out.exit_code == 0 && EveryRankAnMpiSingleton(job, records)) out.exit_code = job.exit_code = kExitLaunchFailure;
  Blame(records, checked_in, job, out);
  std::cerr << HelpersNote(records) << RejectedConnectionsNote(job);
  Report(o, job, records, out);
  return out;
}

}  // namespace gpulaunch
