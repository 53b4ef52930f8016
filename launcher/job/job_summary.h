// The end of a job, explained: gpulaunch-summary.json (one entry per rank:
// host, pid, how it ended, when, the last lines of its stderr, stacks when
// collected) and the root-cause block printed when the job failed. Pure
// functions over what the control server recorded, so they are unit-tested
// without launching anything.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/base/control_server.h"

namespace gpulaunch {

// Why gpulaunch itself stopped the job, if it did.
enum class StopReason { kNone, kUserSignal, kTimeout, kStartupTimeout, kRefused, kStall };

struct JobOutcome {
  std::string job_id;
  std::string plan_hash;
  std::vector<std::string> program;
  std::vector<std::string> planned_hosts;  // by rank
  std::string engine;                      // the engine's name ("mpirun", "hydra", "srun")
  int exit_code = 0;                       // gpulaunch's
  StopReason stop = StopReason::kNone;
  int user_signal = 0;                     // with kUserSignal
  int limit_s = 0;                         // the timeout that expired (kTimeout, kStartupTimeout, kStall)
  std::set<int> stalled;                   // with kStall
  // Ranks that reached gpulaunch but were still held, unstarted, until every
  // host whose topology was cached had confirmed it (control_server.h).
  std::set<int> held;
  // The engine exited 0 although ranks it had started did not end on their
  // own with code 0 (RanksCutShort): its 0 is not the job's.
  bool engine_exited_zero = false;
  int restart = 0;                         // GPULAUNCH_RESTART_COUNT of this run
  // Connections to the control channel that never proved they belong to the
  // job and were closed (a stranger, a flood), and where they came from.
  int rejected_connections = 0;
  // Written at the first stop signal, before the ranks ended: the summary
  // says so ("provisional": true) and is replaced when the job is over.
  bool provisional = false;
  std::map<std::string, int> rejected_from;
  ControlClock::time_point started{};      // when the engine was started
  std::chrono::system_clock::time_point started_wall{};
  ControlClock::time_point ended{};
};

struct RootCause {
  int rank = -1;                  // the rank to blame, -1 when none is
  std::string headline;           // one sentence
  std::vector<std::string> notes; // further lines (what happened to the others, the fix)
  std::vector<std::string> evidence;  // the blamed rank's stderr tail or stacks
};

// The ranks that reached gpulaunch and did not end on their own with code 0:
// failed (a code or a signal), ended after a stop signal reached them, or
// vanished without a report. Ranks gpulaunch never heard of, and ranks
// whose report had not arrived, are not among them.
std::vector<int> RanksCutShort(const std::map<int, RankRecord>& ranks);

// Why the job failed; nullopt when it did not (exit 0 and no stop). Every
// rank an MPI singleton (RankRecord::mpi_singleton) is a failure of its own.
std::optional<RootCause> FindRootCause(const JobOutcome& job, const std::map<int, RankRecord>& ranks);

// True when the job has more than one rank and every one of them reported
// that MPI_Init gave it a world of 1: the program's MPI is not the engine's.
bool EveryRankAnMpiSingleton(const JobOutcome& job, const std::map<int, RankRecord>& ranks);

// The "---- root cause ----" block, every line prefixed "gpulaunch: ".
std::string RenderRootCause(const RootCause& cause, const std::string& summary_path);

// gpulaunch-summary.json (format "gpulaunch-summary/v1", docs/launch.md "When a job
// fails"). A rank's state: exited, killed (by a signal), refused, lost (its
// connection closed without a report: host or shim died), stopped-unreported
// (the same, after the job had begun to end: stopped together with its
// shim), no-report, never-started.
std::string SummaryJson(const JobOutcome& job, const std::map<int, RankRecord>& ranks,
                        const std::optional<RootCause>& cause);

// The note printed after a job whose ranks left processes behind, one line
// a rank (PID, command, how long it ran past its rank, SIGKILL when it took
// one); "" when none did. Leftover helpers are not an error: the shim stopped
// them (launcher/shim/descendants.h).
std::string HelpersNote(const std::map<int, RankRecord>& ranks);

// "SIGKILL" for 9; "signal N" for what has no name.
std::string SignalName(int sig);

// One line about the connections that were closed unauthenticated (how
// many, from where), or "" when there were none.
std::string RejectedConnectionsNote(const JobOutcome& job);

// "the job was stopped by SIGTERM sent to gpulaunch", naming Slurm's reasons
// inside an allocation: the root cause of a stop from outside, in the
// provisional summary written at once and in the final one alike.
std::string StoppedBySignalHeadline(int sig);

}  // namespace gpulaunch
