#include "launcher/exit_codes.h"

#include <sys/wait.h>

namespace gpulaunch {

int JobExitCode(int status, bool any_rank_started) {
  int code;
  if (WIFEXITED(status)) {
    code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    code = 128 + WTERMSIG(status);
  } else {
    code = kExitLaunchFailure;
  }
  if (code != 0 && !any_rank_started) return kExitLaunchFailure;
  return code;
}

}  // namespace gpulaunch
