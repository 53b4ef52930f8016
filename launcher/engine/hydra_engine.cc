#include "launcher/engine/hydra_engine.h"

#include <unistd.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "common/env.h"
#include "common/strings.h"
#include "launcher/base/control_server.h"
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

// Hydra's launcher: ssh between hosts, fork when every rank is here. Inside
// a Slurm allocation Hydra starts its proxies through srun by itself, and a
// user's own HYDRA_LAUNCHER wins.
void AddLauncher(std::vector<std::string>& argv, bool all_local) {
  if (HasEnv("HYDRA_LAUNCHER") || (InSlurmAllocation() && !all_local)) return;
  argv.insert(argv.end(), {"-launcher", all_local ? "fork" : "ssh"});
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

std::vector<std::string> BuildHydraArgv(const LaunchPlan& plan, const EngineSettings& s, const std::string& hostfile) {
  std::vector<std::string> argv = {kHydraProgram, "-f", hostfile, "-n", std::to_string(plan.placement.ranks.size())};
  AddLauncher(argv, s.loopback_only);
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
  EngineJob job{BuildHydraArgv(plan, settings, hostfile_path), {}, {}};
  // Hydra counts local ranks per hostfile line: they are the plan's only
  // when each host is one line.
  job.env[kEngineIdentityEnv] =
      HostsHoldOneRunEach(plan.placement) ? "PMI_RANK PMI_SIZE MPI_LOCALRANKID" : "PMI_RANK PMI_SIZE";
  return job;
}

void HydraEngine::DescribeJob(std::ostream& out, const LaunchPlan& plan, EngineSettings settings) const {
  out << "hostfile:\n";
  WriteHydraHostfile(out, plan.placement);
  out << "command:\n ";
  for (const std::string& a : BuildHydraArgv(plan, settings, "{job_dir}/hostfile")) out << " " << ShellQuote(a);
  out << "\n";
}

bool HydraEngine::SignalAllRanks(ControlServer& control, int, int sig) const { return control.SignalAllRanks(sig); }

// Hydra passes the caller's whole environment (-genvall, its default), the
// variables of `forward_env` included.
std::vector<std::string> HydraEngine::OnHostArgv(const std::string& host, const std::vector<std::string>& program, bool,
                                                 const std::vector<std::string>&) const {
  std::vector<std::string> argv = {kHydraProgram, "-hosts", host, "-n", "1"};
  AddLauncher(argv, false);
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

std::vector<std::string> HydraEngine::OnEachHostArgv(const std::vector<std::string>& hosts, const std::string& program,
                                                     bool) const {
  std::vector<std::string> argv = {kHydraProgram, "-hosts", Join(hosts, ","), "-n", std::to_string(hosts.size())};
  AddLauncher(argv, false);
  argv.insert(argv.end(), {"-prepend-rank", program});
  return argv;
}

std::map<int, std::string> HydraEngine::SplitByTask(const std::string& output) const {
  static const std::regex label(R"(^\[(\d+)\] ?)");
  return SplitLabelledLines(output, label);
}

}  // namespace gpulaunch
