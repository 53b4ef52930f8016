#include "launcher/shim/rank_supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "common/env.h"
#include "launcher/base/fd_io.h"
#include "launcher/shim/child_streams.h"
#include "launcher/shim/stack_dump.h"

extern char** environ;

namespace gpulaunch {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kHandled[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT, SIGCHLD};
constexpr auto kBeatInterval = std::chrono::seconds(1);
// After the child ended, how long its stderr may stay open (held by a
// process it left behind) before the shim reports without the rest.
constexpr auto kDrainLimit = std::chrono::milliseconds(500);
constexpr int kStackToolTimeoutMs = 15000;
// How long the job process waits for room to send its check-in.
constexpr int kCheckInSendWaitMs = 5000;
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

// What the job process needs between vfork and exec, all prepared by the
// shim beforehand: the vfork child shares the shim's memory until it execs,
// so it makes system calls only (no allocation, no stdio, no setenv).
struct JobStart {
  char** argv;
  char** envp;             // the shim's environment with the job's descriptors named
  pid_t shim;
  bool own_group;
  int err_fd;              // becomes the job's stderr
  int beat_fd, beat_as;    // the heartbeat pipe's end, and the number the job has it as
  int metrics_fd, metrics_as;  // the same for step records; -1: none
  const CheckInLine* check_in;
  char* line;              // room for the check-in line with any pid
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
// The shim's pipe ends are close-on-exec; the descriptors the job keeps were
// duplicated without that flag by the shim. Every signal is blocked on entry
// (the shim blocked them around vfork): the shim's handlers are reset first,
// so a signal that came meanwhile reaches the job as it would have without
// the shim, never the shim's handler in this process.
[[noreturn]] void BecomeJob(JobStart& s) {
  for (int sig : kHandled) signal(sig, SIG_DFL);  // this process's own table: vfork does not share it
  if (s.own_group) setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != s.shim) _exit(128 + SIGKILL);  // the shim died before prctl took effect
  prctl(PR_SET_PTRACER, s.shim, 0, 0, 0);         // EINVAL without Yama: nothing to allow
  if (s.check_in->fd >= 0) {
    const std::string& before = s.check_in->before_pid;
    const std::string& after = s.check_in->after_pid;
    size_t n = before.copy(s.line, before.size());
    n += WriteDecimal(s.line + n, getpid());
    n += after.copy(s.line + n, after.size());
    s.check_in_failed = !SendAll(s.check_in->fd, s.line, n, kCheckInSendWaitMs);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(s.err_fd, STDERR_FILENO);
  dup2(s.beat_fd, s.beat_as);  // dup2 leaves the copy open across exec
  if (s.metrics_fd >= 0) dup2(s.metrics_fd, s.metrics_as);
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

// The pipes between the shim and its child, by what they carry.
struct ChildPipes {
  int err[2] = {-1, -1};      // the child's stderr
  int beat[2] = {-1, -1};     // progress bytes (GPULAUNCH_HEARTBEAT_FD)
  int metrics[2] = {-1, -1};  // step records with --profile (GPULAUNCH_METRICS_FD)
};

// One supervision: the child, the poll set over its pipes and the control
// connection, and what the exit report will say. Run() returns the child's
// wait status once it ended and its stderr was drained.
class Supervision {
 public:
  Supervision(const SuperviseOptions& o, pid_t child, const ChildPipes& p)
      : o_(o),
        child_(child),
        control_(o.control && o.control->connected() ? o.control : nullptr),
        fds_{{g_signal_pipe[0], POLLIN, 0}, {p.err[0], POLLIN, 0}, {p.beat[0], POLLIN, 0},
             {control_ ? control_->fd() : -1, POLLIN, 0}, {p.metrics[0], POLLIN, 0}},
        forwarder_(o.rank, control_),
        settle_at_(o.once_settled ? Clock::now() + o.settle_after : Clock::time_point{}) {}

  int Run() {
    for (;;) {
      poll(fds_, 5, PollTimeoutMs());
      if (o_.wakeups) ++*o_.wakeups;
      if (fds_[kSignals].revents & POLLIN) PassOnSignals();
      if (fds_[kStderr].fd >= 0 && (fds_[kStderr].revents & (POLLIN | POLLHUP | POLLERR))) RelayStderr();
      if (fds_[kBeat].fd >= 0 && (fds_[kBeat].revents & (POLLIN | POLLHUP | POLLERR))) TakeBeats();
      if (fds_[kMetrics].fd >= 0 && (fds_[kMetrics].revents & (POLLIN | POLLHUP | POLLERR)) &&
          !forwarder_.Drain(fds_[kMetrics].fd)) {
        CloseSlot(kMetrics);
      }
      SendBeatWhenDue();
      if (control_ && (fds_[kControl].revents & (POLLIN | POLLHUP | POLLERR))) AnswerRequests();
      if (control_ && !control_->connected()) StopOrphan();
      if (!exited_ && orphan_kill_at_ != Clock::time_point{} && Clock::now() >= orphan_kill_at_) {
        kill(child_, SIGKILL);
        orphan_kill_at_ = {};
      }
      RunOnceSettled();
      if (!exited_ && waitpid(child_, &status_, WNOHANG) == child_) {
        exited_ = true;
        exited_at_ = Clock::now();
      }
      if (exited_ && (fds_[kStderr].fd < 0 || Clock::now() - exited_at_ > kDrainLimit)) break;
    }
    Finish();
    return status_;
  }

 private:
  enum Slot { kSignals, kStderr, kBeat, kControl, kMetrics };

  int PollTimeoutMs() const {
    int timeout = -1;
    // Without gpulaunch, beats go nowhere and wake nobody.
    if (beat_pending_ && control_) timeout = Sooner(timeout, MsUntil(beat_sent_ + kBeatInterval));
    if (orphan_kill_at_ != Clock::time_point{}) timeout = Sooner(timeout, 200);
    if (settle_at_ != Clock::time_point{}) timeout = Sooner(timeout, MsUntil(settle_at_));
    return exited_ ? 50 : timeout;
  }

  // Rounded up: a timeout rounded down to 0 would spin through the last millisecond.
  static int MsUntil(Clock::time_point when) {
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(when - Clock::now()).count();
    return static_cast<int>(std::max<int64_t>(0, ms));
  }

  // The sooner of two poll timeouts, -1 meaning none.
  static int Sooner(int timeout, int ms) { return timeout < 0 ? ms : std::min(timeout, ms); }

  // once_settled: due once the child ran settle_after; dropped when the
  // child ended or was told to stop first.
  void RunOnceSettled() {
    if (settle_at_ == Clock::time_point{}) return;
    if (exited_ || told_to_stop_) {
      settle_at_ = {};
    } else if (Clock::now() >= settle_at_) {
      settle_at_ = {};
      o_.once_settled();
    }
  }

  void CloseSlot(Slot slot) {
    close(fds_[slot].fd);
    fds_[slot].fd = -1;
  }

  // Signals the shim caught: passed on as themselves (when forwarding), and
  // a stop signal marks the exit report `stopped`.
  void PassOnSignals() {
    unsigned char sig;
    while (read(g_signal_pipe[0], &sig, 1) == 1) {
      if (sig == SIGCHLD || exited_) continue;
      told_to_stop_ = told_to_stop_ || IsStopSignal(sig);
      if (o_.forward_signals) kill(child_, sig);
    }
  }

  void RelayStderr() {
    char buf[65536];
    const ssize_t n = read(fds_[kStderr].fd, buf, sizeof buf);
    if (n > 0) {
      WriteAll(STDERR_FILENO, buf, static_cast<size_t>(n));
      tail_.Feed(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      CloseSlot(kStderr);
    }
  }

  // Bytes are progress. End-of-file (the job closed its end, or ended) closes
  // the slot: a pipe that hung up stays readable, and polling it again would
  // spin for as long as the job runs.
  void TakeBeats() {
    char buf[4096];
    ssize_t n;
    while ((n = read(fds_[kBeat].fd, buf, sizeof buf)) > 0) beat_pending_ = true;
    if (n == 0) CloseSlot(kBeat);
  }

  void SendBeatWhenDue() {
    if (!beat_pending_ || !control_ || Clock::now() - beat_sent_ < kBeatInterval) return;
    ControlMessage m;
    m.kind = ControlMessage::Kind::kBeat;
    m.rank = o_.rank;
    control_->Send(m);
    beat_sent_ = Clock::now();
    beat_pending_ = false;
  }

  // gpulaunch's requests: its own stop sequence, or the stacks.
  void AnswerRequests() {
    for (const std::string& request : control_->ReadRequests()) {
      if (exited_) continue;
      if (request.rfind("signal ", 0) == 0) {
        const int sig = std::atoi(request.c_str() + 7);
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGKILL) {
          told_to_stop_ = true;
          kill(child_, sig);
        }
        continue;
      }
      if (request != "stacks") continue;
      const std::string stacks = DumpStacks(child_, kStackToolTimeoutMs);
      ControlMessage m;
      m.kind = ControlMessage::Kind::kStacks;
      m.rank = o_.rank;
      m.payload_bytes = stacks.size();
      control_->Send(m, stacks);
    }
  }

  // gpulaunch went away while the rank runs (killed, or its host lost):
  // nobody would stop this rank any more, so it is stopped now.
  void StopOrphan() {
    control_ = nullptr;
    fds_[kControl].fd = -1;
    if (exited_) return;
    std::fprintf(stderr, "gpulaunch-shim: rank %d lost gpulaunch; stopping the rank (SIGTERM, SIGKILL %d s later)\n",
                 o_.rank, static_cast<int>(kOrphanGrace.count()));
    told_to_stop_ = true;
    kill(child_, SIGTERM);
    orphan_kill_at_ = Clock::now() + kOrphanGrace;
  }

  // The last metrics, the stderr tail and the exit report, in that order.
  void Finish() {
    if (fds_[kStderr].fd >= 0) CloseSlot(kStderr);
    if (fds_[kBeat].fd >= 0) CloseSlot(kBeat);
    if (fds_[kMetrics].fd >= 0) {  // the last steps' records, written just before the exit
      forwarder_.Drain(fds_[kMetrics].fd);
      CloseSlot(kMetrics);
    }
    if (!control_) return;
    ControlMessage m;
    m.rank = o_.rank;
    m.kind = ControlMessage::Kind::kTail;
    for (const std::string& line : tail_.Finish()) {
      m.text = line;
      control_->Send(m);
    }
    m.kind = ControlMessage::Kind::kExit;
    m.signaled = WIFSIGNALED(status_);
    m.value = m.signaled ? WTERMSIG(status_) : WEXITSTATUS(status_);
    m.told_to_stop = told_to_stop_;
    control_->Send(m);
  }

  const SuperviseOptions& o_;
  const pid_t child_;
  ControlClient* control_;
  pollfd fds_[5];
  MetricsForwarder forwarder_;
  TailKeeper tail_;
  bool exited_ = false, beat_pending_ = false, told_to_stop_ = false;
  int status_ = 0;
  Clock::time_point exited_at_{}, beat_sent_{}, orphan_kill_at_{};
  Clock::time_point settle_at_;  // when once_settled is due; zero: done or dropped
};

bool OpenPipes(ChildPipes& p) {
  // With --profile, runtime step metrics come through their own pipe:
  // blocking for the rank, so no record is lost.
  if (EnvIs("GPULAUNCH_PROFILE", "1") && pipe2(p.metrics, O_CLOEXEC) == 0) {
    fcntl(p.metrics[0], F_SETFL, fcntl(p.metrics[0], F_GETFL) | O_NONBLOCK);
  }
  // The signal pipe outlives a supervision (its handlers stay installed), so
  // a process that supervises again (the tests) reuses it.
  const bool signals = g_signal_pipe[0] >= 0 || pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) == 0;
  return signals && pipe2(p.err, O_CLOEXEC) == 0 && pipe2(p.beat, O_CLOEXEC | O_NONBLOCK) == 0;
}

// Starts the job process (BecomeJob) and returns its pid, or -1 after saying
// why it could not. The shim's copies of the job's pipe ends are closed here.
pid_t StartJob(char** argv, const SuperviseOptions& o, ChildPipes& p) {
  // The numbers the job has its pipe ends as, low as they were without the
  // shim (a shell script can redirect only 0 to 9), named in its environment.
  const int beat = NumberForJob({p.err[1], p.beat[1], p.metrics[1], o.check_in.fd});
  const int metrics = p.metrics[1] >= 0 ? NumberForJob({p.err[1], p.beat[1], p.metrics[1], o.check_in.fd, beat}) : -1;
  std::vector<std::string> job_vars = {"GPULAUNCH_HEARTBEAT_FD=" + std::to_string(beat)};
  if (metrics >= 0) job_vars.push_back("GPULAUNCH_METRICS_FD=" + std::to_string(metrics));
  std::vector<char*> envp = JobEnvironment(job_vars);
  std::string line(o.check_in.before_pid.size() + 24 + o.check_in.after_pid.size(), '\0');
  JobStart start{argv,     envp.data(), getpid(), o.forward_signals, p.err[1], p.beat[1], beat, p.metrics[1],
                 metrics,  &o.check_in, line.data()};
  // vfork: no copy of the shim's address space; the shim resumes once the
  // job exec'd (or failed to).
  sigset_t all, shims_mask;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &shims_mask);
  const pid_t child = vfork();
  if (child == 0) BecomeJob(start);
  const int fork_errno = errno;
  sigprocmask(SIG_SETMASK, &shims_mask, nullptr);
  if (child > 0 && start.check_in_failed) {
    std::fprintf(stderr, "gpulaunch-shim: rank %d could not check in with gpulaunch\n", o.rank);
  }
  if (child > 0 && start.exec_errno != 0) {  // said on the job's stderr, as the job would have
    const std::string why = "gpulaunch-shim: rank " + std::to_string(o.rank) + " cannot execute '" + argv[0] +
                            "': " + std::strerror(start.exec_errno) + "\n";
    WriteAll(p.err[1], why.data(), why.size());
  }
  for (int fd : {p.err[1], p.beat[1], p.metrics[1]}) {
    if (fd >= 0) close(fd);
  }
  if (child < 0) std::fprintf(stderr, "gpulaunch-shim: rank %d: cannot fork: %s\n", o.rank, std::strerror(fork_errno));
  return child;
}

}  // namespace

int SuperviseRank(char** argv, const SuperviseOptions& o) {
  ChildPipes p;
  if (!OpenPipes(p)) {
    std::fprintf(stderr, "gpulaunch-shim: rank %d: cannot create pipes: %s\n", o.rank, std::strerror(errno));
    return 125 << 8;
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig : kHandled) sigaction(sig, &sa, nullptr);

  const pid_t child = StartJob(argv, o, p);
  if (child < 0) return 125 << 8;
  return Supervision(o, child, p).Run();
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
