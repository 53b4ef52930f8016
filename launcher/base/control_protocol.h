// The line protocol between each rank's exec shim and gpulaunch. One
// connection per rank (a Unix socket in the job directory for a one-host
// job, else TCP to the address gpulaunch advertises), opened by the shim
// before the job starts and kept for the rank's lifetime. It begins with the
// handshake of control_auth.h, which binds the connection to one rank; after
// it every line carries a tag, and a line with a wrong tag, for another rank,
// or against the order below closes the connection. Every message is one
// line of space-separated fields; free text is the last field and never
// holds a newline. Text is made safe again where it arrives (control bytes
// escaped, cut at 1,000 bytes): a peer need not have used FormatControlLine.
//
// Each rank sends `slot` at most once, then `checkin` or `refuse` once, and
// `exit` once; `stacks` only when asked; `metric` is kept only with
// --profile. A pid in `checkin` is never signalled as such: gpulaunch keeps a
// pidfd for it only when that process descends from gpulaunch
// (process_tree.h).
//
// shim -> gpulaunch
//   slot <rank> [<fingerprint>]        asks for the rank's row of the plan (the
//                                      first line on a connection, before checkin);
//                                      one rank a host (its engine's local rank 0)
//                                      adds its host's fingerprint
//                                      (host_fingerprint.h)
//   checkin <rank> <pid> <world> <host> <plan hash> <slurm JOB.STEP | -> [cgroup]
//       the job process <pid> is about to exec; <world> is the world size the
//       engine told this rank (a mismatch with the plan means the engine did
//       not start the job it was asked to, e.g. N singletons under srun
//       without PMIx); `cgroup` when the rank runs in a cgroup of its own,
//       which outlives a SIGKILL of its shim (launcher/base/rank_cgroup.h)
//   refuse <rank> <host> <reason>      the shim would not start the rank
//   beat <rank>                        the job made progress (rate-limited)
//   singleton <rank>                   the job's MPI_Init gave it a world of 1
//                                      where the engine started more: its MPI
//                                      is not the one the engine starts (said
//                                      by the runtime, runtime/gpurt.h)
//   tail <rank> <line>                 one of the last lines of its stderr
//   exit <rank> code|signal <value> [stopped]
//                                      the job process ended; `stopped` when
//                                      the shim had passed it a stop signal
//                                      first (the engine's, forwarded, or
//                                      gpulaunch's `signal`): it ended because
//                                      it was told to, not on its own
//   stacks <rank> <bytes> ~TAG\n<bytes> answer to a `stacks` request (at most
//                                      kMaxStackBytes; the tag covers the bytes)
//   metric <rank> <json>               one profiled step (common/step_metrics.h),
//                                      with --profile
//   helper <rank> <pid> <ms> term|kill <command>
//                                      a process the rank left running when its
//                                      main process ended (or was still running
//                                      when the rank was stopped), stopped by the
//                                      shim `ms` after the rank ended: by SIGTERM,
//                                      or SIGKILL after the kill grace
//                                      (launcher/shim/descendants.h); before `exit`
// gpulaunch -> shim
//   slot <rank> <plan hash> <row>      the answer to `slot`: the row as in the
//                                      slot table (slot_table.h); "-" when the
//                                      plan has no such rank; "!" when a host's
//                                      topology changed since the plan was made
//                                      (the rank must not start: gpulaunch plans
//                                      and launches again). When the plan came
//                                      from cached topologies, no answer leaves
//                                      before every host's fingerprint arrived
//                                      and matched, so no rank runs on a plan
//                                      that a changed host makes wrong.
//   stacks                             dump the job process's stacks
//   signal 2|15|1|9                    send SIGINT, SIGTERM, SIGHUP or SIGKILL to
//                                      the job process (gpulaunch's own stop sequence)
//   started                            every rank of the job has checked in; sent
//                                      once to each rank's connection (also after
//                                      its `exit`): under Open MPI a rank whose job
//                                      process ended with code 0 waits for it before
//                                      its shim exits (rank_supervisor.h)
//
// gpulaunch stamps every message with its own clock when it arrives, so the
// summary's times never mix the clocks of different hosts.
#pragma once

#include <optional>
#include <string>

namespace gpulaunch {

struct ControlMessage {
  enum class Kind { kCheckin, kRefuse, kBeat, kTail, kExit, kStacks, kMetric, kSlot, kHelper, kSingleton };
  Kind kind = Kind::kBeat;
  int rank = -1;
  int pid = -1;
  int world = 0;
  std::string host;
  std::string plan_hash;
  std::string slurm_step;   // "JOB.STEP", or empty
  bool in_cgroup = false;   // checkin: the rank runs in a cgroup of its own (launcher/base/rank_cgroup.h)
  bool signaled = false;    // exit: `value` is a signal number, else an exit code; helper: it took SIGKILL
  bool told_to_stop = false; // exit: a stop signal reached it through the shim first
  int value = 0;            // exit: the code or signal; helper: ms after the rank ended
  std::string text;         // refuse: reason; tail: the line; metric: the JSON record; slot: the fingerprint;
                            // helper: the command
  size_t payload_bytes = 0; // stacks: how many raw bytes follow the line
};

// A TCP control socket's settings, on both ends. A host that vanishes never
// closes its connections: keepalive probes and a bound on unacknowledged
// data make the other side see the connection fail within about
// kVanishedPeerSeconds instead. And lines go out as they are written
// (TCP_NODELAY): after the handshake's round trip, Nagle's algorithm would
// otherwise hold a second small line until the first one's delayed ACK,
// 40 ms later.
inline constexpr int kVanishedPeerSeconds = 6;
void ConfigureControlSocket(int fd);

inline constexpr size_t kMaxMetricBytes = 16000;

// The `slot` answer's row when a host changed since the plan was made.
inline constexpr const char* kHostChangedRow = "!";

// Parses one line (without its newline); nullopt when it is not a message.
std::optional<ControlMessage> ParseControlLine(const std::string& line);

// The line for a message, newline included. Free text is made safe: control
// characters become '?', and it is cut at 1,000 bytes (a metric record at
// kMaxMetricBytes; a longer one is dropped whole, never cut).
std::string FormatControlLine(const ControlMessage& m);

// A check-in line cut where its pid goes: before + decimal pid + after is
// FormatControlLine of `m` with that pid. The shim's job process sends it
// itself between vfork and exec, when only system calls are allowed.
struct CheckinLineParts {
  std::string before_pid, after_pid;
};
CheckinLineParts CheckinLineAround(const ControlMessage& m);

}  // namespace gpulaunch
