// Pipeline schedules as pure action tables: for each pipeline rank, the
// ordered list of what it does (forward, backward, and the sends and
// receives between them). GPipe, 1F1B and interleaved 1F1B (Megatron-LM's
// order) are generated here; CheckSchedule proves a table sound before any
// rank runs it, and SimulateSchedule times it on ideal stages.
//
// Model stage s (0 .. ranks * chunks - 1) runs on pipeline rank s % ranks,
// as chunk s / ranks there. Messages: the activation of micro-batch i
// entering stage s, and the gradient of micro-batch i entering stage s.
// Semantics the checker assumes and the executor provides: sends are posted
// and never wait for the receiver (Communicator::PostSend); a receive waits
// until its message has been sent.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace gpulaunch::rt {

enum class PipeOp { kForward, kBackward, kSendActivation, kRecvActivation, kSendGradient, kRecvGradient };

struct PipeAction {
  PipeOp op;
  int microbatch;
  int stage;  // the model stage on this rank that computes, sends its output, or receives its input
};

struct PipelineSchedule {
  std::string kind;      // "gpipe", "1f1b", "interleaved-1f1b"
  int ranks = 1;
  int microbatches = 1;
  int chunks = 1;        // model chunks per rank (interleaved), else 1
  bool training = true;  // backward passes included
  std::vector<std::vector<PipeAction>> actions;  // per pipeline rank, in order

  int stages() const { return ranks * chunks; }
  int RankOfStage(int stage) const { return stage % ranks; }
};

// All forwards, then (training) all backwards. Inference uses this.
StatusOr<PipelineSchedule> MakeGPipe(int ranks, int microbatches, bool training);
// One forward, one backward in the steady state: at most ranks - rank
// micro-batches in flight on a rank.
StatusOr<PipelineSchedule> Make1F1B(int ranks, int microbatches);
// Megatron-LM's interleaved 1F1B over `chunks` model chunks per rank; needs
// microbatches to be a multiple of ranks.
StatusOr<PipelineSchedule> MakeInterleaved1F1B(int ranks, int microbatches, int chunks);
// By name: "gpipe", "1f1b", "interleaved" (chunks used only by the last).
StatusOr<PipelineSchedule> MakeSchedule(const std::string& kind, int ranks, int microbatches, int chunks,
                                        bool training);

// Proves: every (micro-batch, stage, forward/backward) happens exactly once,
// each on its stage's rank, after its inputs (its receive, its own forward)
// on that rank; every send has exactly one matching receive and every
// receive one send; messages on one channel are received in the order sent;
// and running the table cannot deadlock. The error names the first problem,
// or for a deadlock every stuck rank and the action it waits at.
Status CheckSchedule(const PipelineSchedule& schedule);

// A short text for one action, e.g. "forward mb 3 stage 1",
// "recv activation mb 3 stage 1 from rank 0".
std::string DescribeAction(const PipelineSchedule& schedule, const PipeAction& action);

struct ScheduleTiming {
  double makespan = 0;
  double busy_per_rank = 0;   // compute time of one rank (all ranks are equal)
  double bubble_fraction = 0; // 1 - busy / makespan
};
// Times a checked schedule with every stage's forward taking forward_time /
// chunks and backward backward_time / chunks, each message arriving
// `latency` after it was sent (0: communication free).
ScheduleTiming SimulateSchedule(const PipelineSchedule& schedule, double forward_time, double backward_time,
                                double latency = 0);
// The same with each compute action's own duration (e.g. measured), to
// replay a real run: what its step would take with nothing but the stages'
// times and the message latency.
ScheduleTiming SimulateSchedule(const PipelineSchedule& schedule,
                                const std::function<double(int rank, const PipeAction& action)>& duration,
                                double latency);

// The textbook bubble fractions: (p - 1) / (m + p - 1) for GPipe and 1F1B,
// (p - 1) / (v m + p - 1) for interleaved 1F1B with v chunks.
double TheoreticalBubble(const PipelineSchedule& schedule);

}  // namespace gpulaunch::rt
