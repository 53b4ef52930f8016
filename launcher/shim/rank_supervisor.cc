#include "launcher/shim/rank_supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <string>

#include "common/env.h"
#include "launcher/base/fd_io.h"
#include "launcher/shim/stack_dump.h"

namespace gpulaunch {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kHandled[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT, SIGCHLD};
constexpr size_t kTailLines = 20;
constexpr size_t kTailLineBytes = 500;
constexpr auto kBeatInterval = std::chrono::seconds(1);
// After the child ended, how long its stderr may stay open (held by a
// process it left behind) before the shim reports without the rest.
constexpr auto kDrainLimit = std::chrono::milliseconds(500);
constexpr int kStackToolTimeoutMs = 15000;
// From SIGTERM to SIGKILL for a rank whose gpulaunch went away.
constexpr auto kOrphanGrace = std::chrono::seconds(10);

int g_signal_pipe[2] = {-1, -1};

// Signals that ask a process to end, as engines send them in a teardown
// (mpirun's orted and slurmstepd: SIGTERM, then SIGKILL, which the shim
// cannot see) or a user at a terminal.
bool IsStopSignal(int sig) { return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT; }

void OnSignal(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &b, 1);
  errno = saved;
}

// The last lines of a byte stream.
class TailKeeper {
 public:
  void Feed(const char* data, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (data[i] == '\n') {
        Push();
      } else if (partial_.size() < kTailLineBytes) {
        partial_ += data[i];
      }
    }
  }
  std::deque<std::string> Finish() {
    if (!partial_.empty()) Push();
    return lines_;
  }

 private:
  void Push() {
    lines_.push_back(partial_);
    partial_.clear();
    if (lines_.size() > kTailLines) lines_.pop_front();
  }
  std::string partial_;
  std::deque<std::string> lines_;
};

// In the forked child: becomes the job, or exits 126/127 saying why not.
// `parent_ends` are the shim's ends of the pipes: closed here, or the go
// pipe would never reach end-of-file.
[[noreturn]] void BecomeJob(char** argv, int rank, pid_t shim, bool own_group, int go_fd, int err_fd, int beat_fd,
                            int metrics_fd, std::initializer_list<int> parent_ends) {
  for (int fd : parent_ends) close(fd);
  if (own_group) setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != shim) _exit(128 + SIGKILL);  // the shim died before prctl took effect
  prctl(PR_SET_PTRACER, shim, 0, 0, 0);         // EINVAL without Yama: nothing to allow
  for (int sig : kHandled) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(err_fd, STDERR_FILENO);
  const int beat = fcntl(beat_fd, F_DUPFD, 3);  // a copy without FD_CLOEXEC
  if (beat >= 0) setenv("GPULAUNCH_HEARTBEAT_FD", std::to_string(beat).c_str(), 1);
  const int metrics = metrics_fd >= 0 ? fcntl(metrics_fd, F_DUPFD, 3) : -1;
  if (metrics >= 0) setenv("GPULAUNCH_METRICS_FD", std::to_string(metrics).c_str(), 1);
  char c;
  while (read(go_fd, &c, 1) < 0 && errno == EINTR) {
  }
  execvp(argv[0], argv);
  const int err = errno;
  std::fprintf(stderr, "gpulaunch-shim: rank %d cannot execute '%s': %s\n", rank, argv[0], std::strerror(err));
  _exit(err == ENOENT ? 127 : 126);
}

}  // namespace

// Splits the metrics pipe into lines (one JSON record each) and forwards
// them to gpulaunch; an over-long line is dropped whole.
class MetricsForwarder {
 public:
  MetricsForwarder(int rank, ControlClient* control) : rank_(rank), control_(control) {}
  void Feed(const char* data, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      if (data[i] != '\n') {
        if (partial_.size() <= kMaxMetricBytes) partial_ += data[i];
        continue;
      }
      if (control_ && control_->connected() && !partial_.empty() && partial_.size() <= kMaxMetricBytes) {
        ControlMessage m;
        m.kind = ControlMessage::Kind::kMetric;
        m.rank = rank_;
        m.text = partial_;
        control_->Send(m);
      }
      partial_.clear();
    }
  }
  // Reads what the pipe holds now; false at end-of-file or error.
  bool Drain(int fd) {
    char buf[16384];
    for (;;) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n > 0) {
        Feed(buf, static_cast<size_t>(n));
        continue;
      }
      return n < 0 && (errno == EAGAIN || errno == EINTR);
    }
  }

 private:
  int rank_;
  ControlClient* control_;
  std::string partial_;
};

int SuperviseRank(char** argv, const SuperviseOptions& o) {
  int go[2], err[2], beat[2], metrics[2] = {-1, -1};
  // With --profile, runtime step metrics come through their own pipe
  // (GPULAUNCH_METRICS_FD): blocking for the rank, so no record is lost.
  if (EnvIs("GPULAUNCH_PROFILE", "1") && pipe2(metrics, O_CLOEXEC) == 0) {
    fcntl(metrics[0], F_SETFL, fcntl(metrics[0], F_GETFL) | O_NONBLOCK);
  }
  if (pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0 || pipe2(go, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
      pipe2(beat, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::fprintf(stderr, "gpulaunch-shim: rank %d: cannot create pipes: %s\n", o.rank, std::strerror(errno));
    return 125 << 8;
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : kHandled) sigaction(sig, &sa, nullptr);

  const pid_t shim = getpid();
  const pid_t child = fork();
  if (child == 0) {
    BecomeJob(argv, o.rank, shim, o.forward_signals, go[0], err[1], beat[1], metrics[1],
              {go[1], err[0], beat[0], metrics[0], g_signal_pipe[0], g_signal_pipe[1]});
  }
  close(go[0]);
  close(err[1]);
  close(beat[1]);
  if (metrics[1] >= 0) close(metrics[1]);
  if (child < 0) {
    std::fprintf(stderr, "gpulaunch-shim: rank %d: cannot fork: %s\n", o.rank, std::strerror(errno));
    return 125 << 8;
  }
  if (o.on_started) o.on_started(child);
  close(go[1]);  // the child execs now

  ControlClient* control = o.control && o.control->connected() ? o.control : nullptr;
  pollfd fds[5] = {{g_signal_pipe[0], POLLIN, 0}, {err[0], POLLIN, 0}, {beat[0], POLLIN, 0},
                   {control ? control->fd() : -1, POLLIN, 0}, {metrics[0], POLLIN, 0}};
  MetricsForwarder forwarder(o.rank, control);
  TailKeeper tail;
  bool exited = false, beat_pending = false, told_to_stop = false;
  int status = 0;
  Clock::time_point exited_at{}, beat_sent{}, orphan_kill_at{};
  for (;;) {
    int timeout = -1;
    if (beat_pending) {
      const auto wait = kBeatInterval - (Clock::now() - beat_sent);
      timeout = static_cast<int>(std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(wait).count()));
    }
    if (orphan_kill_at != Clock::time_point{}) timeout = timeout < 0 ? 200 : std::min(timeout, 200);
    if (exited) timeout = 50;
    poll(fds, 5, timeout);
    if (fds[0].revents & POLLIN) {
      unsigned char sig;
      while (read(g_signal_pipe[0], &sig, 1) == 1) {
        if (sig == SIGCHLD || exited) continue;
        told_to_stop = told_to_stop || IsStopSignal(sig);
        if (o.forward_signals) kill(child, sig);
      }
    }
    if (fds[1].fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      char buf[65536];
      const ssize_t n = read(fds[1].fd, buf, sizeof buf);
      if (n > 0) {
        WriteAll(STDERR_FILENO, buf, static_cast<size_t>(n));
        tail.Feed(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[1].fd);
        fds[1].fd = -1;
      }
    }
    if (fds[2].revents & POLLIN) {
      char buf[4096];
      while (read(fds[2].fd, buf, sizeof buf) > 0) {
      }
      beat_pending = true;
    }
    if (fds[4].fd >= 0 && (fds[4].revents & (POLLIN | POLLHUP | POLLERR)) && !forwarder.Drain(fds[4].fd)) {
      close(fds[4].fd);
      fds[4].fd = -1;
    }
    if (beat_pending && control && Clock::now() - beat_sent >= kBeatInterval) {
      ControlMessage m;
      m.kind = ControlMessage::Kind::kBeat;
      m.rank = o.rank;
      control->Send(m);
      beat_sent = Clock::now();
      beat_pending = false;
    }
    if (control && (fds[3].revents & (POLLIN | POLLHUP | POLLERR))) {
      for (const std::string& request : control->ReadRequests()) {
        if (exited) continue;
        if (request.rfind("signal ", 0) == 0) {
          const int sig = std::atoi(request.c_str() + 7);
          if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGKILL) {
            told_to_stop = true;
            kill(child, sig);
          }
          continue;
        }
        if (request != "stacks") continue;
        const std::string stacks = DumpStacks(child, kStackToolTimeoutMs);
        ControlMessage m;
        m.kind = ControlMessage::Kind::kStacks;
        m.rank = o.rank;
        m.payload_bytes = stacks.size();
        control->Send(m, stacks);
      }
    }
    if (control && !control->connected()) {
      // gpulaunch went away while the rank runs (killed, or its host lost):
      // nobody would stop this rank any more, so it is stopped now.
      control = nullptr;
      fds[3].fd = -1;
      if (!exited) {
        std::fprintf(stderr, "gpulaunch-shim: rank %d lost gpulaunch; stopping the rank (SIGTERM, SIGKILL %d s later)\n",
                     o.rank, static_cast<int>(kOrphanGrace.count()));
        told_to_stop = true;
        kill(child, SIGTERM);
        orphan_kill_at = Clock::now() + kOrphanGrace;
      }
    }
    if (!exited && orphan_kill_at != Clock::time_point{} && Clock::now() >= orphan_kill_at) {
      kill(child, SIGKILL);
      orphan_kill_at = {};
    }
    if (!exited && waitpid(child, &status, WNOHANG) == child) {
      exited = true;
      exited_at = Clock::now();
    }
    if (exited && (fds[1].fd < 0 || Clock::now() - exited_at > kDrainLimit)) break;
  }
  if (fds[1].fd >= 0) close(fds[1].fd);
  close(beat[0]);
  if (fds[4].fd >= 0) {  // the last steps' records, written just before the exit
    forwarder.Drain(fds[4].fd);
    close(fds[4].fd);
  }
  if (control) {
    ControlMessage m;
    m.rank = o.rank;
    m.kind = ControlMessage::Kind::kTail;
    for (const std::string& line : tail.Finish()) {
      m.text = line;
      control->Send(m);
    }
    m.kind = ControlMessage::Kind::kExit;
    m.signaled = WIFSIGNALED(status);
    m.value = m.signaled ? WTERMSIG(status) : WEXITSTATUS(status);
    m.told_to_stop = told_to_stop;
    control->Send(m);
  }
  return status;
}

void ExitLike(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);  // the child already dumped one if it was going to
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    raise(sig);
    _exit(128 + sig);
  }
  std::fflush(nullptr);
  _exit(WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 125);
}

}  // namespace gpulaunch
