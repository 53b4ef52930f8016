#include "launcher/shim/rank_supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/env.h"
#include "common/heartbeat_pipe.h"
#include "launcher/base/fd_io.h"
#include "launcher/shim/child_streams.h"
#include "launcher/shim/descendants.h"
#include "launcher/shim/job_start.h"
#include "launcher/shim/stack_dump.h"

namespace gpulaunch {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kHandled[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCONT, SIGCHLD};
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
        helpers_(child),
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
      // The shim is the subreaper of everything the rank started: orphans
      // that end are reaped here, the main process among them.
      if (const std::optional<int> main = ReapOrphans(child_); main && !exited_) {
        status_ = *main;
        exited_ = true;
        exited_at_ = Clock::now();
        helpers_.Start(exited_at_ + o_.kill_grace, true);  // no-op when a stop started it already
      }
      if (helpers_.started() && !helpers_done_ && exited_) {
        helpers_done_ = helpers_.Turn();
        if (helpers_done_) helpers_done_at_ = Clock::now();
      } else if (helpers_.started() && !exited_) {
        helpers_.Turn();  // a stop under way: helpers found later get their SIGTERM too
      }
      // Once the helpers are gone nothing holds the stderr pipe but the shim.
      if (exited_ && helpers_done_ && (fds_[kStderr].fd < 0 || Clock::now() - helpers_done_at_ > kDrainLimit)) break;
    }
    Finish();
    if (MustWaitForEveryStart()) WaitForEveryStart();
    return status_;
  }

 private:
  enum Slot { kSignals, kStderr, kBeat, kControl, kMetrics };

  int PollTimeoutMs() const {
    int timeout = -1;
    // Without gpulaunch, beats go nowhere and wake nobody.
    if (beat_pending_ && control_) timeout = Sooner(timeout, MsUntil(beat_sent_ + kBeatInterval));
    if (orphan_kill_at_ != Clock::time_point{}) timeout = Sooner(timeout, 200);
    if (helpers_.started()) timeout = Sooner(timeout, 50);
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
      if (IsStopSignal(sig)) StopHelpersToo();
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
    while ((n = read(fds_[kBeat].fd, buf, sizeof buf)) > 0) {
      beat_pending_ = true;
      if (!singleton_told_ && std::memchr(buf, kHeartbeatSingletonByte, static_cast<size_t>(n)) && control_) {
        ControlMessage m;
        m.kind = ControlMessage::Kind::kSingleton;
        m.rank = o_.rank;
        control_->Send(m);
        singleton_told_ = true;
      }
    }
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

  // gpulaunch's requests: its own stop sequence, or the stacks; and the news
  // that every rank has started.
  void AnswerRequests() {
    for (const std::string& request : control_->ReadRequests()) {
      if (request == "started") every_rank_started_ = true;
      if (exited_) {
        stop_asked_after_end_ = stop_asked_after_end_ || request.rfind("signal ", 0) == 0;
        continue;
      }
      if (request.rfind("signal ", 0) == 0) {
        const int sig = std::atoi(request.c_str() + 7);
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGKILL) {
          told_to_stop_ = true;
          kill(child_, sig);
          StopHelpersToo();
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

  // A job process that ended on its own with code 0, under an engine that
  // miscounts one that ends before every rank started (rank_supervisor.h).
  bool MustWaitForEveryStart() const {
    return o_.wait_for_every_start && control_ && control_->connected() && !every_rank_started_ && !told_to_stop_ &&
           WIFEXITED(status_) && WEXITSTATUS(status_) == 0;
  }

  // Until `started`, the limit, a stop signal (the engine's, or gpulaunch's
  // stop sequence), or gpulaunch gone.
  void WaitForEveryStart() {
    const auto give_up_at = Clock::now() + o_.start_wait_limit;
    pollfd fds[2] = {{g_signal_pipe[0], POLLIN, 0}, {control_->fd(), POLLIN, 0}};
    while (!every_rank_started_ && !stop_asked_after_end_ && control_->connected()) {
      const int left = MsUntil(give_up_at);
      if (left == 0) return;
      if (poll(fds, 2, left) < 0 && errno != EINTR) return;
      unsigned char sig;
      while (read(g_signal_pipe[0], &sig, 1) == 1)
        if (IsStopSignal(sig)) return;
      if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) AnswerRequests();
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
    StopHelpersToo();
  }

  // A stop reaches what the rank started as well as the rank: helpers in the
  // job's process group or escaped from it get SIGTERM now (unless the
  // engine signals every process itself, as slurmstepd does), and SIGKILL
  // before the engine's own SIGKILL to the shim could come (three quarters
  // of the kill grace), whenever the main process ends.
  void StopHelpersToo() {
    helpers_.Start(Clock::now() + o_.kill_grace * 3 / 4, o_.forward_signals);
  }

  // The last metrics, the stderr tail and the exit report, in that order.
  void Finish() {
    if (fds_[kStderr].fd >= 0) CloseSlot(kStderr);
    if (fds_[kBeat].fd >= 0) CloseSlot(kBeat);
    if (fds_[kMetrics].fd >= 0) {  // the last steps' records, written just before the exit
      forwarder_.Drain(fds_[kMetrics].fd);
      CloseSlot(kMetrics);
    }
    if (helpers_.gave_up()) {
      std::fprintf(stderr, "gpulaunch-shim: rank %d: processes it started did not end even after SIGKILL (uninterruptible?)\n",
                   o_.rank);
    }
    if (!control_) return;
    ControlMessage m;
    m.rank = o_.rank;
    m.kind = ControlMessage::Kind::kHelper;
    for (const HelperStopper::Helper& h : helpers_.helpers()) {
      m.pid = h.pid;
      m.text = h.command;
      m.signaled = h.killed;
      const auto gone = h.gone == Clock::time_point{} ? Clock::now() : h.gone;
      m.value = static_cast<int>(std::max<int64_t>(
          0, std::chrono::duration_cast<std::chrono::milliseconds>(gone - exited_at_).count()));
      control_->Send(m);
    }
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
  HelperStopper helpers_;
  bool exited_ = false, beat_pending_ = false, told_to_stop_ = false, helpers_done_ = false, singleton_told_ = false;
  bool every_rank_started_ = false, stop_asked_after_end_ = false;
  int status_ = 0;
  Clock::time_point exited_at_{}, beat_sent_{}, orphan_kill_at_{}, helpers_done_at_{};
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

  JobStartOptions start;
  start.rank = o.rank;
  start.own_group = o.forward_signals;
  start.check_in = &o.check_in;
  start.reset_signals = kHandled;
  const StartedJob job = StartJob(argv, start, {p.err[1], p.beat[1], p.metrics[1]});
  if (job.pid < 0) return 125 << 8;
  if (job.check_in_failed && o.control && o.control->connected()) {
    std::fprintf(stderr, "gpulaunch-shim: rank %d could not check in with gpulaunch at %s; the rank runs without reporting\n",
                 o.rank, o.control->address().c_str());
    o.control->Close();
  }
  return Supervision(o, job.pid, p).Run();
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
