#include "launcher/base/open_file_limit.h"

#include <cstdlib>
#include <optional>

#include "common/env.h"
#include "common/strings.h"

namespace gpulaunch {

StatusOr<FileLimitChange> RaiseOpenFileLimit(rlim_t need, const std::string& what_needs_them) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return FileLimitChange{};  // nothing to go by: the engine will say
  FileLimitChange change{lim.rlim_cur, lim.rlim_cur};
  if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= need) return change;
  if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < need) {
    return FailedPrecondition(what_needs_them + " about " + std::to_string(need) +
                              " open files, but the hard open-file limit here is " + std::to_string(lim.rlim_max) +
                              "; raise it (ulimit -Hn " + std::to_string(need) +
                              " as root, or nofile in /etc/security/limits.conf or the service's LimitNOFILE) or "
                              "launch fewer ranks");
  }
  rlimit raised = lim;
  raised.rlim_cur = need;
  if (setrlimit(RLIMIT_NOFILE, &raised) != 0) {
    return FailedPrecondition(what_needs_them + " about " + std::to_string(need) +
                              " open files, and the soft open-file limit " + std::to_string(lim.rlim_cur) +
                              " could not be raised; raise it (ulimit -n " + std::to_string(need) +
                              ") or launch fewer ranks");
  }
  change.after = need;
  return change;
}

std::string JobFileLimitSetting(const FileLimitChange& change) {
  if (change.after == change.before) return "";
  return std::to_string(change.after) + " " + std::to_string(change.before);
}

void RestoreJobFileLimit() {
  const std::optional<std::string> setting = GetEnv(kJobFileLimitEnv);
  if (!setting) return;
  unsetenv(kJobFileLimitEnv);
  Words words(*setting);
  const std::optional<int64_t> raised = words.NextInt<int64_t>(), original = words.NextInt<int64_t>();
  rlimit lim{};
  if (!raised || !original || *original <= 0 || getrlimit(RLIMIT_NOFILE, &lim) != 0 ||
      lim.rlim_cur != static_cast<rlim_t>(*raised)) {
    return;
  }
  lim.rlim_cur = static_cast<rlim_t>(*original);
  setrlimit(RLIMIT_NOFILE, &lim);  // lowering the soft limit is always allowed
}

void DropDaemonLaunchAgent() {
  const std::optional<std::string> agent = GetEnv("OMPI_MCA_orte_launch_agent");
  if (agent && agent->find(std::string(" ") + kRaiseOpenFilesFlag + " ") != std::string::npos) {
    unsetenv("OMPI_MCA_orte_launch_agent");
  }
}

}  // namespace gpulaunch
