#include "launcher/engine/hydra_engine.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "common/env.h"
#include "common/strings.h"
#include "launcher/base/control_server.h"
#include "launcher/base/host_identity.h"
#include "launcher/base/hydra_agent_names.h"
#include "launcher/engine/labelled_output.h"
#include "launcher/base/slot_table.h"

namespace gpulaunch {
namespace {

bool InPath(const std::string& program) {
  for (const std::string& dir : Split(EnvOr("PATH", ""), ':')) {
    if (access(((dir.empty() ? "." : dir) + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// Where gpulaunch's binaries are (the shim and its second name beside it).
std::filesystem::path SelfBinDir() {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
}

// Hydra's launcher, and so the one channel the job's environment takes to
// each proxy (-genvnone: never Hydra's control port): fork when every rank
// is here (the proxy inherits mpiexec's environment); inside a Slurm
// allocation srun, which Hydra picks by itself and which carries the
// environment over Slurm's own authenticated channel; else ssh through
// gpulaunch-hydra-ssh, which sends it over ssh (hydra_launch_agent.h). A
// user's HYDRA_LAUNCHER of fork, ssh or slurm is honoured (IsViable refuses
// any other).
void AddLauncher(std::vector<std::string>& argv, bool all_local, const std::filesystem::path& bin) {
  const std::string user = EnvOr("HYDRA_LAUNCHER", "");
  if (user == "fork" || user == "slurm") return;
  if (user.empty() && all_local) {
    argv.insert(argv.end(), {"-launcher", "fork"});
    return;
  }
  if (user.empty() && InSlurmAllocation()) return;
  argv.insert(argv.end(), {"-launcher", "ssh", "-launcher-exec", (bin / kHydraSshAgentName).string()});
}

// The flags every mpiexec.hydra of gpulaunch's gets: no environment through
// the control port, and the control port on the listening address's interface.
void AddControlPortFlags(std::vector<std::string>& argv, const HydraListen& listen) {
  argv.push_back("-genvnone");
  if (!listen.iface.empty()) argv.insert(argv.end(), {"-iface", listen.iface});
}

}  // namespace

void WriteHydraHostfile(std::ostream& out, const Placement& placement) {
  const auto& ranks = placement.ranks;
  for (size_t first = 0; first < ranks.size();) {
    size_t end = first + 1;
    while (end < ranks.size() && ranks[end].host == ranks[first].host) ++end;
    out << ranks[first].host << ":" << (end - first) << "\n";
    first = end;
  }
}

bool HostsHoldOneRunEach(const Placement& placement) {
  std::set<std::string> finished;
  for (size_t r = 0; r < placement.ranks.size(); ++r) {
    const std::string& host = placement.ranks[r].host;
    if (finished.count(host)) return false;
    if (r + 1 == placement.ranks.size() || placement.ranks[r + 1].host != host) finished.insert(host);
  }
  return true;
}

HydraListen HydraListenFor(const std::vector<std::string>& hosts, bool all_local) {
  HydraListen listen;
  if (all_local) {
    listen.address = "127.0.0.1";
  } else {
    for (const std::string& h : hosts) {
      if (IsLocalHost(h)) continue;
      listen.address = LocalAddressTowards(h);
      break;
    }
    if (listen.address.empty()) listen.address = LocalAddressTowards("");
  }
  listen.iface = listen.address.empty() ? "" : InterfaceHolding(listen.address);
  return listen;
}

std::filesystem::path HydraListenerLibrary(const std::filesystem::path& bin_dir) {
  return bin_dir.parent_path() / "lib" / "gpulaunch" / "libgpulaunch-hydra-listener.so";
}

StatusOr<std::map<std::string, std::string>> HydraListenerEnvironment(const std::filesystem::path& bin_dir,
                                                                      const HydraListen& listen) {
  const std::filesystem::path library = HydraListenerLibrary(bin_dir);
  if (access(library.c_str(), R_OK) != 0) {
    return FailedPrecondition("gpulaunch starts Hydra with " + library.string() +
                              ", which keeps Hydra's control port to the job's address and user, and it is "
                              "missing; rebuild or reinstall gpulaunch (it is built with the shim)");
  }
  if (listen.iface.empty()) {
    return FailedPrecondition("cannot tell which of this host's interfaces holds " +
                              (listen.address.empty() ? std::string("the address the other hosts reach it by")
                                                      : listen.address) +
                              ", where Hydra's control port must listen; check the route to the job's hosts "
                              "(ip route get HOST)");
  }
  const std::string user_preload = EnvOr("LD_PRELOAD", "");
  return std::map<std::string, std::string>{
      {"LD_PRELOAD", library.string() + (user_preload.empty() ? "" : " " + user_preload)},
      {"GPULAUNCH_HYDRA_LISTEN_ADDR", listen.address}};
}

std::vector<std::string> BuildHydraArgv(const LaunchPlan& plan, const EngineSettings& s, const std::string& hostfile,
                                        const HydraListen& listen) {
  std::vector<std::string> argv = {kHydraProgram, "-f", hostfile, "-n", std::to_string(plan.placement.ranks.size())};
  AddLauncher(argv, s.loopback_only, std::filesystem::path(s.shim).parent_path());
  AddControlPortFlags(argv, listen);
  // Hydra, when a rank ends without MPI_Finalize, SIGKILLs every other rank
  // at once: no stop signal first, no kill grace, and ranks that were still
  // writing their checkpoint on SIGTERM lose it. gpulaunch's own teardown
  // does it instead (launcher/job/job_watch.h). A rank killed by a signal
  // still makes Hydra kill the rest (MPICH 4.0.2).
  argv.push_back("-disable-auto-cleanup");
  if (s.tag) argv.push_back("-prepend-rank");
  argv.push_back(s.shim);
  argv.push_back("--");
  argv.insert(argv.end(), plan.program.begin(), plan.program.end());
  return argv;
}

Status HydraEngine::IsViable() const {
  if (const std::string user = EnvOr("HYDRA_LAUNCHER", ""); !user.empty() && user != "fork" && user != "ssh" &&
                                                              user != "slurm") {
    return FailedPrecondition("HYDRA_LAUNCHER=" + user +
                              ": gpulaunch starts Hydra's proxies through fork, ssh or slurm only, the launchers "
                              "that carry the job's environment where only its user can read it "
                              "(docs/security.md); unset HYDRA_LAUNCHER or set it to one of those");
  }
  if (InPath(kHydraProgram)) return Status::Ok();
  return FailedPrecondition(std::string("--launcher hydra needs MPICH's ") + kHydraProgram +
                            " in PATH, and it is not; install MPICH (Debian: apt-get install mpich) or put "
                            "your MPI's bin folder (Intel MPI, MVAPICH) in PATH");
}

StatusOr<EngineJob> HydraEngine::PrepareJob(const LaunchPlan& plan, EngineSettings settings,
                                            const std::filesystem::path& job_dir) const {
  const std::string hostfile_path = (job_dir / "hostfile").string();
  std::ofstream hostfile(hostfile_path);
  WriteHydraHostfile(hostfile, plan.placement);
  if (!hostfile.flush()) return Internal("cannot write Hydra's hostfile " + hostfile_path);
  const HydraListen listen = HydraListenFor(plan.placement.hosts, settings.loopback_only);
  GL_ASSIGN_OR_RETURN(auto listener_env,
                      HydraListenerEnvironment(std::filesystem::path(settings.shim).parent_path(), listen));
  EngineJob job{BuildHydraArgv(plan, settings, hostfile_path, listen), {}, {}};
  // Read by the listener library in mpiexec.hydra alone, which removes both
  // before anything starts: the ranks see the user's own LD_PRELOAD.
  for (auto& [name, value] : listener_env) job.env[name] = value;
  // Hydra counts local ranks per hostfile line: they are the plan's only
  // when each host is one line.
  job.env[kEngineIdentityEnv] =
      HostsHoldOneRunEach(plan.placement) ? "PMI_RANK PMI_SIZE MPI_LOCALRANKID" : "PMI_RANK PMI_SIZE";
  return job;
}

void HydraEngine::DescribeJob(std::ostream& out, const LaunchPlan& plan, EngineSettings settings) const {
  out << "hostfile:\n";
  WriteHydraHostfile(out, plan.placement);
  const HydraListen listen = HydraListenFor(plan.placement.hosts, settings.loopback_only);
  if (listen.iface.empty()) {
    out << "control port: no interface of this host holds an address the job's hosts reach "
           "(a launch refuses to start Hydra)\n";
  } else {
    out << "control port: " << listen.address << " (" << listen.iface << "), local peers of other users refused\n";
  }
  out << "command:\n ";
  for (const std::string& a : BuildHydraArgv(plan, settings, "{job_dir}/hostfile", listen)) out << " " << ShellQuote(a);
  out << "\n";
}

bool HydraEngine::SignalAllRanks(ControlServer& control, int, int sig) const { return control.SignalAllRanks(sig); }

// The environment reaches the proxies through the launcher, never Hydra's
// port (AddLauncher), the variables of `forward_env` included; the listener
// library's settings go in through env(1), as mpiexec.hydra's own.
std::vector<std::string> HydraEngine::OnHostArgv(const std::string& host, const std::vector<std::string>& program, bool,
                                                 const std::vector<std::string>&) const {
  const HydraListen listen = HydraListenFor({host}, false);
  std::vector<std::string> argv = HydraCommandPrefix(listen);
  argv.insert(argv.end(), {"-hosts", host, "-n", "1"});
  AddLauncher(argv, false, SelfBinDir());
  AddControlPortFlags(argv, listen);
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

std::vector<std::string> HydraEngine::OnEachHostArgv(const std::vector<std::string>& hosts, const std::string& program,
                                                     bool) const {
  const HydraListen listen = HydraListenFor(hosts, false);
  std::vector<std::string> argv = HydraCommandPrefix(listen);
  argv.insert(argv.end(), {"-hosts", Join(hosts, ","), "-n", std::to_string(hosts.size())});
  AddLauncher(argv, false, SelfBinDir());
  AddControlPortFlags(argv, listen);
  argv.insert(argv.end(), {"-prepend-rank", program});
  return argv;
}

std::vector<std::string> HydraCommandPrefix(const HydraListen& listen) {
  const auto env = HydraListenerEnvironment(SelfBinDir(), listen);
  if (!env.ok()) return {kHydraProgram};  // said by the launch itself; a probe without it still runs
  std::vector<std::string> argv = {"env"};
  for (const auto& [name, value] : *env) argv.push_back(name + "=" + value);
  argv.push_back(kHydraProgram);
  return argv;
}

std::map<int, std::string> HydraEngine::SplitByTask(const std::string& output) const {
  static const std::regex label(R"(^\[(\d+)\] ?)");
  return SplitLabelledLines(output, label);
}

}  // namespace gpulaunch
