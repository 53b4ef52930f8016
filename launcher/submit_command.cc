#include "launcher/submit_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/strings.h"
#include "launcher/base/exit_codes.h"
#include "launcher/base/process.h"

namespace fs = std::filesystem;

namespace gpulaunch {

std::string RenderBatchScript(const SubmitOptions& o, const std::string& gpulaunch) {
  std::string s = "#!/bin/bash\n# Written by gpulaunch submit.\n";
  s += "#SBATCH --job-name=" + o.job_name + "\n";
  s += "#SBATCH --nodes=" + std::to_string(o.nodes) + "\n";
  if (o.ranks > 0) s += "#SBATCH --ntasks=" + std::to_string(o.ranks) + "\n";
  if (o.gpus_per_node > 0) s += "#SBATCH --gpus-per-node=" + std::to_string(o.gpus_per_node) + "\n";
  if (!o.time.empty()) s += "#SBATCH --time=" + o.time + "\n";
  if (!o.partition.empty()) s += "#SBATCH --partition=" + o.partition + "\n";
  if (!o.output.empty()) s += "#SBATCH --output=" + o.output + "\n";
  s += "exec " + ShellQuote(gpulaunch);
  for (const std::string& a : o.launch) s += " " + ShellQuote(a);
  return s + "\n";
}

int RunSubmitCommand(const std::vector<std::string>& args) {
  auto parsed = ParseSubmitCommandLine(args);
  if (!parsed.ok()) return Fail(parsed.status());
  if (parsed->help) {
    std::cout << "Usage: gpulaunch submit -N NODES [-n RANKS] [--gpus-per-node G] [--time T] [--partition P]\n"
                 "                        [--job-name NAME] [--output FILE] [--script FILE]\n"
                 "                        [gpulaunch options] [--] PROGRAM [ARGS...]\n\n"
                 "Writes a batch script that runs gpulaunch with the given options on the allocation,\n"
                 "submits it with sbatch and prints the job id.\n";
    return kExitOk;
  }
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const std::string script = RenderBatchScript(*parsed, self);
  std::string path = parsed->script.value_or((fs::temp_directory_path() / "gpulaunch-submit.XXXXXX").string());
  if (!parsed->script) {
    const int fd = mkstemp(path.data());
    if (fd < 0) {
      std::cerr << "gpulaunch: cannot create a batch script under /tmp\n";
      return kExitLaunchFailure;
    }
    close(fd);
  }
  {
    std::ofstream out(path);
    out << script;
    if (!out) {
      std::cerr << "gpulaunch: cannot write the batch script " << path << "\n";
      return kExitUsage;
    }
  }
  const CapturedRun run = RunCaptured({"sbatch", "--parsable", path}, EnvironmentWith({}), 60000);
  if (!parsed->script) std::remove(path.c_str());  // sbatch keeps its own copy
  const std::string id(Trim(run.out.substr(0, run.out.find(';'))));
  if (run.timed_out || !WIFEXITED(run.wait_status) || WEXITSTATUS(run.wait_status) != 0 || id.empty()) {
    std::cerr << "gpulaunch: sbatch did not accept the job: " << run.err;
    return kExitLaunchFailure;
  }
  std::cout << id << "\n";
  std::cerr << "gpulaunch: submitted job " << id << (parsed->script ? " (script " + path + ")" : "") << "\n";
  return kExitOk;
}

}  // namespace gpulaunch
