// ControlServer (control_server.h): what the launcher asks of it from its
// own thread. Each answer is taken under the server's lock; the ones that
// summarise the job first wait for the serving thread to take in what has
// arrived (Sync).
#include "launcher/base/control_server.h"

#include <chrono>

#include "launcher/base/process_tree.h"

namespace gpulaunch {

std::set<int> ControlServer::HeldRanks() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  return held_ranks_;
}

std::set<std::string> ControlServer::ChangedHosts() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  return changed_hosts_;
}

void ControlServer::Sync() {
  if (!thread_.joinable() || stop_) return;
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t target = ++sync_requested_;
  [[maybe_unused]] auto n = write(wake_[1], "s", 1);
  changed_.wait_for(lock, std::chrono::milliseconds(1000), [&] { return sync_done_ >= target; });
}

int ControlServer::CheckedIn() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& [rank, r] : records_) n += r.pid > 0;
  return n;
}

int ControlServer::SignalLocalRanks(int sig) {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  int signalled = 0;
  for (const auto& [rank, fd] : pidfds_) {
    if (records_[rank].ended) continue;
    signalled += SignalPidfd(fd, sig);
  }
  return signalled;
}

std::map<int, int> ControlServer::LiveLocalRanks() {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<int, int> live;
  for (const auto& [rank, fd] : pidfds_)
    if (!PidfdEnded(fd)) live[rank] = records_[rank].pid;
  return live;
}

std::set<std::string> ControlServer::SlurmSteps() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  return slurm_steps_;
}

std::set<int> ControlServer::HashMismatches() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  std::set<int> out;
  for (const auto& [rank, r] : records_)
    if (r.pid > 0 && r.plan_hash != o_.expected_hash) out.insert(rank);
  return out;
}

std::map<int, RankRecord> ControlServer::Records() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

std::map<int, std::vector<StepMetrics>> ControlServer::Metrics() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  return metrics_;
}

int ControlServer::MalformedMetrics() {
  std::lock_guard<std::mutex> lock(mu_);
  return malformed_metrics_;
}

int ControlServer::RejectedConnections() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  return rejected_;
}

std::map<std::string, int> ControlServer::RejectedFrom() {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  return rejected_from_;
}

void ControlServer::CollectStacks(const std::set<int>& ranks, int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  for (int rank : ranks) {
    auto it = rank_peer_.find(rank);
    if (it == rank_peer_.end()) continue;
    records_[rank].stacks.clear();
    stacks_pending_.insert(rank);
    SendTo(*it->second, "stacks");
  }
  changed_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return stacks_pending_.empty(); });
  stacks_pending_.clear();
}

bool ControlServer::SignalAllRanks(int sig) {
  Sync();
  std::lock_guard<std::mutex> lock(mu_);
  int known = 0;
  // A rank that ended may still hold its shim, waiting for every rank to
  // start (rank_supervisor.h): the stop ends that wait too.
  for (const auto& [rank, r] : records_) {
    if (r.pid <= 0) continue;
    ++known;
    if (auto it = rank_peer_.find(rank); it != rank_peer_.end()) SendTo(*it->second, "signal " + std::to_string(sig));
  }
  // Remembered only when the shims carry the stop; with no rank known the
  // engine does, and a rank must not hear the same stop twice.
  if (known > 0) stop_signal_ = sig;
  return known > 0;
}

}  // namespace gpulaunch
