#include "launcher/engine/mpirun_engine.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "common/env.h"
#include "launcher/base/control_auth.h"
#include "common/strings.h"
#include "launcher/base/control_server.h"
#include "launcher/base/open_file_limit.h"
#include "launcher/base/slot_table.h"
#include "launcher/base/tag_demux.h"

namespace gpulaunch {

void WriteRankfile(std::ostream& out, const Placement& placement) {
  for (const RankSlot& r : placement.ranks) out << "rank " << r.rank << "=" << r.host << " slot=" << FormatIdList(r.cores) << "\n";
}

std::string RenderRankfile(const Placement& placement) {
  std::ostringstream out;
  WriteRankfile(out, placement);
  return out.str();
}

bool HostsOversubscribed(const Placement& placement) {
  std::map<std::string, std::pair<int, std::set<int>>> per_host;  // ranks, PUs in use
  for (const RankSlot& r : placement.ranks) {
    auto& [ranks, pus] = per_host[r.host];
    ++ranks;
    pus.insert(r.cpus.begin(), r.cpus.end());
  }
  for (const auto& [host, use] : per_host)
    if (use.first > static_cast<int>(use.second.size())) return true;
  return false;
}

std::vector<std::string> BuildMpirunArgv(const LaunchPlan& plan, const EngineSettings& s) {
  std::vector<std::string> argv = {s.mpirun, "-n", std::to_string(plan.placement.ranks.size()), "--rankfile",
                                   s.rankfile};
  if (s.allow_run_as_root) argv.push_back("--allow-run-as-root");
  if (s.tag) argv.push_back("--tag-output");
  if (s.loopback_only) {
    // One host: nothing needs to leave the machine. A user's own setting wins.
    if (!HasEnv("OMPI_MCA_oob_tcp_if_include") && !HasEnv("OMPI_MCA_oob_tcp_if_exclude")) {
      argv.insert(argv.end(), {"--mca", "oob_tcp_if_include", "lo"});
    }
    if (!HasEnv("OMPI_MCA_btl_tcp_if_include") && !HasEnv("OMPI_MCA_btl_tcp_if_exclude")) {
      argv.insert(argv.end(), {"--mca", "btl_tcp_if_include", "lo"});
    }
  }
  if (s.kill_grace_s) {
    argv.insert(argv.end(), {"--mca", "odls_base_sigkill_timeout", std::to_string(*s.kill_grace_s)});
  }
  if (HostsOversubscribed(plan.placement) && !HasEnv("OMPI_MCA_mpi_yield_when_idle")) {
    // What mpirun sets itself when it sees oversubscription: ranks yield the
    // CPU while they wait instead of spinning against each other.
    argv.insert(argv.end(), {"--mca", "mpi_yield_when_idle", "1"});
  }
  argv.insert(argv.end(), {"-x", kSlotTableEnv, "-x", kControlSecretEnv, "-x", kKillGraceEnv});
  for (const EnvAssignment& e : plan.env) argv.insert(argv.end(), {"-x", e.name});
  argv.push_back(s.shim);
  argv.push_back("--");
  argv.insert(argv.end(), plan.program.begin(), plan.program.end());
  return argv;
}

// The launch agent that starts Open MPI's daemon on other hosts through the
// shim, which raises the daemon's open-file limit to what its ranks need
// there (open_file_limit.h): over ssh a daemon gets the host's own limit,
// often a soft 1,024, and out of descriptors it hangs (512 ranks on a host
// need about 2,200). Sized for the host with the most ranks. nullopt when
// every rank is local, the user set a launch agent, or the shim's path holds
// anything but letters, digits and "/._+-": Open MPI splits the agent at
// spaces and hands it to the remote shell, which must read it as it is.
std::optional<std::string> DaemonLaunchAgent(const LaunchPlan& plan, const EngineSettings& s, int files_per_rank) {
  const bool plain_path = !s.shim.empty() && std::all_of(s.shim.begin(), s.shim.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("/._+-").find(c) != std::string_view::npos;
  });
  if (s.loopback_only || HasEnv("OMPI_MCA_orte_launch_agent") || !plain_path) return std::nullopt;
  int most = 0;
  for (const auto& [host, ranks] : plan.placement.RanksByHost()) most = std::max(most, ranks);
  const long need = static_cast<long>(most) * files_per_rank + kEngineOwnOpenFiles;
  return s.shim + " " + kRaiseOpenFilesFlag + " " + std::to_string(need) + " orted";
}

StatusOr<EngineJob> MpirunEngine::PrepareJob(const LaunchPlan& plan, EngineSettings settings,
                                             const std::filesystem::path& job_dir) const {
  settings.rankfile = (job_dir / "rankfile").string();
  std::ofstream rankfile(settings.rankfile);
  WriteRankfile(rankfile, plan.placement);
  if (!rankfile.flush()) return Internal("cannot write the rankfile " + settings.rankfile);
  EngineJob job{BuildMpirunArgv(plan, settings), {}, {}};
  if (const auto agent = DaemonLaunchAgent(plan, settings, OpenFilesPerLocalRank())) {
    job.engine_only_env["OMPI_MCA_orte_launch_agent"] = *agent;
  }
  // Every rank on this host: mpirun reads the topology gpulaunch has instead
  // of discovering the host again (reading every PCI device's configuration
  // space, among others). Not for other hosts: their daemons would get the
  // setting too. A user's own setting wins; a file that cannot be written
  // only costs the discovery.
  if (settings.loopback_only && settings.local_topology_xml && !HasEnv("OMPI_MCA_hwloc_base_topo_file")) {
    const std::filesystem::path topology = job_dir / "topology.xml";
    std::ofstream out(topology);
    out << *settings.local_topology_xml;
    if (out.flush()) job.engine_only_env["OMPI_MCA_hwloc_base_topo_file"] = topology.string();
  }
  return job;
}

void MpirunEngine::DescribeJob(std::ostream& out, const LaunchPlan& plan, EngineSettings settings) const {
  settings.rankfile = "{job_dir}/rankfile";
  out << "rankfile:\n";
  WriteRankfile(out, plan.placement);
  out << "command:\n ";
  for (const std::string& a : BuildMpirunArgv(plan, settings)) out << " " << ShellQuote(a);
  out << "\n";
}

bool MpirunEngine::SignalAllRanks(ControlServer& control, int, int sig) const {
  return control.SignalAllRanks(sig);
}

std::vector<std::string> MpirunEngine::OnHostArgv(const std::string& host, const std::vector<std::string>& program,
                                                  bool allow_run_as_root, const std::vector<std::string>& forward_env) const {
  // Unbound: mpirun binds one process to core 0, and two probes on a host
  // (linkcheck's server and client) would share that core.
  std::vector<std::string> argv = {"mpirun", "-n", "1", "--host", host + ":1", "--bind-to", "none"};
  if (allow_run_as_root) argv.push_back("--allow-run-as-root");
  for (const std::string& name : forward_env) argv.insert(argv.end(), {"-x", name});
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

std::vector<std::string> MpirunEngine::OnEachHostArgv(const std::vector<std::string>& hosts,
                                                      const std::string& program, bool allow_run_as_root) const {
  std::vector<std::string> with_one_slot;
  for (const auto& h : hosts) with_one_slot.push_back(h + ":1");
  std::vector<std::string> argv = {"mpirun", "-n", std::to_string(hosts.size()), "--host", Join(with_one_slot, ","),
                                   "--tag-output"};
  if (allow_run_as_root) argv.push_back("--allow-run-as-root");
  argv.push_back(program);
  return argv;
}

std::map<int, std::string> MpirunEngine::SplitByTask(const std::string& output) const {
  std::map<int, std::string> by_task;
  TagDemux demux([&](int rank, const std::string& line) {
    if (rank >= 0) by_task[rank] += line + "\n";
  });
  demux.Feed(output.data(), output.size());
  demux.Finish();
  return by_task;
}

}  // namespace gpulaunch
