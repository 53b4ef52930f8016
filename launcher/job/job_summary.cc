#include "launcher/job/job_summary.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/json.h"
#include "common/utc_time.h"
#include "common/strings.h"
#include "launcher/engine/engine.h"

namespace gpulaunch {
namespace {

double Seconds(ControlClock::duration d) { return std::chrono::duration<double>(d).count(); }

bool Failed(const RankRecord& r) { return r.ended && (r.signaled || r.exit_value != 0); }

std::string HowItEnded(const RankRecord& r) {
  if (!r.refusal.empty()) return "refused to start: " + r.refusal;
  if (r.ended && r.signaled) return "was killed by " + SignalName(r.exit_value);
  if (r.ended) return "exited with code " + std::to_string(r.exit_value);
  if (r.lost) return "vanished without a report (its host, its shim or the connection died)";
  if (r.pid > 0) return "had not ended when gpulaunch stopped";
  return "never started";
}

// When the job began to end: its first failure (a failed or vanished rank).
ControlClock::time_point FirstFailure(const std::map<int, RankRecord>& ranks) {
  auto first = ControlClock::time_point::max();
  for (const auto& [rank, r] : ranks)
    if (Failed(r) || r.lost) first = std::min(first, r.ended_at);
  return first;
}

// A rank whose connection closed without a report after the job had begun
// to end was stopped with its shim (the engine SIGKILLs the shim's process
// group), not lost on its own.
bool StoppedUnreported(const RankRecord& r, ControlClock::time_point first_failure, bool stopped_by_gpulaunch) {
  return r.lost && (stopped_by_gpulaunch || r.ended_at > first_failure);
}

std::string State(const RankRecord* r, ControlClock::time_point first_failure, bool stopped_by_gpulaunch) {
  if (!r) return "never-started";
  if (!r->refusal.empty()) return "refused";
  if (r->ended) return r->signaled ? "killed" : "exited";
  if (StoppedUnreported(*r, first_failure, stopped_by_gpulaunch)) return "stopped-unreported";
  if (r->lost) return "lost";
  return r->pid > 0 ? "no-report" : "never-started";
}

std::string HostOf(const JobOutcome& job, const std::map<int, RankRecord>& ranks, int rank) {
  auto it = ranks.find(rank);
  if (it != ranks.end() && !it->second.host.empty()) return it->second.host;
  return rank >= 0 && rank < static_cast<int>(job.planned_hosts.size()) ? job.planned_hosts[rank] : "?";
}

// "3 ranks (1, 4, 7 on node2)" style list, at most 8 named.
std::string RankList(const JobOutcome& job, const std::map<int, RankRecord>& ranks, const std::vector<int>& which) {
  std::map<std::string, std::vector<int>> by_host;
  for (int r : which) by_host[HostOf(job, ranks, r)].push_back(r);
  std::string out;
  int named = 0;
  for (const auto& [host, rs] : by_host) {
    if (named >= 8) {
      out += ", ...";
      break;
    }
    std::vector<std::string> ids;
    for (int r : rs) ids.push_back(std::to_string(r));
    named += static_cast<int>(rs.size());
    out += (out.empty() ? "" : "; ") + Join(ids, ", ") + " on " + host;
  }
  return out;
}

void AddTail(RootCause& cause, const RankRecord& r) {
  if (!r.stacks.empty()) {
    cause.evidence.push_back("stacks of rank " + std::to_string(r.rank) + ":");
    for (const std::string& line : Split(r.stacks, '\n'))
      if (!line.empty()) cause.evidence.push_back("|  " + line);
  }
  if (!r.stderr_tail.empty()) {
    cause.evidence.push_back("last lines of rank " + std::to_string(r.rank) + "'s stderr:");
    for (const std::string& line : r.stderr_tail) cause.evidence.push_back("|  " + line);
  }
}

// What became of every rank but `blamed`, in one line.
std::string Others(const std::map<int, RankRecord>& ranks, int blamed, int world) {
  const auto first_failure = FirstFailure(ranks);
  int ok = 0, stopped = 0, failed = 0, missing = 0;
  for (int rank = 0; rank < world; ++rank) {
    if (rank == blamed) continue;
    auto it = ranks.find(rank);
    if (it == ranks.end() || it->second.pid <= 0) {
      ++missing;
    } else if (it->second.ended && !it->second.signaled && it->second.exit_value == 0) {
      ++ok;
    } else if ((it->second.ended && it->second.signaled &&
                (it->second.exit_value == SIGTERM || it->second.exit_value == SIGKILL)) ||
               (it->second.ended && it->second.told_to_stop) || StoppedUnreported(it->second, first_failure, false)) {
      ++stopped;
    } else {
      ++failed;
    }
  }
  auto count = [](int n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); };
  std::vector<std::string> parts;
  if (ok) parts.push_back(count(ok, "ended normally", "ended normally"));
  if (stopped) parts.push_back(count(stopped, "was stopped", "were stopped") + " (SIGTERM/SIGKILL) in the teardown");
  if (failed) parts.push_back(count(failed, "failed or was lost too", "failed or were lost too"));
  if (missing) parts.push_back(count(missing, "never started", "never started"));
  return parts.empty() ? "" : "of the other ranks, " + Join(parts, ", ");
}

}  // namespace

std::string SignalName(int sig) {
  const char* abbrev = sig > 0 && sig < 65 ? sigabbrev_np(sig) : nullptr;
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

namespace {

// The headline and notes that name one rank, with its stderr tail or stacks.
RootCause Blamed(const JobOutcome& job, const std::map<int, RankRecord>& ranks, int rank, const std::string& what) {
  RootCause cause;
  cause.rank = rank;
  auto it = ranks.find(rank);
  cause.headline = "rank " + std::to_string(rank) + " on " + HostOf(job, ranks, rank) +
                   (it != ranks.end() && it->second.pid > 0 ? " (pid " + std::to_string(it->second.pid) + ")" : "") +
                   " " + what;
  if (it != ranks.end()) AddTail(cause, it->second);
  const int world = static_cast<int>(job.planned_hosts.size());
  if (std::string others = Others(ranks, rank, world); !others.empty()) cause.notes.push_back(others);
  return cause;
}

RootCause StartupTimeoutCause(const JobOutcome& job, const std::map<int, RankRecord>& ranks) {
  const int world = static_cast<int>(job.planned_hosts.size());
  std::vector<int> missing;
  for (int rank = 0; rank < world; ++rank)
    if ((!ranks.count(rank) || ranks.at(rank).pid <= 0) && !job.held.count(rank)) missing.push_back(rank);
  // Held ranks waited on the missing ones; if none is missing, name them.
  const bool held_waited = !job.held.empty() && !missing.empty();
  if (missing.empty()) missing.assign(job.held.begin(), job.held.end());
  RootCause cause;
  cause.headline = std::to_string(missing.size()) + " of " + std::to_string(world) +
                   " ranks did not check in within --startup-timeout " + std::to_string(job.limit_s) +
                   " s: " + RankList(job, ranks, missing);
  if (static_cast<int>(missing.size()) == world) {
    cause.notes.push_back("no rank started on any host: the engine had not started the job yet (mpirun starts "
                          "ranks only once every host's daemon is up): check that every host answers "
                          "`ssh HOST true` quickly, or raise --startup-timeout");
  } else {
    cause.notes.push_back("check that those hosts are reachable and not overloaded, or raise --startup-timeout");
  }
  if (held_waited) {
    cause.notes.push_back("the other " + std::to_string(job.held.size()) +
                          " ranks reached gpulaunch and waited for them: the plan used cached host topologies, which "
                          "one rank on each host confirms before any rank starts");
  }
  return cause;
}

// The cause when gpulaunch itself stopped the job; nullopt when it did not.
std::optional<RootCause> StopCause(const JobOutcome& job, const std::map<int, RankRecord>& ranks) {
  RootCause cause;
  switch (job.stop) {
    case StopReason::kStartupTimeout:
      return StartupTimeoutCause(job, ranks);
    case StopReason::kStall: {
      const int first = job.stalled.empty() ? -1 : *job.stalled.begin();
      cause = Blamed(job, ranks, first, "made no progress for " + std::to_string(job.limit_s) + " s (--stall-timeout)");
      if (job.stalled.size() > 1) {
        cause.notes.push_back("stalled: " + RankList(job, ranks, {job.stalled.begin(), job.stalled.end()}) +
                              "; their stacks are in the summary");
      }
      return cause;
    }
    case StopReason::kTimeout:
      cause.headline = "the job ran past --timeout " + std::to_string(job.limit_s) + " s and was stopped";
      return cause;
    case StopReason::kUserSignal:
      cause.headline = StoppedBySignalHeadline(job.user_signal);
      return cause;
    case StopReason::kRefused:
    case StopReason::kNone:
      break;
  }
  return std::nullopt;
}

// The first rank to fail on its own, by when gpulaunch heard of it (ranks
// that vanished count from when their connection closed). Arrival order alone
// cannot tell cause from effect: when gpulaunch's reading lags (a loaded
// host), the teardown's victims and the failure that started it arrive
// together, in socket order. A rank that its shim had passed a stop signal
// ended because it was told to, so it is blamed only when no rank failed on
// its own. What one poll pass of the server hears carries one timestamp:
// within it, a reported failure comes before a closed connection.
const RankRecord* RankToBlame(const std::map<int, RankRecord>& ranks) {
  const RankRecord* first = nullptr;
  for (const auto& [rank, r] : ranks) {
    if (!Failed(r) && !r.lost) continue;
    // Heard in the same pass (one timestamp): a rank that reported how it
    // failed comes before one whose connection closed, which is what a
    // teardown does to the others (Hydra SIGKILLs every shim at once).
    const bool earlier = !first || r.ended_at < first->ended_at ||
                         (r.ended_at == first->ended_at && first->lost && !r.lost);
    if (!first || (first->told_to_stop && !r.told_to_stop) || (first->told_to_stop == r.told_to_stop && earlier)) {
      first = &r;
    }
  }
  return first;
}

// The engine exited 0 while no rank had failed on its own: it stopped ranks
// that still ran (or they vanished), so the job did not complete.
RootCause EngineEndedEarlyCause(const JobOutcome& job, const std::map<int, RankRecord>& ranks) {
  const std::vector<int> cut = RanksCutShort(ranks);
  RootCause cause;
  cause.headline = (job.engine.empty() ? std::string("the engine") : job.engine) + " exited 0, but " +
                   std::to_string(cut.size()) + " of " + std::to_string(job.planned_hosts.size()) +
                   " ranks did not end on their own: they were stopped while they ran, or vanished (" +
                   RankList(job, ranks, cut) + "); the job did not complete";
  cause.notes.push_back("see what the engine printed above, if anything; the summary says how each rank ended");
  return cause;
}

}  // namespace

std::vector<int> RanksCutShort(const std::map<int, RankRecord>& ranks) {
  std::vector<int> cut;
  for (const auto& [rank, r] : ranks) {
    if (!r.refusal.empty()) continue;
    if ((r.ended && (r.signaled || r.exit_value != 0 || r.told_to_stop)) || (!r.ended && r.lost)) cut.push_back(rank);
  }
  return cut;
}

bool EveryRankAnMpiSingleton(const JobOutcome& job, const std::map<int, RankRecord>& ranks) {
  const size_t world = job.planned_hosts.size();
  if (world < 2) return false;
  size_t singletons = 0;
  for (const auto& [rank, r] : ranks) singletons += r.mpi_singleton;
  return singletons == world;
}

std::optional<RootCause> FindRootCause(const JobOutcome& job, const std::map<int, RankRecord>& ranks) {
  if (EveryRankAnMpiSingleton(job, ranks)) {
    RootCause cause;
    cause.headline = "the " + std::to_string(job.planned_hosts.size()) + " ranks ran as " +
                     std::to_string(job.planned_hosts.size()) +
                     " MPI singletons, not one job: each one's MPI_Init gave it a world of 1";
    cause.notes.push_back("the program links an MPI that " + (job.engine.empty() ? "the engine" : job.engine) +
                          " does not start; launch with --launcher auto, which starts it with the engine of the "
                          "MPI it links (gpulaunch check --binary PROGRAM shows that MPI on every host)");
    return cause;
  }
  if (job.exit_code == 0 && job.stop == StopReason::kNone) return std::nullopt;
  // Refusals come first: the engine did not start the job that was planned.
  for (const auto& [rank, r] : ranks) {
    if (r.refusal.empty()) continue;
    RootCause cause = Blamed(job, ranks, rank, "refused to start: " + r.refusal);
    cause.notes.push_back("the engine did not start the planned job; fix the cause above and launch again");
    return cause;
  }
  if (auto cause = StopCause(job, ranks)) return cause;
  const RankRecord* first = RankToBlame(ranks);
  if (job.engine_exited_zero && (!first || first->told_to_stop || first->lost)) {
    return EngineEndedEarlyCause(job, ranks);
  }
  if (first) {
    std::string what = HowItEnded(*first);
    if (first->ended || first->lost) {
      what += ", " + FormatFixed(Seconds(first->ended_at - first->checked_in), 2) + " s after it started";
    }
    return Blamed(job, ranks, first->rank, what);
  }
  RootCause cause;
  cause.headline = "the engine failed (gpulaunch exits " + std::to_string(job.exit_code) +
                   ") while no rank reported a failure; see what it printed above, if anything";
  return cause;
}

std::string RenderRootCause(const RootCause& cause, const std::string& summary_path) {
  std::string out = "gpulaunch: ---- root cause ----\ngpulaunch: " + cause.headline + "\n";
  for (const std::string& n : cause.notes) out += "gpulaunch: " + n + "\n";
  for (const std::string& e : cause.evidence) out += "gpulaunch: " + e + "\n";
  if (!summary_path.empty()) out += "gpulaunch: every rank: " + summary_path + "\n";
  return out;
}

std::string HelpersNote(const std::map<int, RankRecord>& ranks) {
  std::string note;
  for (const auto& [rank, r] : ranks) {
    if (r.helpers_total == 0) continue;
    std::string listed;
    constexpr size_t kListed = 5;  // the summary has up to kMaxHelpersKept
    for (size_t i = 0; i < std::min(kListed, r.helpers.size()); ++i) {
      const RankRecord::Helper& h = r.helpers[i];
      char after[32];
      std::snprintf(after, sizeof after, "%.1f", h.after_ms / 1000.0);
      listed += (listed.empty() ? "" : ", ") + std::to_string(h.pid) + " " + h.command + " (" + after + " s past it" +
                (h.killed ? ", SIGKILL" : "") + ")";
    }
    if (r.helpers_total > static_cast<int>(std::min(kListed, r.helpers.size()))) {
      listed += " and " + std::to_string(r.helpers_total - static_cast<int>(std::min(kListed, r.helpers.size()))) +
                " more (the summary lists them)";
    }
    note += "gpulaunch: note: rank " + std::to_string(rank) + " left " + std::to_string(r.helpers_total) +
            " process(es) running when it ended; its shim stopped them: " + listed + "\n";
  }
  return note;
}

namespace {

// The helpers a rank's shim stopped, as the summary lists them.
Json HelpersJson(const RankRecord& r) {
  Json list = Json::Array();
  for (const RankRecord::Helper& h : r.helpers) {
    Json e = Json::Object();
    e.Set("pid", h.pid);
    e.Set("command", h.command);
    e.Set("after_s", h.after_ms / 1000.0);
    e.Set("signal", h.killed ? "SIGKILL" : "SIGTERM");
    list.Push(e);
  }
  if (r.helpers_total > static_cast<int>(r.helpers.size())) {
    Json more = Json::Object();
    more.Set("not_listed", r.helpers_total - static_cast<int>(r.helpers.size()));
    list.Push(more);
  }
  return list;
}

}  // namespace

std::string SummaryJson(const JobOutcome& job, const std::map<int, RankRecord>& ranks,
                        const std::optional<RootCause>& cause) {
  auto wall = [&](ControlClock::time_point t) {
    return UtcTimestamp(job.started_wall + std::chrono::duration_cast<std::chrono::system_clock::duration>(t - job.started),
                        true);
  };
  Json root = Json::Object();
  root.Set("format", "gpulaunch-summary/v1");
  root.Set("job_id", job.job_id);
  root.Set("plan_hash", job.plan_hash);
  Json program = Json::Array();
  for (const std::string& a : job.program) program.Push(a);
  root.Set("program", program);
  root.Set("restart", job.restart);
  root.Set("exit_code", job.exit_code);
  root.Set("started_at", UtcTimestamp(job.started_wall, true));
  root.Set("runtime_s", Seconds(job.ended - job.started));
  // How every rank's descendants were found and stopped (launcher/shim/descendants.h),
  // and whether every started rank was also held by a cgroup of its own,
  // which outlives a SIGKILL of its shim (launcher/base/rank_cgroup.h).
  bool every_started_in_cgroup = false;
  for (const auto& [rank, r] : ranks) {
    if (r.pid <= 0) continue;
    if (!r.in_cgroup) {
      every_started_in_cgroup = false;
      break;
    }
    every_started_in_cgroup = true;
  }
  root.Set("helper_tracking", every_started_in_cgroup ? "subreaper+cgroup" : "subreaper");
  if (job.provisional) root.Set("provisional", true);
  if (job.rejected_connections > 0) {
    Json rejected = Json::Object();
    rejected.Set("count", job.rejected_connections);
    Json from = Json::Object();
    for (const auto& [address, n] : job.rejected_from) from.Set(EscapeControlBytes(address), n);
    rejected.Set("from", from);
    root.Set("rejected_connections", rejected);
  }
  if (cause) {
    Json c = Json::Object();
    c.Set("rank", cause->rank);
    c.Set("text", cause->headline);
    Json notes = Json::Array();
    for (const std::string& n : cause->notes) notes.Push(n);
    c.Set("notes", notes);
    root.Set("root_cause", c);
  }
  const auto first_failure = FirstFailure(ranks);
  Json list = Json::Array();
  for (int rank = 0; rank < static_cast<int>(job.planned_hosts.size()); ++rank) {
    auto it = ranks.find(rank);
    const RankRecord* r = it == ranks.end() ? nullptr : &it->second;
    Json e = Json::Object();
    e.Set("rank", rank);
    e.Set("host", HostOf(job, ranks, rank));
    e.Set("state", State(r, first_failure, job.stop != StopReason::kNone));
    if (r && r->pid > 0) e.Set("pid", r->pid);
    if (r && r->in_cgroup) e.Set("in_cgroup", true);
    if (r && r->ended) e.Set(r->signaled ? "signal" : "exit_code", r->signaled ? Json(SignalName(r->exit_value)) : Json(r->exit_value));
    if (r && r->ended && r->told_to_stop) e.Set("told_to_stop", true);
    if (r && !r->refusal.empty()) e.Set("refusal", r->refusal);
    if (r && r->pid > 0) e.Set("started_at", wall(r->checked_in));
    if (r && (r->ended || r->lost)) e.Set("ended_at", wall(r->ended_at));
    if (r && r->last_beat != ControlClock::time_point{}) e.Set("last_heartbeat_at", wall(r->last_beat));
    Json tail = Json::Array();
    if (r)
      for (const std::string& line : r->stderr_tail) tail.Push(line);
    e.Set("stderr_tail", tail);
    if (r && !r->stacks.empty()) e.Set("stacks", r->stacks);
    if (r && r->helpers_total > 0) e.Set("helpers_stopped", HelpersJson(*r));
    list.Push(e);
  }
  root.Set("ranks", list);
  return root.Write();
}

std::string RejectedConnectionsNote(const JobOutcome& job) {
  if (job.rejected_connections == 0) return "";
  std::string from;
  for (const auto& [address, n] : job.rejected_from) {
    from += (from.empty() ? "" : ", ") + EscapeControlBytes(address) + " (" + std::to_string(n) + ")";
  }
  return "gpulaunch: note: " + std::to_string(job.rejected_connections) +
         " connection(s) to the job's control channel did not prove they belong to the job and were closed, from " +
         (from.empty() ? std::string("unknown addresses") : from) +
         "; a flood of them can delay the start (docs/security.md)\n";
}

std::string StoppedBySignalHeadline(int sig) {
  return "the job was stopped by " + SignalName(sig) + " sent to gpulaunch" +
         (InSlurmAllocation() ? std::string(" (under Slurm: scancel, the time limit or a preemption)") : std::string());
}

}  // namespace gpulaunch
