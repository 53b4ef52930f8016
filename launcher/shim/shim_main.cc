// gpulaunch-shim: every rank starts through it (`mpirun ... gpulaunch-shim --
// PROGRAM ARGS`), and so do the engine's daemons on other hosts
// (`gpulaunch-shim --raise-open-files N orted ...`, open_file_limit.h). For a
// rank it applies the rank's slot (the header from
// GPULAUNCH_SLOT_TABLE, its own row asked from gpulaunch), refuses
// to start when the engine's placement differs from the plan, checks in with
// gpulaunch, and runs PROGRAM as its child until it ends (rank_supervisor.h),
// reporting how it ended; then it exits the same way.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "common/env.h"
#include "common/strings.h"
#include "launcher/base/control_auth.h"
#include "launcher/base/exit_codes.h"
#include "launcher/base/host_fingerprint.h"
#include "launcher/base/host_names.h"
#include "launcher/base/open_file_limit.h"
#include "launcher/base/child_environment.h"
#include "launcher/shim/apply_slot.h"
#include "launcher/shim/control_client.h"
#include "launcher/shim/descendants.h"
#include "launcher/shim/getent_lookup.h"
#include "launcher/shim/hydra_launch_agent.h"
#include "launcher/shim/inherited_fd_entries.h"
#include "launcher/base/rank_cgroup.h"
#include "launcher/shim/rank_supervisor.h"

using namespace gpulaunch;

namespace {

// Says why on stderr and, when gpulaunch can be reached, on the control
// connection, so that gpulaunch names the cause instead of waiting.
int Refuse(ControlClient& control, int rank, const std::string& host, const std::string& why) {
  std::fprintf(stderr, "gpulaunch-shim: rank %d refuses to start: %s\n", rank, why.c_str());
  if (control.connected() && rank >= 0) {
    ControlMessage m;
    m.kind = ControlMessage::Kind::kRefuse;
    m.rank = rank;
    m.host = host;
    m.text = why;
    control.Send(m);
  }
  return kExitLaunchFailure;
}

constexpr int kHandshakeAttempts = 5;

// A loaded launching host may be slow to accept thousands of connections.
bool ConnectWithRetries(ControlClient& control, const std::string& address) {
  for (int attempt = 0; attempt < 5 && !address.empty(); ++attempt) {
    if (control.Connect(address)) return true;
    usleep(200 * 1000 * (attempt + 1));
  }
  return false;
}

// How long a rank waits for its row: the control server answers once every
// host whose topology was cached is confirmed, so this bounds a launching
// host that stopped, or a host whose first rank never asked.
constexpr int kSlotFetchTimeoutMs = 60000;

// The rank's row: asked from gpulaunch (the usual case: the environment holds
// only the header), or from the inline table. The engine's local rank 0 adds
// its host's fingerprint, so that gpulaunch can confirm a cached topology
// once per host (host_fingerprint.h); nullopt when gpulaunch answered that a
// host changed since the plan was made.
StatusOr<std::optional<RankSlot>> RowOf(ControlClient& control, const SlotTable& table, const EngineIdentity& id) {
  if (!table.ranks.empty()) {
    RankSlot slot = table.ranks[id.rank];
    slot.rank = id.rank;
    return std::optional<RankSlot>(std::move(slot));
  }
  const std::string fingerprint = id.local_rank.value_or(0) == 0 ? HostFingerprint() : "";
  GL_ASSIGN_OR_RETURN(std::string row, control.FetchSlotRow(id.rank, table.plan_hash, kSlotFetchTimeoutMs, fingerprint));
  if (row == kHostChangedRow) return std::optional<RankSlot>();
  GL_ASSIGN_OR_RETURN(RankSlot slot, DecodeSlotRow(row, id.rank));
  return std::optional<RankSlot>(std::move(slot));
}

// Applies the slot: binding, the environment contract, the rank's GPUs.
Status Apply(const SlotTable& table, const RankSlot& slot) {
  GL_RETURN_IF_ERROR(ApplyBinding(slot));
  GL_ASSIGN_OR_RETURN(std::string cuda_devices, CudaVisibleDevices(slot.gpus, ProcessEnv()));
  for (const auto& [k, v] : RankEnvironment(table, slot)) setenv(k.c_str(), v.c_str(), 1);
  if (!slot.gpus.empty()) setenv("CUDA_VISIBLE_DEVICES", cuda_devices.c_str(), 1);
  return Status::Ok();
}

// The check-in line, which the job process sends just before it execs
// (rank_supervisor.h); nothing to send without a control connection.
CheckInLine CheckIn(ControlClient& control, const SlotTable& table, const EngineIdentity& id,
                    const std::string& hostname, bool in_cgroup) {
  ControlMessage m;
  m.kind = ControlMessage::Kind::kCheckin;
  m.rank = id.rank;
  m.world = id.world_size.value_or(table.world);
  m.host = hostname;
  m.plan_hash = table.plan_hash;
  const std::optional<std::string> slurm_job = GetEnv("SLURM_JOB_ID");
  const std::optional<std::string> slurm_step = GetEnv("SLURM_STEP_ID");
  if (slurm_job && slurm_step) m.slurm_step = *slurm_job + "." + *slurm_step;
  m.in_cgroup = in_cgroup;
  CheckinLineParts parts = CheckinLineAround(m);
  parts.after_pid.pop_back();  // the newline: the job process puts the tag before it
  return {control.connected() ? control.fd() : -1, &control.session(), std::move(parts.before_pid),
          std::move(parts.after_pid)};
}

// An engine daemon on another host: its open-file limit raised, then the
// daemon itself in this process. Its stderr reaches the user through the engine.
int StartEngineDaemon(int argc, char** argv) {
  const std::optional<int64_t> need = argc > 3 ? ParseInt(argv[2]) : std::nullopt;
  if (!need || *need <= 0) {
    std::fprintf(stderr, "usage: gpulaunch-shim %s OPEN_FILES DAEMON [ARGS...] (started by gpulaunch's engine)\n",
                 kRaiseOpenFilesFlag);
    return kExitUsage;
  }
  const std::string daemon = argv[3];
  const auto raised = RaiseOpenFileLimit(static_cast<rlim_t>(*need),
                                         "on " + LocalHostname() + ", " + daemon + " starts this job's ranks and needs");
  if (!raised.ok()) {
    std::fprintf(stderr, "gpulaunch-shim: %s\n", raised.status().message().c_str());
    return kExitLaunchFailure;
  }
  const std::string setting = JobFileLimitSetting(*raised);
  if (!setting.empty()) setenv(kJobFileLimitEnv, setting.c_str(), 1);
  execvp(argv[3], argv + 3);
  const int exec_errno = errno;
  std::fprintf(stderr, "gpulaunch-shim: cannot run %s on %s: %s\n", argv[3], LocalHostname().c_str(),
               std::strerror(exec_errno));
  return exec_errno == ENOENT ? kExitNotFound : kExitCannotExecute;
}

}  // namespace

int main(int argc, char** argv) {
  // Hydra's ssh, under the shim's second name (hydra_launch_agent.h).
  const char* base = std::strrchr(argv[0], '/');
  if (std::strcmp(base ? base + 1 : argv[0], kHydraSshAgentName) == 0) return RunHydraSshAgent(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], kHydraProxyFlag) == 0) return RunHydraProxyWithEnvironment(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], kRaiseOpenFilesFlag) == 0) return StartEngineDaemon(argc, argv);
  int first = 1;
  if (first < argc && std::strcmp(argv[first], "--") == 0) ++first;
  if (first >= argc) {
    std::fprintf(stderr, "usage: gpulaunch-shim [--] PROGRAM [ARGS...] (started by gpulaunch, not by hand)\n");
    return kExitUsage;
  }
  DropEngineOnlyEnvironment();  // before anything starts a process: the job and getent see the user's environment
  // Everything the rank starts stays in this process's tree, whatever it
  // does to escape (descendants.h), and in a cgroup of its own where one can
  // be made, which outlives a SIGKILL of this process (rank_cgroup.h): the
  // cgroup first, its watcher must not be our child.
  // GPULAUNCH_TEST_NO_SUBREAPER=1 leaves both out: only the tests that prove
  // they matter set it.
  bool in_cgroup = false;
  if (!EnvIs("GPULAUNCH_TEST_NO_SUBREAPER", "1")) {
    in_cgroup = ContainInOwnCgroup().contained;
    BecomeSubreaper();
  }
  unsetenv("GPULAUNCH_TEST_NO_SUBREAPER");
  RestoreJobFileLimit();        // and the open-file limit the user had
  DropDaemonLaunchAgent();
  ControlClient control;
  const std::string hostname = LocalHostname();
  const std::optional<std::string> table_text = GetEnv(kSlotTableEnv);
  if (!table_text) return Refuse(control, -1, hostname, std::string(kSlotTableEnv) + " is not set; start jobs with gpulaunch");
  auto table = DecodeSlotTable(*table_text);
  if (!table.ok()) return Refuse(control, -1, hostname, table.status().message());
  // The job's secret proves this rank to gpulaunch and gpulaunch to it; the
  // job itself never sees it (nor does getent).
  const std::optional<std::string> secret_text = GetEnv(kControlSecretEnv);
  unsetenv(kControlSecretEnv);
  StatusOr<ControlKey> secret = DecodeControlSecret(secret_text.value_or(""));
  if (!table->control.empty() && !secret.ok()) return Refuse(control, -1, hostname, secret.status().message());
  if (!ConnectWithRetries(control, table->control) && !table->control.empty()) {
    if (table->ranks.empty()) {
      return Refuse(control, -1, hostname, "could not reach gpulaunch at " + table->control +
                                               " to get this rank's slot; check that this host can open TCP "
                                               "connections to the launching host");
    }
    std::fprintf(stderr, "gpulaunch-shim: could not reach gpulaunch at %s; the rank runs without reporting\n",
                 table->control.c_str());
  }
  auto id = ReadEngineIdentity(ProcessEnv());
  unsetenv(kEngineIdentityEnv);
  if (!id.ok()) return Refuse(control, -1, hostname, id.status().message());
  // A rank the plan has proves itself; one it lacks (N singletons, say) is
  // refused by CheckWorld, on the connection when it could authenticate.
  Status authenticated = Status::Ok();
  if (control.fd() >= 0 && id->rank >= 0 && id->rank < table->world) {
    // A connection gpulaunch closed before the handshake ended (strangers
    // flooding its listener: it closes the oldest unproven connection first,
    // control_server.h) is made again, a few times.
    for (int attempt = 1;; ++attempt) {
      authenticated = control.Authenticate({table->job_id, id->rank, *secret});
      if (authenticated.ok() || authenticated.code() != StatusCode::kUnavailable || attempt == kHandshakeAttempts) break;
      control.Close();
      usleep(100 * 1000 * attempt);
      if (!ConnectWithRetries(control, table->control)) break;
    }
  }
  if (Status s = CheckWorld(*table, *id); !s.ok()) return Refuse(control, id->rank, hostname, s.message());
  if (!authenticated.ok()) return Refuse(control, id->rank, hostname, authenticated.message());
  auto row = RowOf(control, *table, *id);
  if (!row.ok()) return Refuse(control, id->rank, hostname, row.status().message());
  // A host changed since the plan, and no rank anywhere got its row: exit 0
  // without starting, so that the engine ends this attempt without a failure
  // report of its own; gpulaunch, which said so, explains once and launches
  // again (launcher/discovery/remote_topology_cache.h).
  if (!row->has_value()) return kExitOk;
  const RankSlot& slot = **row;
  const auto is_this_host = [](const std::string& name) {
    return IsThisHost(name, [](const std::string& n) { return AddressesByGetent(n); });
  };
  if (Status s = CheckSlot(slot, *id, is_this_host, hostname); !s.ok()) {
    return Refuse(control, id->rank, hostname, s.message());
  }
  if (Status s = Apply(*table, slot); !s.ok()) return Refuse(control, id->rank, hostname, s.message());
  unsetenv(kSlotTableEnv);  // the job has no use for it

  SuperviseOptions options;
  options.rank = id->rank;
  if (const auto grace = ParseInt(GetEnv(kKillGraceEnv).value_or("")); grace && *grace >= 0 && *grace <= 86400000) {
    options.kill_grace = std::chrono::milliseconds(*grace);
  }
  unsetenv(kKillGraceEnv);
  options.control = &control;
  // Under srun (no Open MPI daemon above us) slurmstepd signals every
  // process of the step, the job included; Open MPI signals only the shim's
  // process group (rank_supervisor.h).
  options.forward_signals = !(HasEnv("SLURM_STEP_ID") && !HasEnv("OMPI_COMM_WORLD_SIZE"));
  options.check_in = CheckIn(control, *table, *id, hostname, in_cgroup);
  // Open MPI's daemons must not see a rank end before every rank started.
  options.wait_for_every_start = id->open_mpi;
  // The engine's /proc entries left on this process, dropped while the rank
  // runs rather than all at once when the job is torn down
  // (inherited_fd_entries.h); parent: the engine's daemon that forked us.
  const pid_t engine_daemon = getppid();
  options.once_settled = [engine_daemon] { ForgetInheritedFdEntries(engine_daemon); };
  ExitLike(SuperviseRank(argv + first, options));
}
