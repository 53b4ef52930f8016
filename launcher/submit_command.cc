#include "launcher/submit_command.h"

#include "common/file_write.h"
#include "launcher/base/fd_io.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/strings.h"
#include "launcher/base/exit_codes.h"
#include "launcher/base/process.h"
#include "launcher/core/options.h"
#include "slurm/batch_script.h"

namespace fs = std::filesystem;

namespace gpulaunch {

int RunSubmitCommand(const std::vector<std::string>& args) {
  auto parsed = ParseSubmitCommandLine(args);
  if (!parsed.ok()) return Fail(parsed.status());
  if (parsed->help) {
    std::cout << SubmitHelpText();
    return kExitOk;
  }
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const std::string script = RenderBatchScript(parsed->job, self);
  std::string path = parsed->script.value_or((fs::temp_directory_path() / "gpulaunch-submit.XXXXXX").string());
  // A given --script is written atomically, never through a planted file or
  // link (common/file_write.h); the default one through mkstemp's own descriptor.
  bool written = false;
  if (parsed->script) {
    const Status s = WriteFileAtomically(path, script);
    if (!s.ok()) std::cerr << "gpulaunch: cannot write the batch script: " << s.message() << "\n";
    written = s.ok();
  } else if (const int fd = mkstemp(path.data()); fd >= 0) {
    written = WriteAll(fd, script.data(), script.size());
    written = close(fd) == 0 && written;
    if (!written) std::cerr << "gpulaunch: cannot write the batch script " << path << "\n";
  } else {
    std::cerr << "gpulaunch: cannot create a batch script under /tmp\n";
    return kExitLaunchFailure;
  }
  if (!written) return kExitUsage;
  if (parsed->test_only || parsed->validate) {
    // sbatch answers on stderr: "Job N to start at T using C processors on
    // nodes ... in partition P", or why not.
    const CapturedRun ask = RunCaptured({"sbatch", "--test-only", path}, EnvironmentWith({}), 60000);
    const bool would_run = ask.Succeeded();
    if (parsed->test_only || !would_run) {
      if (!parsed->script) std::remove(path.c_str());
      std::cout << ask.err << ask.out;
      std::cerr << "gpulaunch: " << (would_run ? "sbatch accepts the job; nothing was submitted (--test-only)\n"
                                               : "sbatch refuses the job as asked; nothing was submitted\n");
      return would_run ? kExitOk : kExitUsage;
    }
  }
  const CapturedRun run = RunCaptured({"sbatch", "--parsable", path}, EnvironmentWith({}), 60000);
  if (!parsed->script) std::remove(path.c_str());  // sbatch keeps its own copy
  const std::string id(Trim(run.out.substr(0, run.out.find(';'))));
  if (!run.Succeeded() || id.empty()) {
    std::cerr << "gpulaunch: sbatch did not accept the job: " << run.err;
    return kExitLaunchFailure;
  }
  std::cout << id << "\n";
  std::cerr << "gpulaunch: submitted job " << id << (parsed->script ? " (script " + path + ")" : "") << "\n";
  return kExitOk;
}

}  // namespace gpulaunch
