#include "launcher/base/process_tree.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "common/strings.h"

namespace gpulaunch {

pid_t ParentOf(pid_t pid) {
  const std::string stat = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
  // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 4 >= stat.size()) return -1;
  const char* p = stat.c_str() + close + 2;  // the state
  while (*p && *p != ' ') ++p;
  char* end = nullptr;
  const long ppid = std::strtol(p, &end, 10);
  return end == p ? -1 : static_cast<pid_t>(ppid);
}

int PidfdIfDescendant(pid_t pid, pid_t ancestor) {
  if (pid <= 1 || pid == ancestor) return -1;
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return -1;
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  bool descends = false;
  pid_t at = pid;
  for (int depth = 0; depth < 64 && at > 1; ++depth) {
    at = ParentOf(at);
    if (at == ancestor) {
      descends = true;
      break;
    }
  }
  if (!descends || !SignalPidfd(fd, 0)) {
    close(fd);
    return -1;
  }
  return fd;
}

bool SignalPidfd(int pidfd, int sig) {
  return pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) == 0;
}

bool PidfdEnded(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return pidfd < 0 || poll(&p, 1, 0) == 1;
}

}  // namespace gpulaunch
