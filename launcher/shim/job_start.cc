#include "launcher/shim/job_start.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "launcher/base/fd_io.h"

extern char** environ;

namespace gpulaunch {
namespace {

// How long the job process waits for room to send its check-in.
constexpr int kCheckInSendWaitMs = 5000;

// What the job process needs between vfork and exec, all prepared by the
// shim beforehand: the vfork child shares the shim's memory until it execs.
struct JobProcess {
  char** argv;
  char** envp;  // the shim's environment with the job's descriptors named
  pid_t shim;
  const JobStartOptions* options;
  const JobPipeEnds* ends;
  int beat_as, metrics_as;  // the numbers the job has its pipe ends as
  char* line;               // room for the check-in line with any pid and its tag
  uint64_t check_in_seq;    // the check-in's sequence number on the connection
  // Written by the child, read by the shim once it resumes (shared memory;
  // volatile, or the compiler may keep the values it knew before vfork).
  volatile bool check_in_failed = false;
  volatile int exec_errno = 0;
};

// Writes v in decimal at out; returns the digits written.
size_t WriteDecimal(char* out, long v) {
  char digits[24];
  size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0);
  for (size_t i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  return n;
}

// In the vfork child: checks in, then becomes the job, or exits 126/127.
// Every signal is blocked on entry (the shim blocked them around vfork).
[[noreturn]] void BecomeJob(JobProcess& s) {
  const JobStartOptions& o = *s.options;
  for (int sig : o.reset_signals) signal(sig, SIG_DFL);  // this process's own table: vfork does not share it
  if (o.own_group) setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != s.shim) _exit(128 + SIGKILL);  // the shim died before prctl took effect
  prctl(PR_SET_PTRACER, s.shim, 0, 0, 0);         // EINVAL without Yama: nothing to allow
  if (o.check_in && o.check_in->fd >= 0) {
    const std::string& before = o.check_in->before_pid;
    const std::string& after = o.check_in->after_pid;
    size_t n = before.copy(s.line, before.size());
    n += WriteDecimal(s.line + n, getpid());
    n += after.copy(s.line + n, after.size());
    n = o.check_in->session->SealInto(s.check_in_seq, s.line, n, s.line);  // computation only: no allocation
    s.check_in_failed = !SendAll(o.check_in->fd, s.line, n, kCheckInSendWaitMs);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(s.ends->err, STDERR_FILENO);
  dup2(s.ends->beat, s.beat_as);  // dup2 leaves the copy open across exec
  if (s.ends->metrics >= 0) dup2(s.ends->metrics, s.metrics_as);
  execvpe(s.argv[0], s.argv, s.envp);
  s.exec_errno = errno;
  _exit(errno == ENOENT ? 127 : 126);
}

// The lowest descriptor number from 3 up that the job may have: one the shim
// has not open, or has close-on-exec (gone at exec) and that the job process
// does not use before it execs (`in_use`).
int NumberForJob(std::initializer_list<int> in_use) {
  for (int fd = 3;; ++fd) {
    if (std::find(in_use.begin(), in_use.end(), fd) != in_use.end()) continue;
    const int flags = fcntl(fd, F_GETFD);
    if (flags < 0 || (flags & FD_CLOEXEC)) return fd;
  }
}

// `environ` with each NAME=VALUE of `add` replacing or adding NAME; the
// pointers stay valid while `add` and the environment are unchanged.
std::vector<char*> JobEnvironment(const std::vector<std::string>& add) {
  std::vector<char*> env;
  for (char** e = environ; *e; ++e) {
    const bool replaced = std::any_of(add.begin(), add.end(), [&](const std::string& kv) {
      const size_t name_len = kv.find('=') + 1;
      return std::strncmp(*e, kv.c_str(), name_len) == 0;
    });
    if (!replaced) env.push_back(*e);
  }
  for (const std::string& kv : add) env.push_back(const_cast<char*>(kv.c_str()));
  env.push_back(nullptr);
  return env;
}

}  // namespace

StartedJob StartJob(char** argv, const JobStartOptions& o, const JobPipeEnds& ends) {
  const int sock = o.check_in ? o.check_in->fd : -1;
  const int beat = NumberForJob({ends.err, ends.beat, ends.metrics, sock});
  const int metrics = ends.metrics >= 0 ? NumberForJob({ends.err, ends.beat, ends.metrics, sock, beat}) : -1;
  std::vector<std::string> job_vars = {"GPULAUNCH_HEARTBEAT_FD=" + std::to_string(beat)};
  if (metrics >= 0) job_vars.push_back("GPULAUNCH_METRICS_FD=" + std::to_string(metrics));
  std::vector<char*> envp = JobEnvironment(job_vars);
  std::string line;
  uint64_t seq = 0;
  if (o.check_in && o.check_in->fd >= 0) {
    line.resize(o.check_in->before_pid.size() + 24 + o.check_in->after_pid.size() + kControlTagChars + 1);
    seq = o.check_in->session->ReserveSend();
  }
  JobProcess job{argv, envp.data(), getpid(), &o, &ends, beat, metrics, line.data(), seq};

  sigset_t all, shims_mask;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &shims_mask);
  StartedJob started;
  started.pid = vfork();
  if (started.pid == 0) BecomeJob(job);
  const int fork_errno = errno;
  sigprocmask(SIG_SETMASK, &shims_mask, nullptr);

  if (started.pid > 0) started.check_in_failed = job.check_in_failed;
  if (started.pid > 0 && job.exec_errno != 0) {  // said on the job's stderr, as the job would have
    const std::string why = "gpulaunch-shim: rank " + std::to_string(o.rank) + " cannot execute '" + argv[0] +
                            "': " + std::strerror(job.exec_errno) + "\n";
    WriteAll(ends.err, why.data(), why.size());
  }
  for (int fd : {ends.err, ends.beat, ends.metrics}) {
    if (fd >= 0) close(fd);
  }
  if (started.pid < 0) {
    std::fprintf(stderr, "gpulaunch-shim: rank %d: cannot fork: %s\n", o.rank, std::strerror(fork_errno));
  }
  return started;
}

}  // namespace gpulaunch
