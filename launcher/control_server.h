// Where ranks check in. Each rank's exec shim connects once, just before it
// execs the job, and sends one line:
//   checkin <rank> <pid> <host> <plan hash> [<slurm job>.<step> | -]
// gpulaunch uses this to tell an engine failure (no rank ever started) from a
// job failure, to know local rank pids for a forced kill, and to know the
// Slurm step its ranks run in (scancel signals every rank of it).
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "common/status.h"

namespace gpulaunch {

class ControlServer {
 public:
  ControlServer() = default;
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Listens on `bind_addr` (e.g. "127.0.0.1" or "0.0.0.0") at a free port.
  Status Start(const std::string& bind_addr, const std::string& expected_hash);
  void Stop();
  int port() const { return port_; }

  int CheckedIn() const;
  // Pids reported by ranks whose host is this machine. Check-ins already
  // waiting on the socket are taken in first: a rank that runs has checked in,
  // even if the serving thread has not caught up.
  std::set<int> LocalPids();
  // The Slurm job steps ("JOB.STEP") ranks reported running in.
  std::set<std::string> SlurmSteps();
  // Ranks that reported a plan hash different from ours.
  std::set<int> HashMismatches() const;

 private:
  void Serve();
  void Handle(int fd);
  void AcceptPending(int timeout_ms);  // under accept_mu_

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // Stop() writes here so Serve() leaves poll at once
  int port_ = 0;
  std::string expected_hash_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::mutex accept_mu_;
  std::map<int, std::pair<int, std::string>> ranks_;  // rank -> (pid, host)
  std::set<int> mismatched_;
  std::set<std::string> slurm_steps_;
};

}  // namespace gpulaunch
