#include "launcher/base/rank_cgroup.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <vector>

#include "common/env.h"
#include "common/strings.h"

namespace gpulaunch {
namespace {

constexpr const char kWatcherName[] = "gpulaunch-watch";
constexpr int kEmptyWaitMs = 10000;

// mountinfo writes space, tab, newline and backslash as \ooo.
std::string UnescapeMountField(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3') {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

bool WriteText(int dir_fd, const char* file, const std::string& text) {
  const int fd = openat(dir_fd, file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

bool Populated(int cgroup_fd) {
  const int fd = openat(cgroup_fd, "cgroup.events", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[256];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  return std::strstr(buf, "populated 1") != nullptr;
}

void SleepMs(long ms) {
  timespec t{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

// close_range(2) (Linux 5.9); on an older kernel, one close per descriptor
// up to the open-file limit's first 64 Ki.
void CloseRange(unsigned first, unsigned last) {
  if (close_range(first, last, 0) == 0) return;
  for (unsigned fd = first; fd <= last && fd < 65536; ++fd) close(static_cast<int>(fd));
}

// The watcher's whole life (rank_cgroup.h). Only system calls: it runs in a
// child of a process that may have other threads' locks held.
[[noreturn]] void Watch(int pipe_read, int parent_fd, int cgroup_fd, const std::string& name) {
  prctl(PR_SET_NAME, kWatcherName, 0, 0, 0);
  signal(SIGHUP, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  if (chdir("/") != 0) {
    // nothing depends on it: it only keeps a mount point from looking busy
  }
  const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd < 3; ++fd) {
    if (null_fd >= 0) dup2(null_fd, fd);
  }
  // Every other descriptor the shim had (the engine's, its streams' copies)
  // goes: the watcher outlives the step and must hold nothing of it.
  int keep[3] = {pipe_read, parent_fd, cgroup_fd};
  std::sort(keep, keep + 3);
  unsigned from = 3;
  for (int k : keep) {
    if (static_cast<unsigned>(k) > from) CloseRange(from, static_cast<unsigned>(k) - 1);
    from = std::max(from, static_cast<unsigned>(k) + 1);
  }
  CloseRange(from, ~0U);
  char byte;
  while (true) {
    const ssize_t n = read(pipe_read, &byte, 1);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  WriteText(cgroup_fd, "cgroup.kill", "1");
  for (int waited = 0; waited < kEmptyWaitMs; waited += 10) {
    if (!Populated(cgroup_fd) && unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) == 0) _exit(0);
    SleepMs(10);
  }
  unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR);
  _exit(0);
}

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

std::string OwnCgroup2Folder(const std::string& proc_self_cgroup, const std::string& proc_self_mountinfo) {
  std::string path;
  for (const std::string& line : Split(proc_self_cgroup, '\n')) {
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  }
  if (path.empty() || path[0] != '/') return "";
  for (const std::string& line : Split(proc_self_mountinfo, '\n')) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    const std::vector<std::string> after = Split(line.substr(dash + 3), ' ');
    if (after.empty() || after[0] != "cgroup2") continue;
    const std::vector<std::string> before = Split(line.substr(0, dash), ' ');
    if (before.size() < 5) continue;
    const std::string root = UnescapeMountField(before[3]);
    const std::string mount = UnescapeMountField(before[4]);
    if (root == "/") return mount + (path == "/" ? "" : path);
    if (path == root) return mount;
    if (path.rfind(root + "/", 0) == 0) return mount + path.substr(root.size());
  }
  return "";
}

namespace {

// A new child cgroup NAME of this process's own, with cgroup.kill and a
// cgroup.procs this process may write; on failure, nothing is left and
// `why` says what failed.
struct NewCgroup {
  int parent_fd = -1, fd = -1;
  std::string name, why;
  void Remove() {
    if (fd >= 0) close(fd);
    if (parent_fd >= 0) {
      unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR);
      close(parent_fd);
    }
    fd = parent_fd = -1;
  }
};

NewCgroup MakeChildCgroup(const std::string& name) {
  NewCgroup c;
  c.name = name;
  if (EnvIs("GPULAUNCH_RANK_CGROUP", "off")) {
    c.why = "GPULAUNCH_RANK_CGROUP=off";
    return c;
  }
  const std::string folder =
      OwnCgroup2Folder(ReadFileOrEmpty("/proc/self/cgroup"), ReadFileOrEmpty("/proc/self/mountinfo"));
  if (folder.empty()) {
    c.why = "no cgroup v2 hierarchy is mounted here";
    return c;
  }
  c.parent_fd = open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (c.parent_fd < 0) {
    c.why = Errno(("open " + folder).c_str());
    return c;
  }
  // A folder of that name is an earlier shim's whose pid this one reuses:
  // empty (its watcher would have removed it otherwise), so it goes.
  if (mkdirat(c.parent_fd, name.c_str(), 0755) != 0 &&
      !(errno == EEXIST && unlinkat(c.parent_fd, name.c_str(), AT_REMOVEDIR) == 0 &&
        mkdirat(c.parent_fd, name.c_str(), 0755) == 0)) {
    c.why = Errno(("mkdir " + folder + "/" + name).c_str());
    close(c.parent_fd);
    c.parent_fd = -1;
    return c;
  }
  c.fd = openat(c.parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (c.fd < 0) {
    c.why = Errno(("open " + folder + "/" + name).c_str());
  } else if (faccessat(c.fd, "cgroup.kill", W_OK, 0) != 0) {
    c.why = "this kernel's cgroups have no cgroup.kill (Linux 5.14 added it)";
  } else if (faccessat(c.fd, "cgroup.procs", W_OK, 0) != 0) {
    c.why = Errno(("write " + folder + "/" + name + "/cgroup.procs").c_str());
  } else {
    return c;
  }
  c.Remove();
  return c;
}

}  // namespace

std::string WhyNoRankCgroup() {
  NewCgroup c = MakeChildCgroup("gpulaunch-probe." + std::to_string(getpid()));
  const std::string why = c.why;
  c.Remove();
  return why;
}

CgroupContainment ContainInOwnCgroup() {
  NewCgroup c = MakeChildCgroup("gpulaunch-shim." + std::to_string(getpid()));
  if (!c.why.empty()) return {false, c.why};
  const auto give_up = [&c](const std::string& why) {
    c.Remove();
    return CgroupContainment{false, why};
  };
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return give_up(Errno("pipe"));
  const pid_t middle = fork();
  if (middle < 0) {
    close(fds[0]);
    close(fds[1]);
    return give_up(Errno("fork"));
  }
  if (middle == 0) {
    close(fds[1]);
    setsid();
    const pid_t watcher = fork();
    if (watcher == 0) Watch(fds[0], c.parent_fd, c.fd, c.name);
    _exit(watcher < 0 ? 1 : 0);
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(middle, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    close(fds[1]);
    return give_up("could not start the cgroup's watcher");
  }
  // From here the watcher owns the cgroup: it removes it when fds[1] closes.
  const bool moved = WriteText(c.fd, "cgroup.procs", std::to_string(getpid()));
  const std::string why = moved ? "" : Errno("move the shim into its cgroup");
  close(c.fd);
  close(c.parent_fd);
  if (!moved) {
    close(fds[1]);  // the watcher finds the cgroup empty and removes it
    return {false, why};
  }
  // fds[1] stays open, close-on-exec, for the shim's whole life: its closing
  // is the watcher's signal.
  return {true, ""};
}

}  // namespace gpulaunch
