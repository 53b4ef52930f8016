// Finding processes by their command line, for tests that check what a run
// left behind (or that something started): one /proc scan shared by the unit
// and end-to-end test binaries.
#pragma once

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace gpulaunch::testing {

// Processes other than this one whose command line (arguments joined by
// spaces) contains `marker`. A process that ends during the scan is skipped.
inline std::vector<int> ProcessesWith(const std::string& marker) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int pid = std::stoi(name);
    if (pid == getpid()) continue;
    std::ifstream f(entry.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(marker) != std::string::npos) pids.push_back(pid);
  }
  return pids;
}

// Waits until some process's command line contains `marker`, polling every
// 20 ms for at most `timeout_ms` (a cap far beyond a healthy run, never the
// measure). True when one appeared.
inline bool WaitUntilRunning(const std::string& marker, int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 20) {
    if (!ProcessesWith(marker).empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return !ProcessesWith(marker).empty();
}

// Waits until no process's command line contains `marker`, for at most
// `timeout_ms`; returns those still there (empty: all gone).
inline std::vector<int> WaitUntilGone(const std::string& marker, int timeout_ms) {
  std::vector<int> left = ProcessesWith(marker);
  for (int waited = 0; waited < timeout_ms && !left.empty(); waited += 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    left = ProcessesWith(marker);
  }
  return left;
}

}  // namespace gpulaunch::testing
