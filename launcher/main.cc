// gpulaunch: parse, discover, place, plan, launch through mpirun, report.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>

#include "common/sha256.h"
#include "common/strings.h"
#include "launcher/control_server.h"
#include "launcher/exit_codes.h"
#include "launcher/health_check.h"
#include "launcher/host_identity.h"
#include "launcher/host_resolution.h"
#include "launcher/slurm_job.h"
#include "launcher/options.h"
#include "launcher/plan.h"
#include "launcher/plan_command.h"
#include "launcher/submit_command.h"
#include "launcher/process.h"
#include "launcher/slot_table.h"
#include "policies/placement_engine.h"
#include "policies/slot_placement.h"

namespace fs = std::filesystem;
using namespace gpulaunch;

namespace {

int Fail(const Status& s) {
  std::cerr << "gpulaunch: " << s.message() << "\n";
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kInfeasible:
    case StatusCode::kFailedPrecondition:
      return kExitUsage;
    default:
      return kExitLaunchFailure;
  }
}

bool EnvIs(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::string(v) == value;
}

// The program must exist here (mpirun runs the same path on every host).
Status CheckProgram(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    if (access(program.c_str(), F_OK) != 0) return NotFound("program '" + program + "' does not exist");
    if (access(program.c_str(), X_OK) != 0 || fs::is_directory(program)) {
      return NotFound("program '" + program + "' is not executable (chmod +x it?)");
    }
    return Status::Ok();
  }
  const char* path = std::getenv("PATH");
  for (const std::string& dir : Split(path ? path : "", ':')) {
    const std::string cand = (dir.empty() ? "." : dir) + "/" + program;
    if (access(cand.c_str(), X_OK) == 0 && !fs::is_directory(cand)) return Status::Ok();
  }
  return NotFound("program '" + program + "' not found in PATH; give its path, e.g. ./" + program);
}

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

// Under srun, seconds from the stop signal scancel delivers to SIGKILL.
constexpr int kDefaultKillGraceS = 10;

fs::path SelfDir() { return fs::read_symlink("/proc/self/exe").parent_path(); }

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "plan") return RunPlanCommand({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "slurm-config") return RunSlurmConfigCommand({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "submit") return RunSubmitCommand({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "check") return RunCheckCommand({args.begin() + 1, args.end()});
  auto cl = ParseCommandLine(args);
  if (!cl.ok()) return Fail(cl.status());
  if (cl->action == CommandAction::kHelp) {
    std::cout << HelpText();
    return kExitOk;
  }
  if (cl->action == CommandAction::kVersion) {
    std::cout << VersionText();
    return kExitOk;
  }
  LaunchOptions& o = cl->options;
  const bool root_allowed =
      o.allow_run_as_root || (EnvIs("OMPI_ALLOW_RUN_AS_ROOT", "1") && EnvIs("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"));
  // The engine: srun inside a Slurm allocation (one job step), else mpirun.
  const bool in_allocation = std::getenv("SLURM_JOB_ID") != nullptr;
  if (o.launcher == "srun" && !in_allocation && !o.dry_run) {
    return Fail(FailedPrecondition("--launcher srun runs a job step inside a Slurm allocation, and this is not one; "
                                   "run gpulaunch inside salloc or sbatch, or use --launcher mpirun"));
  }
  const bool use_srun = o.launcher == "srun" || (o.launcher == "auto" && in_allocation);
  if (geteuid() == 0 && !root_allowed && !o.dry_run && !use_srun) {
    return Fail(FailedPrecondition("refusing to run as root, as mpirun does; add --allow-run-as-root (or export "
                                   "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1) if you mean it"));
  }
  if (!o.dry_run) {
    if (Status s = CheckProgram(o.program[0]); !s.ok()) return Fail(s);
  }
  for (auto it = o.env.begin(); it != o.env.end();) {
    if (!it->value && !std::getenv(it->name.c_str())) {
      std::cerr << "gpulaunch: warning: -x " << it->name << ": not set here, so not exported\n";
      it = o.env.erase(it);
    } else {
      ++it;
    }
  }
  const fs::path bin = SelfDir();
  const ResolveSettings resolve{(bin / "gpulaunch-probe").string(), root_allowed, use_srun};
  auto resolved = ResolveHosts(o, resolve);
  if (!resolved.ok()) return Fail(resolved.status());
  // The placement engine decides (the same as `gpulaunch plan`); only what it
  // cannot bind (more ranks than GPUs or cores: --oversubscribe, or slots
  // granted beyond the hardware) goes to the even, unbound slot filler.
  ClusterTopology cluster;
  int slots = 0;
  for (const HostResources& h : resolved->hosts) {
    cluster.hosts.push_back(ClusterHost{h.name, h.topology, true, h.gpu_busy, h.slots});
    slots += EffectiveSlots(h);
  }
  if (auto tree = SlurmNetworkTree()) cluster.network = std::move(*tree);
  JobRequest request = SlotJob(o.ranks > 0 ? o.ranks : slots, o.oversubscribe);
  auto layout = ParseLayout(o.layout, request.ranks);
  if (!layout.ok()) return Fail(layout.status());
  request.layout = *layout;
  auto placement = Place(request, cluster);
  if (!placement.ok() && placement.status().code() == StatusCode::kInfeasible) {
    placement = PlaceBySlot(SlotJob(o.ranks, o.oversubscribe), resolved->hosts);
  }
  if (!placement.ok() && in_allocation && placement.status().code() == StatusCode::kInfeasible) {
    return Fail(Infeasible(placement.status().message() + "; inside Slurm allocation " +
                           std::getenv("SLURM_JOB_ID") + " the slots are its tasks: ask sbatch/salloc for more "
                           "(-n, --ntasks-per-node) or launch fewer ranks"));
  }
  if (!placement.ok()) return Fail(placement.status());
  const LaunchPlan plan = MakeLaunchPlan(std::move(placement).value(), o, resolved->all_local);

  EngineSettings engine;
  engine.shim = (bin / "gpulaunch-shim").string();
  engine.tag = o.tag;
  engine.allow_run_as_root = root_allowed;
  engine.loopback_only = plan.all_local;
  engine.kill_grace_s = o.kill_grace_s;
  if (o.dry_run) {
    engine.rankfile = "{job_dir}/rankfile";
    std::cout << RenderPlanTable(plan);
    if (use_srun) {
      std::cout << "hostfile:\n" << RenderSlurmHostfile(plan.placement) << "command:\n  SLURM_HOSTFILE={job_dir}/hostfile";
    } else {
      std::cout << "rankfile:\n" << RenderRankfile(plan.placement) << "command:\n ";
    }
    for (const std::string& a : use_srun ? BuildSrunArgv(plan, engine) : BuildMpirunArgv(plan, engine)) {
      std::cout << " " << ShellQuote(a);
    }
    std::cout << "\n";
    return kExitOk;
  }

  // Per-job state lives in a private directory removed on every exit path.
  std::string dir_template = (fs::temp_directory_path() / "gpulaunch.XXXXXX").string();
  if (!mkdtemp(dir_template.data())) return Fail(Internal("cannot create a job directory under /tmp"));
  const fs::path job_dir = dir_template;
  struct DirGuard {
    fs::path p;
    ~DirGuard() { std::error_code ec; fs::remove_all(p, ec); }
  } guard{job_dir};
  engine.rankfile = (job_dir / "rankfile").string();
  const std::string slurm_hostfile = (job_dir / "hostfile").string();
  if (use_srun) {
    std::ofstream(slurm_hostfile) << RenderSlurmHostfile(plan.placement);
  } else {
    std::ofstream(engine.rankfile) << RenderRankfile(plan.placement);
  }

  const std::string first_remote = plan.all_local ? "" : [&] {
    for (const auto& h : plan.placement.hosts)
      if (!IsLocalHost(h)) return h;
    return std::string();
  }();
  const std::string advertise = plan.all_local ? "127.0.0.1" : LocalAddressTowards(first_remote);
  ControlServer control;
  if (Status s = control.Start(plan.all_local ? "127.0.0.1" : "0.0.0.0", plan.plan_hash); !s.ok()) return Fail(s);

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
  table.layout = request.layout.ToString();
  const std::string encoded = EncodeSlotTable(table);
  if (encoded.size() > kMaxSlotTableBytes) {
    return Fail(Internal("the plan for " + std::to_string(table.ranks.size()) + " ranks takes " +
                         std::to_string(encoded.size()) + " bytes, over the " + std::to_string(kMaxSlotTableBytes) +
                         "-byte environment limit; launch fewer ranks per job"));
  }
  std::map<std::string, std::string> engine_env = {{kSlotTableEnv, encoded}};
  for (const EnvAssignment& e : plan.env)
    if (e.value) engine_env[e.name] = *e.value;

  if (use_srun) engine_env["SLURM_HOSTFILE"] = slurm_hostfile;

  JobRunOptions run;
  run.argv = use_srun ? BuildSrunArgv(plan, engine) : BuildMpirunArgv(plan, engine);
  run.env = EnvironmentWith(engine_env);
  run.tag = o.tag && !use_srun;  // srun labels lines itself (--label)
  run.host_of_rank = [&](int r) {
    return r >= 0 && r < static_cast<int>(plan.placement.ranks.size()) ? plan.placement.ranks[r].host : "?";
  };
  run.force_kill = [&] {
    for (int pid : control.LocalPids()) kill(pid, SIGKILL);
  };
  run.signal_local_ranks = [&](int sig) {
    for (int pid : control.LocalPids()) kill(pid, sig);
  };
  if (use_srun) {
    // srun would end the step with SIGKILL on SIGTERM or SIGHUP; scancel
    // delivers the signal itself to every task of the step the ranks reported.
    run.signal_all_ranks = [&](int sig) { return SignalSlurmSteps(control.SlurmSteps(), sig); };
    run.kill_grace_ms = o.kill_grace_s.value_or(kDefaultKillGraceS) * 1000;
  } else {
    run.kill_grace_ms = o.kill_grace_s.value_or(1) * 1000;  // Open MPI's odls_base_sigkill_timeout default
  }
  run.timeout_ms = o.timeout_s.value_or(0) * 1000;
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
  control.Stop();
  const int checked_in = control.CheckedIn();
  int code = JobExitCode(result.wait_status, checked_in > 0);
  if (!control.HashMismatches().empty()) {
    std::cerr << "gpulaunch: warning: " << control.HashMismatches().size() << " rank(s) reported a different plan hash\n";
  }
  if (code == kExitLaunchFailure && checked_in == 0 && !result.user_signal) {
    std::cerr << "gpulaunch: mpirun failed before any rank started (see its messages above); exit " << code << "\n";
  }
  if (result.timed_out) {
    std::cerr << "gpulaunch: the job ran past --timeout " << *o.timeout_s << " s and was stopped; exit "
              << kExitTimeout << "\n";
    return kExitTimeout;
  }
  if (result.user_signal && code != 0) code = 128 + result.user_signal;
  return code;
}
