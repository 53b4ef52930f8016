#include "launcher/base/exit_codes.h"

#include <sys/wait.h>

#include <iostream>

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

int ExitCodeFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kInfeasible:
    case StatusCode::kFailedPrecondition:
      return kExitUsage;
    case StatusCode::kUnavailable:
    case StatusCode::kInternal:
      break;
  }
  return kExitLaunchFailure;
}

int Fail(const Status& status) {
  std::cerr << "gpulaunch: " << status.message() << "\n";
  return ExitCodeFor(status.code());
}

}  // namespace gpulaunch
