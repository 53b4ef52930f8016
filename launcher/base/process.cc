#include "launcher/base/process.h"

#include "launcher/base/tag_demux.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

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

// fork + exec; the child gets default signal handling and the given fds.
pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, int out_fd, int err_fd) {
  auto args = CStrings(argv);
  auto envp = CStrings(env);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD, SIGPIPE}) signal(sig, SIG_DFL);
  if (out_fd >= 0) dup2(out_fd, STDOUT_FILENO);
  if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
  execvpe(argv[0].c_str(), args.data(), envp.data());
  const char* why = strerror(errno);
  dprintf(STDERR_FILENO, "gpulaunch: cannot execute '%s': %s\n", argv[0].c_str(), why);
  _exit(errno == ENOENT ? 127 : 126);
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

std::vector<std::string> EnvironmentWith(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (!overrides.count(key)) env.push_back(kv);
  }
  for (const auto& [k, v] : overrides) env.push_back(k + "=" + v);
  return env;
}

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

JobRunResult RunJob(const JobRunOptions& o) {
  JobRunResult result;
  if (g_signal_pipe[0] < 0 && pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    result.wait_status = 125 << 8;
    return result;
  }
  const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD};
  struct sigaction sa {};
  sa.sa_sigaction = OnSignal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct sigaction old[6];
  for (int i = 0; i < 6; ++i) sigaction(forwarded[i], &sa, &old[i]);

  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (o.tag && (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)) {
    for (int i = 0; i < 6; ++i) sigaction(forwarded[i], &old[i], nullptr);
    result.wait_status = 125 << 8;
    return result;
  }
  const pid_t pid = Spawn(o.argv, o.env, o.tag ? out[1] : -1, o.tag ? err[1] : -1);
  if (o.tag) {
    close(out[1]);
    close(err[1]);
  }
  auto writer = [&o](int fd) {
    return [fd, &o](int rank, const std::string& line) {
      if (rank < 0) return WriteAll(fd, line + "\n");
      const std::string host = o.host_of_rank ? o.host_of_rank(rank) : "?";
      WriteAll(fd, "[" + std::to_string(rank) + "@" + host + "]: " + line + "\n");
    };
  };
  TagDemux demux[2] = {TagDemux(writer(STDOUT_FILENO)), TagDemux(writer(STDERR_FILENO))};
  pollfd fds[3] = {{g_signal_pipe[0], POLLIN, 0}, {o.tag ? out[0] : -1, POLLIN, 0}, {o.tag ? err[0] : -1, POLLIN, 0}};
  bool exited = false;
  int stop_requests = 0;
  std::chrono::steady_clock::time_point hard_kill_at{};
  std::chrono::steady_clock::time_point grace_ends_at{};  // after signal_all_ranks
  // A stop or forwarded signal, from the user or (SIGTERM) from --timeout.
  auto handle = [&](int sig, bool from_terminal) {
    if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
      if (!result.user_signal) result.user_signal = sig;
      ++stop_requests;
      if (stop_requests >= 2) {
        if (o.force_kill) o.force_kill();
        hard_kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(3);
      }
    }
    // The engine first, so that it is already stopping the job when the
    // local ranks die: Open MPI 4.1's mpirun can crash when a stop signal
    // arrives while it aborts for a failed rank.
    const bool stop = sig == SIGINT || sig == SIGTERM || sig == SIGHUP;
    bool delivered = false;
    if (!exited && stop && stop_requests == 1 && o.signal_all_ranks && o.signal_all_ranks(sig)) {
      delivered = true;
      grace_ends_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(o.kill_grace_ms);
    }
    if (!exited && !delivered && (!from_terminal || stop_requests >= 2)) kill(pid, sig);
    if (!exited && stop && !from_terminal && o.signal_local_ranks) o.signal_local_ranks(sig);
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(o.timeout_ms);
  std::chrono::steady_clock::time_point linger_until{};  // set by job_over
  while (!exited || (fds[1].fd >= 0 || fds[2].fd >= 0)) {
    int timeout = -1;
    if ((hard_kill_at != std::chrono::steady_clock::time_point{} ||
         grace_ends_at != std::chrono::steady_clock::time_point{}) && !exited) {
      timeout = 200;
    }
    const bool stopping = result.timed_out || result.stopped_by_watchdog;
    if (o.timeout_ms > 0 && !exited && !stopping) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      timeout = static_cast<int>(std::clamp<int64_t>(left.count(), 0, timeout < 0 ? INT32_MAX : timeout));
    }
    if ((o.watchdog || o.job_over) && !exited) timeout = timeout < 0 ? 200 : std::min(timeout, 200);
    if (exited) timeout = 2000;  // drain what the engine left in the pipes
    const int ready = poll(fds, 3, timeout);
    // Stops the job as SIGTERM would; whatever still runs after the engine's
    // own stop sequence is killed.
    auto stop_job = [&] {
      handle(SIGTERM, false);
      hard_kill_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(o.kill_grace_ms) * 2 +
                     std::chrono::seconds(3);
    };
    if (o.timeout_ms > 0 && !exited && !stopping && std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      stop_job();
    } else if (o.watchdog && !exited && !stopping && o.watchdog()) {
      result.stopped_by_watchdog = true;
      stop_job();
    }
    if (o.job_over && !exited && linger_until == std::chrono::steady_clock::time_point{} && o.job_over()) {
      linger_until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    }
    if (!exited && linger_until != std::chrono::steady_clock::time_point{} &&
        std::chrono::steady_clock::now() >= linger_until && !result.engine_killed_after_job) {
      result.engine_killed_after_job = true;
      kill(pid, SIGKILL);
    }
    if (ready == 0 && exited) break;
    if (fds[0].revents & POLLIN) {
      unsigned char msg[2];
      while (read(g_signal_pipe[0], msg, sizeof msg) == sizeof msg) {
        if (msg[0] != SIGCHLD) handle(msg[0], msg[1] == 1);
      }
    }
    for (int i = 1; i <= 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        demux[i - 1].Feed(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        demux[i - 1].Finish();
        close(fds[i].fd);
        fds[i].fd = -1;
      }
    }
    if (!exited) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        result.wait_status = status;
      } else if (grace_ends_at != std::chrono::steady_clock::time_point{} &&
                 std::chrono::steady_clock::now() > grace_ends_at) {
        o.signal_all_ranks(SIGKILL);
        grace_ends_at = {};
        hard_kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(3);
      } else if (hard_kill_at != std::chrono::steady_clock::time_point{} &&
                 std::chrono::steady_clock::now() > hard_kill_at) {
        kill(pid, SIGKILL);
        if (o.force_kill) o.force_kill();
        hard_kill_at = {};
      }
    }
  }
  for (int i = 1; i <= 2; ++i)
    if (fds[i].fd >= 0) close(fds[i].fd);
  for (int i = 0; i < 6; ++i) sigaction(forwarded[i], &old[i], nullptr);
  // The job is over; a late stop signal (a second Ctrl-C racing the end)
  // must not cost the caller its report.
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, SIG_IGN);
  return result;
}

}  // namespace gpulaunch
