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
#include <sys/types.h>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/step_metrics.h"
#include "launcher/base/control_auth.h"
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
  bool in_cgroup = false;              // it runs in a cgroup of its own (launcher/base/rank_cgroup.h)
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
  bool mpi_singleton = false;          // its MPI_Init gave it a world of 1 (a `singleton` report)
  std::vector<std::string> stderr_tail;
  std::string stacks;
  // Processes the rank left behind, which its shim stopped
  // (launcher/shim/descendants.h): at most kMaxHelpersKept, all counted.
  struct Helper {
    int pid = 0;
    std::string command;
    int after_ms = 0;     // after the rank's main process ended
    bool killed = false;  // it outlived SIGTERM and took SIGKILL
  };
  std::vector<Helper> helpers;
  int helpers_total = 0;
};
inline constexpr size_t kMaxHelpersKept = 32;

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
// Connections that may be open beside one per rank (handshakes in progress,
// a rank whose old connection is still closing): past world + this many,
// each new connection closes the oldest one that has not authenticated yet,
// so that strangers holding connections never keep a rank out (a rank
// answers the greeting at once). Accepting never stops but after EMFILE.
inline constexpr int kControlConnectionSlack = 16;
// A connection that has not proved it belongs to the job within this long
// is closed; it changed nothing.
inline constexpr int kControlAuthTimeoutMs = 5000;
// What one rank can make gpulaunch hold: stack dumps (only when asked) and
// profiled steps (only with --profile; also kMaxStepGroups groups a step).
inline constexpr size_t kMaxStackBytes = 256 * 1024;
inline constexpr size_t kMaxStepsPerRank = 4096;
inline constexpr size_t kMaxStepGroups = 16;

struct ControlServerOptions {
  // Where to listen: a Unix socket at `unix_path` (jobs on this host alone:
  // the path lies in the private job directory, and a peer of another uid
  // is refused by SO_PEERCRED), else TCP on the numeric IPv4 `bind_addr`,
  // the address the ranks are told (never 0.0.0.0).
  std::string unix_path;
  std::string bind_addr;
  // Every connection proves it knows `secret` for `job_id` (control_auth.h).
  std::string job_id;
  ControlKey secret{};
  std::string expected_hash;
  // Ranks are 0..world-1; `world` bounds the connections too, and the
  // open-file limit is raised as far as the hard limit allows (a job that
  // needs more fails here, naming the limit and the fix, never a hang).
  int world = 0;
  // By rank, slot_table.h's row form: the answers to `slot`.
  std::vector<std::string> slot_rows;
  // With a `check`, no request is answered before every checked host that
  // has ranks sent a fingerprint and it matched; once one differs, every
  // request is answered "!" (the rank must not start) and ChangedHosts
  // names the host.
  HostCheck check;
  bool keep_metrics = false;  // --profile: else metric records are dropped on arrival
  int auth_timeout_ms = kControlAuthTimeoutMs;
  // A rank's pid is kept (as a pidfd) only when that process descends from
  // `ancestor` when it checks in: gpulaunch signals only what it started.
  pid_t ancestor = 0;  // 0: this process
  // The Slurm job the ranks run in (gpulaunch's own allocation); steps of
  // another job are never recorded. Empty: none are.
  std::string slurm_job_id;
};

class ControlServer {
 public:
  ControlServer();
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  Status Start(ControlServerOptions options);
  void Stop();
  int port() const { return port_; }
  // What the ranks are told to connect to: "unix:PATH" or "ADDR:PORT".
  std::string address() const;

  // Every query first takes in what already waits on the sockets (Sync): a
  // rank that runs has checked in, even if the serving thread lags behind.
  int CheckedIn();
  // Sends `sig` to the job process of every rank that still runs and whose
  // process gpulaunch holds a pidfd for (it descended from `ancestor` when it
  // checked in); returns how many were signalled.
  int SignalLocalRanks(int sig);
  // The ranks held by pidfd whose process still runs, with its pid.
  std::map<int, int> LiveLocalRanks();
  // The Slurm job steps ("JOB.STEP") ranks reported running in, of
  // `slurm_job_id` only.
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
  std::map<int, std::vector<StepMetrics>> Metrics();
  int MalformedMetrics();
  // Connections closed for failing the handshake, a tag, the protocol, or
  // for not authenticating in time.
  int RejectedConnections();
  // Where they came from: address -> connections, at most 16 addresses.
  std::map<std::string, int> RejectedFrom();

  // Asks the shims of `ranks` for their job process's stacks and waits up to
  // `timeout_ms` for the answers (they land in the records).
  void CollectStacks(const std::set<int>& ranks, int timeout_ms);

  // Asks every connected shim to send `sig` (SIGINT, SIGTERM, SIGHUP or
  // SIGKILL) to its job process, if it still runs (one whose job ended may be
  // waiting for every rank to start, and stops waiting): a stop sequence of
  // gpulaunch's own, with a real grace between SIGTERM and SIGKILL (Open
  // MPI's mpirun, itself signalled, sends SIGTERM and SIGKILL back to back).
  // A rank that checks in later (its check-in still unread, or not yet sent)
  // is asked the moment it does: the latest stop signal is remembered. So
  // this returns true once any rank has checked in (every such rank has ended
  // or been asked, and the rest will be), and false only when none has (the
  // caller then signals the engine, the only one that knows the ranks).
  bool SignalAllRanks(int sig);

 private:
  struct Peer;
  void Serve();
  void PollOnce(int timeout_ms);  // accept and read what is ready; serving thread only
  void Accept();
  bool ReadPeer(Peer& peer);      // false: the peer is gone, or must be
  bool HandleHello(Peer& peer, const std::string& line);
  bool HandleLine(Peer& peer, const std::string& sealed);
  bool HandleMessage(Peer& peer, const ControlMessage& m);
  void DropPeer(Peer& peer);
  void EvictOldestStranger();                  // serving thread only
  void NoteRejected(const std::string& address);
  // Under mu_: what a check-in and a metrics record change in `r`.
  void RecordCheckIn(Peer& peer, const ControlMessage& m, RankRecord& r, int pidfd, ControlClock::time_point now);
  void RecordMetric(const ControlMessage& m, RankRecord& r, ControlClock::time_point now);
  void HandleSlot(Peer& peer, const ControlMessage& m);
  void AnswerSlot(Peer& peer, bool changed);  // under mu_
  void SendTo(Peer& peer, const std::string& line);  // sealed; under mu_
  int NextPollTimeoutMs() const;
  void Sync();

  ControlServerOptions o_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  // Stop() and Sync() write here so Serve() leaves poll at once
  int port_ = 0;
  ControlClock::time_point accept_paused_until_{};  // after EMFILE: no busy loop
  // Serving thread only: checked hosts not yet seen, and the slot requests
  // (peers) waiting for them.
  std::set<std::string> unverified_;
  std::vector<Peer*> deferred_slots_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<std::unique_ptr<Peer>> peers_;  // the list: serving thread only; each Peer's session under mu_

  mutable std::mutex mu_;
  std::condition_variable changed_;
  uint64_t sync_requested_ = 0, sync_done_ = 0;
  std::map<int, RankRecord> records_;
  std::set<int> authenticated_;     // ranks that ever proved themselves: each once, on one connection
  std::map<int, Peer*> rank_peer_;  // for stack and signal requests
  std::map<int, int> pidfds_;       // rank -> pidfd of its job process (see ancestor)
  std::set<int> stacks_pending_;    // asked for stacks, answer not complete
  int stop_signal_ = 0;             // the latest SignalAllRanks signal: sent to later check-ins too
  int checked_in_ = 0;              // ranks that checked in; at `world`, every connection is told `started`
  std::set<std::string> slurm_steps_;
  std::set<std::string> changed_hosts_;
  std::set<int> held_ranks_;
  std::map<int, std::vector<StepMetrics>> metrics_;
  int malformed_metrics_ = 0;
  int rejected_ = 0;
  std::map<std::string, int> rejected_from_;
  ControlClock::time_point pass_time_{};  // serving thread only: when the current poll pass woke
};

}  // namespace gpulaunch
