#include "launcher/engine/srun_engine.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "common/strings.h"
#include "launcher/base/control_server.h"
#include "launcher/engine/labelled_output.h"
#include "launcher/engine/mpirun_engine.h"
#include "launcher/core/slurm_job.h"

namespace gpulaunch {

void WriteSlurmHostfile(std::ostream& out, const Placement& placement) {
  for (const RankSlot& r : placement.ranks) out << r.host << "\n";
}

std::string RenderSlurmHostfile(const Placement& placement) {
  std::ostringstream out;
  WriteSlurmHostfile(out, placement);
  return out.str();
}

std::string SrunCpuBind(const Placement& placement) {
  std::map<int, std::vector<int>> cpus_of_local;  // local id -> cpus, identical on every host
  for (const RankSlot& r : placement.ranks) {
    if (!r.bound) return "none";  // unbound ranks may use every CPU the step has
    auto [it, fresh] = cpus_of_local.emplace(r.local_rank, r.cpus);
    if (!fresh && it->second != r.cpus) return "none";
  }
  std::vector<std::string> masks;
  for (const auto& [local, cpus] : cpus_of_local) {
    // Hex mask, most significant digit first.
    const int top = cpus.empty() ? 0 : cpus.back();
    std::string hex;
    for (int base = (top / 4) * 4; base >= 0; base -= 4) {
      int digit = 0;
      for (int b = 0; b < 4; ++b)
        if (std::binary_search(cpus.begin(), cpus.end(), base + b)) digit |= 1 << b;
      hex += "0123456789abcdef"[digit];
    }
    masks.push_back("0x" + hex);
  }
  return "mask_cpu:" + Join(masks, ",");
}

std::vector<std::string> BuildSrunArgv(const LaunchPlan& plan, const EngineSettings& s) {
  std::vector<std::string> argv = {"srun", "--mpi=pmix", "-n", std::to_string(plan.placement.ranks.size()),
                                   "--distribution=arbitrary", "--cpu-bind=" + SrunCpuBind(plan.placement)};
  if (HostsOversubscribed(plan.placement) || plan.placement.oversubscribed) argv.push_back("--overcommit");
  if (s.tag) argv.push_back("--label");
  argv.push_back(s.shim);
  argv.push_back("--");
  argv.insert(argv.end(), plan.program.begin(), plan.program.end());
  return argv;
}

Status SrunEngine::IsViable() const {
  if (InSlurmAllocation()) return Status::Ok();
  return FailedPrecondition("--launcher srun runs a job step inside a Slurm allocation, and this is not one; "
                            "run gpulaunch inside salloc or sbatch, or use --launcher mpirun");
}

StatusOr<EngineJob> SrunEngine::PrepareJob(const LaunchPlan& plan, EngineSettings settings,
                                           const std::filesystem::path& job_dir) const {
  const std::string hostfile_path = (job_dir / "hostfile").string();
  std::ofstream hostfile(hostfile_path);
  WriteSlurmHostfile(hostfile, plan.placement);
  if (!hostfile.flush()) return Internal("cannot write the Slurm hostfile " + hostfile_path);
  return EngineJob{BuildSrunArgv(plan, settings), {{"SLURM_HOSTFILE", hostfile_path}}, {}};
}

void SrunEngine::DescribeJob(std::ostream& out, const LaunchPlan& plan, EngineSettings settings) const {
  out << "hostfile:\n";
  WriteSlurmHostfile(out, plan.placement);
  out << "command:\n  SLURM_HOSTFILE={job_dir}/hostfile";
  for (const std::string& a : BuildSrunArgv(plan, settings)) out << " " << ShellQuote(a);
  out << "\n";
}

bool SrunEngine::SignalAllRanks(ControlServer& control, int, int sig) const {
  return SignalSlurmSteps(control.SlurmSteps(), sig);
}

// srun passes the caller's whole environment to its task (--export=ALL, its
// default), the variables of `forward_env` included.
std::vector<std::string> SrunEngine::OnHostArgv(const std::string& host, const std::vector<std::string>& program,
                                                bool, const std::vector<std::string>&) const {
  std::vector<std::string> argv = {"srun", "-N", "1", "-n", "1", "--overcommit", "-w", host};
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

std::vector<std::string> SrunEngine::OnEachHostArgv(const std::vector<std::string>& hosts, const std::string& program,
                                                    bool) const {
  return {"srun", "-N", std::to_string(hosts.size()), "-n", std::to_string(hosts.size()), "--ntasks-per-node=1",
          "--overcommit", "-w", Join(hosts, ","), "--label", program};
}

std::map<int, std::string> SrunEngine::SplitByTask(const std::string& output) const {
  static const std::regex label(R"(^\s*(\d+): ?)");
  return SplitLabelledLines(output, label);
}

}  // namespace gpulaunch
