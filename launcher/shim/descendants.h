// What a rank started besides its main process: data-loader workers,
// compiler workers, a profiler daemon, a pipeline's other commands. The shim
// makes itself their child subreaper (PR_SET_CHILD_SUBREAPER), so a process
// that escapes with setsid or a double fork reparents to the shim instead of
// init, and every descendant stays in the shim's own process tree, where
// this finds it.
//
// Contracts:
// - Descendants() walks the tree down from the shim through
//   /proc/self/task/*/children (one read when there are none: the common
//   case costs a rank nothing), or, on a kernel without that file, scans
//   /proc for parents; it never names the shim itself.
// - ReapOrphans() collects every exited child other than `main` without
//   blocking, so orphans that end while the rank runs leave no zombie;
//   `main`'s status, should it be among them, is handed back.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace gpulaunch {

// Sets this process as the child subreaper of everything it starts; false
// when the kernel refused (then escaped processes reach init).
bool BecomeSubreaper();

// Every live descendant of this process, parents before children.
std::vector<pid_t> Descendants();

// The command name of `pid` (/proc/PID/comm), "?" when gone.
std::string CommandOf(pid_t pid);

// Reaps exited children without blocking; returns main's wait status when
// main was among them.
std::optional<int> ReapOrphans(pid_t main);

// Stops every descendant but `main`: SIGTERM to each as it is found, SIGKILL
// to all that remain once the deadline passed. A helper that keeps forking cannot outrun it: each turn finds the
// new ones. Gives up 5 s past the deadline (a process in uninterruptible
// sleep), saying so.
class HelperStopper {
 public:
  using Clock = std::chrono::steady_clock;
  struct Helper {
    pid_t pid = 0;
    std::string command;
    Clock::time_point gone{};  // {} while it runs
    bool killed = false;       // it was still there at the deadline
  };

  explicit HelperStopper(pid_t main) : main_(main) {}
  bool started() const { return deadline_ != Clock::time_point{}; }
  // Starts (once): SIGTERM to every helper now, SIGKILL at `deadline`. With
  // `term` false, no SIGTERM (the engine already sent every process one).
  void Start(Clock::time_point deadline, bool term);
  // One turn: find new helpers and signal them; true once none is left. It
  // reaps nothing: call ReapOrphans before each turn (zombies count as left).
  bool Turn();
  const std::vector<Helper>& helpers() const { return helpers_; }
  bool gave_up() const { return gave_up_; }

 private:
  void Signal(pid_t pid, int sig);
  const pid_t main_;
  Clock::time_point deadline_{};
  bool term_ = true, killing_ = false, gave_up_ = false;
  std::vector<Helper> helpers_;
};

}  // namespace gpulaunch
