// Where ranks check in and report (protocol: control_protocol.h). Each rank's
// exec shim keeps one connection for the rank's lifetime: it checks in as
// soon as the job process exists, sends progress heartbeats, the last lines of
// its stderr and how the process ended, and answers stack requests.
// gpulaunch uses this to tell an engine failure (no rank ever started) from a
// job failure, to know local rank pids for a forced kill and the Slurm step
// its ranks run in, to watch start-up and progress, and to write the summary.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/step_metrics.h"
#include "launcher/base/control_protocol.h"

namespace gpulaunch {

using ControlClock = std::chrono::steady_clock;

// What gpulaunch knows about one rank; times are gpulaunch's own clock.
struct RankRecord {
  int rank = -1;
  int pid = -1;
  int world = 0;
  std::string host;
  std::string plan_hash;
  std::string refusal;                 // why the shim refused to start it, if it did
  ControlClock::time_point checked_in{};
  ControlClock::time_point last_beat{};  // {} until the first heartbeat
  bool ended = false;                  // an exit report arrived
  ControlClock::time_point ended_at{};   // the report, or when the connection was lost
  bool signaled = false;
  int exit_value = 0;                  // exit code, or signal number when signaled
  // A stop signal had reached the rank through its shim before it ended (the
  // engine's teardown, gpulaunch's, or its own loss of gpulaunch): whatever
  // it then did, it did because it was told to stop, so it is never the
  // first failure while a rank failed on its own.
  bool told_to_stop = false;
  bool lost = false;                   // the connection closed without an exit report
  std::vector<std::string> stderr_tail;
  std::string stacks;
};

// Hosts whose topology the plan took from gpulaunch's cache
// (launcher/discovery/remote_topology_cache.h), and the fingerprint each
// showed then (host_fingerprint.h).
struct HostCheck {
  std::vector<std::string> host_of_rank;        // the plan's host of each rank
  std::map<std::string, std::string> expected;  // host -> fingerprint; empty: nothing to check
};

// Descriptors gpulaunch needs besides the ranks' sockets (stdio, the engine's
// pipes, the listening socket, files being written): Start makes room for
// world + this many open files.
inline constexpr int kControlServerSpareFiles = 64;

class ControlServer {
 public:
  ControlServer() = default;
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Listens on `bind_addr` (e.g. "127.0.0.1" or "0.0.0.0") at a free port.
  // `world` ranks will connect, one socket each: the open-file limit is
  // raised as far as the hard limit allows, and a job that needs more fails
  // here, naming the limit and the fix (never a hang). `slot_rows` (by rank,
  // slot_table.h's row form) answer the shims' `slot` requests. With a
  // `check`, no request is answered before every checked host that has ranks
  // sent a fingerprint and it matched; once one differs, every request is
  // answered "!" (the rank must not start) and ChangedHosts names the host.
  Status Start(const std::string& bind_addr, const std::string& expected_hash, int world = 0,
               std::vector<std::string> slot_rows = {}, HostCheck check = {});
  void Stop();
  int port() const { return port_; }

  // Every query first takes in what already waits on the sockets (Sync): a
  // rank that runs has checked in, even if the serving thread lags behind.
  int CheckedIn();
  // Pids reported by ranks whose host is this machine and that still run.
  std::set<int> LocalPids();
  // The Slurm job steps ("JOB.STEP") ranks reported running in.
  std::set<std::string> SlurmSteps();
  // Ranks that reported a plan hash different from ours.
  std::set<int> HashMismatches();
  // Checked hosts whose fingerprint differed (see Start).
  std::set<std::string> ChangedHosts();
  // Ranks whose `slot` request was held for a checked host (see Start) and
  // never answered, whether or not their connection is still open.
  std::set<int> HeldRanks();
  // A copy of every rank's record, by rank.
  std::map<int, RankRecord> Records();
  // The profiled steps each rank reported (--profile), by rank, in arrival
  // order; records that do not parse are counted, not kept. At most
  // kMaxStepsPerRank per rank (the newest are dropped beyond).
  static constexpr size_t kMaxStepsPerRank = 200000;
  std::map<int, std::vector<StepMetrics>> Metrics();
  int MalformedMetrics();

  // Asks the shims of `ranks` for their job process's stacks and waits up to
  // `timeout_ms` for the answers (they land in the records).
  void CollectStacks(const std::set<int>& ranks, int timeout_ms);

  // Asks every connected shim whose rank still runs to send `sig` (SIGINT,
  // SIGTERM, SIGHUP or SIGKILL) to its job process: a stop sequence of
  // gpulaunch's own, with a real grace between SIGTERM and SIGKILL (Open
  // MPI's mpirun, itself signalled, sends SIGTERM and SIGKILL back to back).
  // A rank that checks in later (its check-in still unread, or not yet sent)
  // is asked the moment it does: the latest stop signal is remembered. So
  // this returns true once any rank has checked in (every such rank has ended
  // or been asked, and the rest will be), and false only when none has (the
  // caller then signals the engine, the only one that knows the ranks).
  // `world` bounds the ranks asked.
  bool SignalAllRanks(int sig, int world);

 private:
  struct Peer {
    int fd = -1;
    int rank = -1;          // known after its check-in or refusal
    std::string buffer;     // bytes not yet parsed
    size_t payload_left = 0;  // raw stack bytes still to read
    bool exit_seen = false;
  };
  void Serve();
  void PollOnce(int timeout_ms);  // accept and read what is ready; serving thread only
  bool ReadPeer(Peer& peer);      // false: the peer is gone
  void HandleLine(Peer& peer, const std::string& line);
  // Under mu_: what a check-in and a metrics record change in `r`.
  void RecordCheckIn(Peer& peer, const ControlMessage& m, RankRecord& r, ControlClock::time_point now);
  void RecordMetric(const ControlMessage& m, RankRecord& r, ControlClock::time_point now);
  void HandleSlot(const Peer& peer, const ControlMessage& m);
  void AnswerSlot(int fd, int rank, bool changed) const;
  void Sync();

  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // Stop() and Sync() write here so Serve() leaves poll at once
  int port_ = 0;
  std::string expected_hash_;
  std::vector<std::string> slot_rows_;  // set before the serving thread starts, then read only
  HostCheck check_;                     // the same
  // Serving thread only: checked hosts not yet seen, and the slot requests
  // (fd, rank) waiting for them.
  std::set<std::string> unverified_;
  std::vector<std::pair<int, int>> deferred_slots_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<Peer> peers_;  // serving thread only

  mutable std::mutex mu_;
  std::condition_variable changed_;
  uint64_t sync_requested_ = 0, sync_done_ = 0;
  std::map<int, RankRecord> records_;
  std::map<int, int> rank_fd_;  // for stack requests
  std::set<int> stacks_pending_;  // asked for stacks, answer not complete
  int stop_signal_ = 0;           // the latest SignalAllRanks signal: sent to later check-ins too
  std::set<std::string> slurm_steps_;
  std::set<std::string> changed_hosts_;
  std::set<int> held_ranks_;
  std::map<int, std::vector<StepMetrics>> metrics_;
  int malformed_metrics_ = 0;
};

}  // namespace gpulaunch
