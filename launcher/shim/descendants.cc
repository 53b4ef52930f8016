#include "launcher/shim/descendants.h"

#include <dirent.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <map>

#include "common/strings.h"
#include "launcher/base/process_tree.h"

namespace gpulaunch {
namespace {

// The numeric entries of a /proc folder.
std::vector<pid_t> NumericEntries(const std::string& dir) {
  std::vector<pid_t> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long v = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && v > 0) out.push_back(static_cast<pid_t>(v));
  }
  closedir(d);
  return out;
}

// The children of `pid` from /proc/PID/task/*/children; nullopt without that file.
std::optional<std::vector<pid_t>> ChildrenOf(pid_t pid) {
  std::vector<pid_t> out;
  const std::string base = "/proc/" + std::to_string(pid) + "/task/";
  bool readable = false;
  for (pid_t task : NumericEntries(base)) {
    const std::string text = ReadFileOrEmpty(base + std::to_string(task) + "/children");
    readable = readable || access((base + std::to_string(task) + "/children").c_str(), R_OK) == 0;
    Words words(text);
    while (const auto child = words.NextInt<int>()) out.push_back(*child);
  }
  if (!readable) return std::nullopt;
  return out;
}

}  // namespace

bool BecomeSubreaper() { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

std::vector<pid_t> Descendants() {
  const pid_t self = getpid();
  std::vector<pid_t> out;
  if (auto first = ChildrenOf(self)) {
    std::vector<pid_t> frontier = *first;
    while (!frontier.empty() && out.size() < 100000) {
      const pid_t p = frontier.back();
      frontier.pop_back();
      out.push_back(p);
      if (auto more = ChildrenOf(p)) frontier.insert(frontier.end(), more->begin(), more->end());
    }
    return out;
  }
  // No children files: every process's parent, then the tree below this one.
  std::multimap<pid_t, pid_t> children;
  for (pid_t p : NumericEntries("/proc")) children.emplace(ParentOf(p), p);
  std::vector<pid_t> frontier = {self};
  while (!frontier.empty()) {
    const pid_t p = frontier.back();
    frontier.pop_back();
    for (auto [it, end] = children.equal_range(p); it != end; ++it) {
      out.push_back(it->second);
      frontier.push_back(it->second);
    }
  }
  return out;
}

std::string CommandOf(pid_t pid) {
  std::string comm = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/comm");
  if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm.empty() ? "?" : EscapeControlBytes(comm);
}

void HelperStopper::Start(Clock::time_point deadline, bool term) {
  if (started()) return;
  deadline_ = deadline;
  term_ = term;
  Turn();
}

void HelperStopper::Signal(pid_t pid, int sig) {
  auto it = std::find_if(helpers_.begin(), helpers_.end(), [pid](const Helper& h) { return h.pid == pid && h.gone == Clock::time_point{}; });
  if (it == helpers_.end()) {
    helpers_.push_back({pid, CommandOf(pid), {}, false});
    it = helpers_.end() - 1;
    if (term_ && sig != SIGKILL) kill(pid, SIGTERM);
  }
  if (sig == SIGKILL) {
    it->killed = true;
    kill(pid, SIGKILL);
  }
}

bool HelperStopper::Turn() {
  if (!started()) return false;
  // No reaping here: the caller reaps (ReapOrphans), and main's status is its to take.
  const auto now = Clock::now();
  killing_ = killing_ || now >= deadline_;
  std::vector<pid_t> live;
  for (pid_t p : Descendants()) {
    if (p == main_) continue;
    live.push_back(p);
    Signal(p, killing_ ? SIGKILL : SIGTERM);
  }
  for (Helper& h : helpers_) {
    if (h.gone == Clock::time_point{} && std::find(live.begin(), live.end(), h.pid) == live.end()) h.gone = now;
  }
  if (!live.empty() && now >= deadline_ + std::chrono::seconds(5)) gave_up_ = true;
  return live.empty() || gave_up_;
}

std::optional<int> ReapOrphans(pid_t main) {
  std::optional<int> main_status;
  int status = 0;
  for (pid_t p; (p = waitpid(-1, &status, WNOHANG)) > 0;) {
    if (p == main) main_status = status;
  }
  return main_status;
}

}  // namespace gpulaunch
