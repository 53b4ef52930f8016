#include "launcher/base/process.h"

#include "common/strings.h"
#include "launcher/base/engine_activity.h"
#include "launcher/base/tag_demux.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <iterator>

namespace gpulaunch {
namespace {

int g_signal_pipe[2] = {-1, -1};

void OnSignal(int sig, siginfo_t* info, void*) {
  const int saved = errno;
  // Byte 0: signal number; byte 1: 1 when the terminal sent it.
  const unsigned char msg[2] = {static_cast<unsigned char>(sig),
                                static_cast<unsigned char>(info && info->si_code == SI_KERNEL ? 1 : 0)};
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], msg, sizeof msg);
  errno = saved;
}

std::vector<char*> CStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// The handlers gpulaunch may install; a spawned program starts with defaults.
constexpr int kResetInChild[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD, SIGPIPE};

// vfork + exec; the child gets default signal handling, no blocked signal and
// the given fds. With `die_with_us` it gets SIGTERM when this thread ends
// (PR_SET_PDEATHSIG).
//
// vfork, not fork: gpulaunch's address space is neither copied nor left
// copy-on-write, which a fork of it costs at every launch (page tables of
// every library it maps, then a fault per page it writes afterwards). The
// child shares this process's memory until it execs, so it makes system
// calls only: everything is prepared before, and a failed exec is reported
// here, after the child is gone. Every signal is blocked across vfork, so no
// handler of this process runs in the child before it resets them.
pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, int out_fd, int err_fd,
            bool die_with_us = false) {
  auto args = CStrings(argv);
  auto envp = CStrings(env);
  const pid_t parent = getpid();
  sigset_t all, callers_mask;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &callers_mask);
  volatile int exec_errno = 0;  // written by the child, read once it is gone
  const pid_t pid = vfork();
  if (pid == 0) {
    if (die_with_us) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(128 + SIGTERM);  // gone before prctl took effect
    }
    for (int sig : kResetInChild) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (out_fd >= 0) dup2(out_fd, STDOUT_FILENO);
    if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
    execvpe(args[0], args.data(), envp.data());
    exec_errno = errno;
    _exit(errno == ENOENT ? 127 : 126);
  }
  pthread_sigmask(SIG_SETMASK, &callers_mask, nullptr);
  if (pid > 0 && exec_errno != 0) {  // where the program's own stderr would have said it
    dprintf(err_fd >= 0 ? err_fd : STDERR_FILENO, "gpulaunch: cannot execute '%s': %s\n", argv[0].c_str(),
            std::strerror(exec_errno));
  }
  return pid;
}

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

}  // namespace

bool CapturedRun::Succeeded() const { return !timed_out && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }

CapturedRun RunCaptured(const std::vector<std::string>& argv_in, const std::vector<std::string>& env, int timeout_ms) {
  CapturedRun r;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    r.wait_status = 127 << 8;
    return r;
  }
  const pid_t pid = Spawn(argv_in, env, out[1], err[1]);
  close(out[1]);
  close(err[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  waitpid(pid, &r.wait_status, 0);
  return r;
}

namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr SteadyClock::time_point kNever{};
// How long an engine stopped after its job with SIGTERM (EngineLinger) has before SIGKILL.
constexpr std::chrono::seconds kEngineTermGrace{2};
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD};

bool IsStop(int sig) { return sig == SIGINT || sig == SIGTERM || sig == SIGHUP; }

// One engine run in the foreground: the poll set over the signal pipe and
// (with --tag) the engine's output, the stop sequence and its deadlines.
class EngineSupervision {
 public:
  EngineSupervision(const JobRunOptions& o, pid_t pid, int out_fd, int err_fd)
      : o_(o),
        pid_(pid),
        fds_{{g_signal_pipe[0], POLLIN, 0}, {out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}},
        demux_{TagDemux(Writer(STDOUT_FILENO)), TagDemux(Writer(STDERR_FILENO))},
        deadline_(SteadyClock::now() + std::chrono::milliseconds(o.timeout_ms)) {}

  JobRunResult Run() {
    while (!exited_ || fds_[1].fd >= 0 || fds_[2].fd >= 0) {
      const int ready = poll(fds_, 3, PollTimeoutMs());
      CheckLimits();
      if (ready == 0 && exited_) break;
      if (fds_[0].revents & POLLIN) TakeSignals();
      for (int i = 1; i <= 2; ++i) RelayOutput(i);
      if (!exited_) ReapOrEscalate();
    }
    for (int i = 1; i <= 2; ++i)
      if (fds_[i].fd >= 0) close(fds_[i].fd);
    return result_;
  }

 private:
  std::function<void(int, const std::string&)> Writer(int fd) const {
    return [fd, this](int rank, const std::string& line) {
      if (rank < 0) return WriteAll(fd, line + "\n");
      const std::string host = o_.host_of_rank ? o_.host_of_rank(rank) : "?";
      WriteAll(fd, "[" + std::to_string(rank) + "@" + host + "]: " + line + "\n");
    };
  }

  bool Stopping() const { return result_.timed_out || result_.stopped_by_watchdog; }

  int PollTimeoutMs() const {
    if (exited_) return 2000;  // drain what the engine left in the pipes
    int timeout = hard_kill_at_ != kNever || grace_ends_at_ != kNever ? 200 : -1;
    if (o_.timeout_ms > 0 && !Stopping()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - SteadyClock::now());
      timeout = static_cast<int>(std::clamp<int64_t>(left.count(), 0, timeout < 0 ? INT32_MAX : timeout));
    }
    if (o_.watchdog || o_.job_over) timeout = timeout < 0 ? 200 : std::min(timeout, 200);
    return timeout;
  }

  // A stop or forwarded signal, from the user or (SIGTERM) from a limit.
  void Handle(int sig, bool from_terminal) {
    if (IsStop(sig)) {
      if (!result_.user_signal) result_.user_signal = sig;
      if (++stop_requests_ >= 2) {
        if (o_.force_kill) o_.force_kill();
        hard_kill_at_ = SteadyClock::now() + std::chrono::seconds(3);
      }
    }
    if (exited_) return;
    // The engine first, so that it is already stopping the job when the
    // local ranks die: Open MPI 4.1's mpirun can crash when a stop signal
    // arrives while it aborts for a failed rank.
    // The grace counts from the stop request: delivering it to thousands of
    // ranks takes a while, and must not push their SIGKILL later.
    bool delivered = false;
    const auto grace_ends_at = SteadyClock::now() + std::chrono::milliseconds(o_.kill_grace_ms);
    if (IsStop(sig) && stop_requests_ == 1 && o_.signal_all_ranks && o_.signal_all_ranks(sig)) {
      delivered = true;
      grace_ends_at_ = grace_ends_at;
    }
    if (!delivered && (!from_terminal || stop_requests_ >= 2)) kill(pid_, sig);
    if (IsStop(sig) && !from_terminal && o_.signal_local_ranks) o_.signal_local_ranks(sig);
  }

  // Stops the job as SIGTERM would; whatever still runs after the engine's
  // own stop sequence is killed.
  void StopJob() {
    Handle(SIGTERM, false);
    hard_kill_at_ = SteadyClock::now() + std::chrono::milliseconds(o_.kill_grace_ms) * 2 + std::chrono::seconds(3);
  }

  // --timeout, the watchdog, and an engine that outlives a finished job.
  void CheckLimits() {
    if (exited_) return;
    if (o_.timeout_ms > 0 && !Stopping() && SteadyClock::now() >= deadline_) {
      result_.timed_out = true;
      StopJob();
    } else if (o_.watchdog && !Stopping() && o_.watchdog()) {
      result_.stopped_by_watchdog = true;
      StopJob();
    }
    if (result_.engine_killed_after_job) return;
    const auto now = SteadyClock::now();
    if (o_.job_over && !linger_ && (linger_ = o_.job_over())) activity_.emplace(pid_);
    if (!linger_) return;
    if (activity_->Sample()) quiet_since_ = now;  // the first sample, a baseline, says active
    if (now - quiet_since_ >= linger_->idle) {
      result_.engine_killed_after_job = true;
      if (linger_->term_first) {
        kill(pid_, SIGTERM);
        hard_kill_at_ = now + kEngineTermGrace;  // ReapOrEscalate sends SIGKILL then
      } else {
        kill(pid_, SIGKILL);
      }
    }
  }

  void TakeSignals() {
    unsigned char msg[2];
    while (read(g_signal_pipe[0], msg, sizeof msg) == sizeof msg) {
      if (msg[0] != SIGCHLD) {
        const bool first_stop = IsStop(msg[0]) && stop_requests_ == 0 && !Stopping();
        Handle(msg[0], msg[1] == 1);
        // After the ranks were told: what the caller writes at once (the
        // summary, before Slurm's SIGKILL may come) must not delay them.
        if (first_stop && o_.on_first_stop) o_.on_first_stop(msg[0]);
      }
    }
  }

  void RelayOutput(int i) {
    if (fds_[i].fd < 0 || !(fds_[i].revents & (POLLIN | POLLHUP | POLLERR))) return;
    char buf[65536];
    const ssize_t n = read(fds_[i].fd, buf, sizeof buf);
    if (n > 0) {
      demux_[i - 1].Feed(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      demux_[i - 1].Finish();
      close(fds_[i].fd);
      fds_[i].fd = -1;
    }
  }

  // The engine's exit, or the next step of the stop sequence when it is due.
  void ReapOrEscalate() {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      result_.wait_status = status;
    } else if (grace_ends_at_ != kNever && SteadyClock::now() > grace_ends_at_) {
      o_.signal_all_ranks(SIGKILL);
      grace_ends_at_ = kNever;
      hard_kill_at_ = SteadyClock::now() + std::chrono::seconds(3);
    } else if (hard_kill_at_ != kNever && SteadyClock::now() > hard_kill_at_) {
      kill(pid_, SIGKILL);
      if (o_.force_kill) o_.force_kill();
      hard_kill_at_ = kNever;
    }
  }

  const JobRunOptions& o_;
  const pid_t pid_;
  pollfd fds_[3];
  TagDemux demux_[2];
  const SteadyClock::time_point deadline_;
  JobRunResult result_;
  bool exited_ = false;
  int stop_requests_ = 0;
  SteadyClock::time_point hard_kill_at_{}, grace_ends_at_{};  // grace: after signal_all_ranks
  // Once job_over said the job is over: how long the engine may stay quiet
  // (engine_activity.h) before it is stopped, and how; since when it has been.
  std::optional<EngineLinger> linger_;
  std::optional<EngineActivity> activity_;
  SteadyClock::time_point quiet_since_{};
};

}  // namespace

JobRunResult RunJob(const JobRunOptions& o) {
  JobRunResult failed;
  failed.wait_status = 125 << 8;
  if (g_signal_pipe[0] < 0 && pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return failed;
  struct sigaction sa {};
  sa.sa_sigaction = OnSignal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct sigaction old[std::size(kForwarded)];
  for (size_t i = 0; i < std::size(kForwarded); ++i) sigaction(kForwarded[i], &sa, &old[i]);
  auto restore = [&] {
    for (size_t i = 0; i < std::size(kForwarded); ++i) sigaction(kForwarded[i], &old[i], nullptr);
  };
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (o.tag && (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)) {
    restore();
    return failed;
  }
  const pid_t pid = Spawn(o.argv, o.env, out[1], err[1], /*die_with_us=*/true);
  if (o.tag) {
    close(out[1]);
    close(err[1]);
  }
  const JobRunResult result = EngineSupervision(o, pid, out[0], err[0]).Run();
  restore();
  // The job is over; a late stop signal (a second Ctrl-C racing the end)
  // must not cost the caller its report.
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, SIG_IGN);
  return result;
}

}  // namespace gpulaunch
