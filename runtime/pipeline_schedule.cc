#include "runtime/pipeline_schedule.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>

namespace gpulaunch::rt {
namespace {

// A message: (is gradient, micro-batch, the stage it enters).
using MessageId = std::tuple<bool, int, int>;

Status CheckShape(int ranks, int microbatches, int chunks) {
  if (ranks < 1) return InvalidArgument("a pipeline needs at least 1 rank, got " + std::to_string(ranks));
  if (microbatches < 1) return InvalidArgument("a pipeline needs at least 1 micro-batch, got " + std::to_string(microbatches));
  if (chunks < 1) return InvalidArgument("chunks per rank must be at least 1, got " + std::to_string(chunks));
  return Status::Ok();
}

PipelineSchedule Empty(std::string kind, int ranks, int microbatches, int chunks, bool training) {
  PipelineSchedule s;
  s.kind = std::move(kind);
  s.ranks = ranks;
  s.microbatches = microbatches;
  s.chunks = chunks;
  s.training = training;
  s.actions.resize(ranks);
  return s;
}

void AddForward(PipelineSchedule& s, std::vector<PipeAction>& out, int mb, int stage) {
  if (stage > 0) out.push_back({PipeOp::kRecvActivation, mb, stage});
  out.push_back({PipeOp::kForward, mb, stage});
  if (stage + 1 < s.stages()) out.push_back({PipeOp::kSendActivation, mb, stage});
}

void AddBackward(PipelineSchedule& s, std::vector<PipeAction>& out, int mb, int stage) {
  if (stage + 1 < s.stages()) out.push_back({PipeOp::kRecvGradient, mb, stage});
  out.push_back({PipeOp::kBackward, mb, stage});
  if (stage > 0) out.push_back({PipeOp::kSendGradient, mb, stage});
}

bool IsSend(PipeOp op) { return op == PipeOp::kSendActivation || op == PipeOp::kSendGradient; }
bool IsRecv(PipeOp op) { return op == PipeOp::kRecvActivation || op == PipeOp::kRecvGradient; }

// The message a send or receive moves.
MessageId MessageOf(const PipeAction& a) {
  switch (a.op) {
    case PipeOp::kSendActivation: return {false, a.microbatch, a.stage + 1};
    case PipeOp::kRecvActivation: return {false, a.microbatch, a.stage};
    case PipeOp::kSendGradient: return {true, a.microbatch, a.stage - 1};
    default: return {true, a.microbatch, a.stage};  // kRecvGradient
  }
}

// Runs the table with posted sends and waiting receives, calling `step` for
// each action as it runs. Returns each rank's next action index (the table's
// length when it finished).
std::vector<size_t> Execute(const PipelineSchedule& s, const std::function<void(int, const PipeAction&)>& step) {
  std::vector<size_t> pc(s.ranks, 0);
  std::set<MessageId> sent;
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < s.ranks; ++r) {
      while (pc[r] < s.actions[r].size()) {
        const PipeAction& a = s.actions[r][pc[r]];
        if (IsRecv(a.op) && !sent.count(MessageOf(a))) break;
        if (IsSend(a.op)) sent.insert(MessageOf(a));
        step(r, a);
        ++pc[r];
        progress = true;
      }
    }
  }
  return pc;
}

}  // namespace

StatusOr<PipelineSchedule> MakeGPipe(int ranks, int microbatches, bool training) {
  GL_RETURN_IF_ERROR(CheckShape(ranks, microbatches, 1));
  PipelineSchedule s = Empty("gpipe", ranks, microbatches, 1, training);
  for (int r = 0; r < ranks; ++r) {
    for (int mb = 0; mb < microbatches; ++mb) AddForward(s, s.actions[r], mb, r);
    if (training) {
      for (int mb = 0; mb < microbatches; ++mb) AddBackward(s, s.actions[r], mb, r);
    }
  }
  return s;
}

StatusOr<PipelineSchedule> Make1F1B(int ranks, int microbatches) {
  GL_RETURN_IF_ERROR(CheckShape(ranks, microbatches, 1));
  PipelineSchedule s = Empty("1f1b", ranks, microbatches, 1, true);
  for (int r = 0; r < ranks; ++r) {
    const int warmup = std::min(ranks - r - 1, microbatches);
    auto& out = s.actions[r];
    for (int mb = 0; mb < warmup; ++mb) AddForward(s, out, mb, r);
    for (int k = 0; k < microbatches - warmup; ++k) {
      AddForward(s, out, warmup + k, r);
      AddBackward(s, out, k, r);
    }
    for (int mb = microbatches - warmup; mb < microbatches; ++mb) AddBackward(s, out, mb, r);
  }
  return s;
}

StatusOr<PipelineSchedule> MakeInterleaved1F1B(int ranks, int microbatches, int chunks) {
  GL_RETURN_IF_ERROR(CheckShape(ranks, microbatches, chunks));
  if (microbatches % ranks != 0) {
    return InvalidArgument("interleaved 1F1B needs the micro-batches (" + std::to_string(microbatches) +
                           ") to be a multiple of the pipeline ranks (" + std::to_string(ranks) +
                           "); use " + std::to_string((microbatches / ranks + 1) * ranks) + " micro-batches");
  }
  PipelineSchedule s = Empty("interleaved-1f1b", ranks, microbatches, chunks, true);
  const int total = microbatches * chunks;  // (micro-batch, chunk) pairs per rank
  const int group = ranks * chunks;
  // The k-th forward (backward) of a rank: micro-batches go in groups of
  // `ranks` through chunk 0, then chunk 1, ... (backward: last chunk first).
  auto mb_of = [&](int k) { return (k / group) * ranks + k % ranks; };
  auto chunk_of = [&](int k, bool forward) {
    const int c = (k % group) / ranks;
    return forward ? c : chunks - 1 - c;
  };
  for (int r = 0; r < ranks; ++r) {
    auto& out = s.actions[r];
    const int warmup = std::min(total, (ranks - r - 1) * 2 + (chunks - 1) * ranks);
    auto forward = [&](int k) { AddForward(s, out, mb_of(k), chunk_of(k, true) * ranks + r); };
    auto backward = [&](int k) { AddBackward(s, out, mb_of(k), chunk_of(k, false) * ranks + r); };
    for (int k = 0; k < warmup; ++k) forward(k);
    for (int k = 0; k < total - warmup; ++k) {
      forward(warmup + k);
      backward(k);
    }
    for (int k = total - warmup; k < total; ++k) backward(k);
  }
  return s;
}

StatusOr<PipelineSchedule> MakeSchedule(const std::string& kind, int ranks, int microbatches, int chunks,
                                        bool training) {
  if (kind == "gpipe") return MakeGPipe(ranks, microbatches, training);
  if (!training) {
    return InvalidArgument("schedule '" + kind + "' interleaves backward passes; for inference use gpipe");
  }
  if (kind == "1f1b") return Make1F1B(ranks, microbatches);
  if (kind == "interleaved") return MakeInterleaved1F1B(ranks, microbatches, chunks);
  return InvalidArgument("unknown pipeline schedule '" + kind + "'; use gpipe, 1f1b or interleaved");
}

std::string DescribeAction(const PipelineSchedule& s, const PipeAction& a) {
  const std::string mb = " mb " + std::to_string(a.microbatch) + " stage " + std::to_string(a.stage);
  switch (a.op) {
    case PipeOp::kForward: return "forward" + mb;
    case PipeOp::kBackward: return "backward" + mb;
    case PipeOp::kSendActivation:
      return "send activation" + mb + " to rank " + std::to_string(s.RankOfStage(a.stage + 1));
    case PipeOp::kRecvActivation:
      return "recv activation" + mb + " from rank " + std::to_string(s.RankOfStage(a.stage - 1));
    case PipeOp::kSendGradient:
      return "send gradient" + mb + " to rank " + std::to_string(s.RankOfStage(a.stage - 1));
    case PipeOp::kRecvGradient:
      return "recv gradient" + mb + " from rank " + std::to_string(s.RankOfStage(a.stage + 1));
  }
  return "?";
}

namespace {

// What CheckSchedule learns in one pass over the tables, and the checks on it.
class ScheduleChecker {
 public:
  explicit ScheduleChecker(const PipelineSchedule& s) : s_(s), stages_(s.stages()) {}

  // One action, in table order: in range, on its stage's rank, after what it
  // depends on, and only once; its message counted on its channel.
  Status Take(int r, size_t i) {
    const PipeAction& a = s_.actions[r][i];
    const std::string where = "rank " + std::to_string(r) + " action " + std::to_string(i) + " (" +
                              DescribeAction(s_, a) + ")";
    if (a.microbatch < 0 || a.microbatch >= s_.microbatches || a.stage < 0 || a.stage >= stages_) {
      return InvalidArgument(where + ": micro-batch or stage out of range");
    }
    if (s_.RankOfStage(a.stage) != r) {
      return InvalidArgument(where + ": stage " + std::to_string(a.stage) + " runs on rank " +
                             std::to_string(s_.RankOfStage(a.stage)));
    }
    if (!s_.training && (a.op == PipeOp::kBackward || a.op == PipeOp::kSendGradient || a.op == PipeOp::kRecvGradient)) {
      return InvalidArgument(where + ": a backward action in an inference schedule");
    }
    if ((a.op == PipeOp::kSendActivation && a.stage + 1 >= stages_) || (a.op == PipeOp::kRecvActivation && a.stage == 0) ||
        (a.op == PipeOp::kSendGradient && a.stage == 0) || (a.op == PipeOp::kRecvGradient && a.stage + 1 >= stages_)) {
      return InvalidArgument(where + ": no stage on the other side");
    }
    GL_RETURN_IF_ERROR(CheckOrder(r, a, where));
    if (!done_.emplace(std::make_tuple(a.op, a.microbatch, a.stage), std::make_pair(r, i)).second) {
      return InvalidArgument(where + ": happens twice");
    }
    if (IsSend(a.op) || IsRecv(a.op)) {
      const MessageId m = MessageOf(a);
      const int peer = s_.RankOfStage(IsSend(a.op) ? std::get<2>(m) : (std::get<0>(m) ? a.stage + 1 : a.stage - 1));
      const auto channel = IsSend(a.op) ? std::make_tuple(r, peer, std::get<0>(m), std::get<2>(m))
                                        : std::make_tuple(peer, r, std::get<0>(m), std::get<2>(m));
      (IsSend(a.op) ? sent_order_ : received_order_)[channel].push_back(a.microbatch);
      ++(IsSend(a.op) ? sends_ : recvs_)[m];
    }
    return Status::Ok();
  }

  // Every forward (and, training, every backward) of every micro-batch and stage.
  Status EveryComputeHappens() const {
    for (int mb = 0; mb < s_.microbatches; ++mb) {
      for (int st = 0; st < stages_; ++st) {
        for (PipeOp op : {PipeOp::kForward, PipeOp::kBackward}) {
          if (op == PipeOp::kBackward && !s_.training) continue;
          if (!done_.count({op, mb, st})) {
            return InvalidArgument(std::string(op == PipeOp::kForward ? "forward" : "backward") + " of mb " +
                                   std::to_string(mb) + " stage " + std::to_string(st) + " never happens");
          }
        }
      }
    }
    return Status::Ok();
  }

  // Every message sent once and received once, in the same micro-batch order
  // on each channel.
  Status MessagesMatch() {
    for (const auto& [m, n] : sends_) {
      if (n != 1 || recvs_[m] != 1) {
        return InvalidArgument(std::string(std::get<0>(m) ? "gradient" : "activation") + " of mb " +
                               std::to_string(std::get<1>(m)) + " into stage " + std::to_string(std::get<2>(m)) +
                               " is sent " + std::to_string(n) + " time(s) and received " + std::to_string(recvs_[m]));
      }
    }
    for (const auto& [m, n] : recvs_) {
      if (!sends_.count(m)) {
        return InvalidArgument(std::string(std::get<0>(m) ? "gradient" : "activation") + " of mb " +
                               std::to_string(std::get<1>(m)) + " into stage " + std::to_string(std::get<2>(m)) +
                               " is received but never sent");
      }
    }
    for (const auto& [channel, order] : sent_order_) {
      if (received_order_[channel] != order) {
        return InvalidArgument("rank " + std::to_string(std::get<0>(channel)) + " sends " +
                               (std::get<2>(channel) ? "gradients" : "activations") + " into stage " +
                               std::to_string(std::get<3>(channel)) + " in another micro-batch order than rank " +
                               std::to_string(std::get<1>(channel)) + " receives them");
      }
    }
    return Status::Ok();
  }

 private:
  // What an action needs done before it on its own rank.
  Status CheckOrder(int r, const PipeAction& a, const std::string& where) const {
    auto before = [&](PipeOp op) {
      const auto it = done_.find({op, a.microbatch, a.stage});
      return it != done_.end() && it->second.first == r;
    };
    if (a.op == PipeOp::kForward && a.stage > 0 && !before(PipeOp::kRecvActivation)) {
      return InvalidArgument(where + ": runs before its activation is received");
    }
    if (a.op == PipeOp::kBackward && !before(PipeOp::kForward)) return InvalidArgument(where + ": runs before its forward");
    if (a.op == PipeOp::kBackward && a.stage + 1 < stages_ && !before(PipeOp::kRecvGradient)) {
      return InvalidArgument(where + ": runs before its gradient is received");
    }
    if (a.op == PipeOp::kSendActivation && !before(PipeOp::kForward)) return InvalidArgument(where + ": sends before computing");
    if (a.op == PipeOp::kSendGradient && !before(PipeOp::kBackward)) return InvalidArgument(where + ": sends before computing");
    return Status::Ok();
  }

  const PipelineSchedule& s_;
  const int stages_;
  // (op, mb, stage) -> rank and position where it happens.
  std::map<std::tuple<PipeOp, int, int>, std::pair<int, size_t>> done_;
  std::map<MessageId, int> sends_, recvs_;
  // Channel (src rank, dst rank, is gradient, stage entered) -> micro-batches in order.
  std::map<std::tuple<int, int, bool, int>, std::vector<int>> sent_order_, received_order_;
};

}  // namespace

Status CheckSchedule(const PipelineSchedule& s) {
  GL_RETURN_IF_ERROR(CheckShape(s.ranks, s.microbatches, s.chunks));
  if (static_cast<int>(s.actions.size()) != s.ranks) {
    return InvalidArgument("the schedule has tables for " + std::to_string(s.actions.size()) + " ranks, not " +
                           std::to_string(s.ranks));
  }
  ScheduleChecker checker(s);
  for (int r = 0; r < s.ranks; ++r)
    for (size_t i = 0; i < s.actions[r].size(); ++i) GL_RETURN_IF_ERROR(checker.Take(r, i));
  GL_RETURN_IF_ERROR(checker.EveryComputeHappens());
  GL_RETURN_IF_ERROR(checker.MessagesMatch());
  const std::vector<size_t> pc = Execute(s, [](int, const PipeAction&) {});
  std::string stuck;
  for (int r = 0; r < s.ranks; ++r) {
    if (pc[r] == s.actions[r].size()) continue;
    stuck += "; rank " + std::to_string(r) + " waits at action " + std::to_string(pc[r]) + " (" +
             DescribeAction(s, s.actions[r][pc[r]]) + ")";
  }
  if (!stuck.empty()) return FailedPrecondition("the schedule deadlocks" + stuck);
  return Status::Ok();
}

ScheduleTiming SimulateSchedule(const PipelineSchedule& s, double forward_time, double backward_time, double latency) {
  return SimulateSchedule(
      s,
      [&](int, const PipeAction& a) {
        return a.op == PipeOp::kForward ? forward_time / s.chunks : a.op == PipeOp::kBackward ? backward_time / s.chunks : 0;
      },
      latency);
}

ScheduleTiming SimulateSchedule(const PipelineSchedule& s, const std::function<double(int, const PipeAction&)>& duration,
                                double latency) {
  std::vector<double> clock(s.ranks, 0), busy(s.ranks, 0);
  std::map<MessageId, double> sent_at;
  Execute(s, [&](int r, const PipeAction& a) {
    const double d = a.op == PipeOp::kForward || a.op == PipeOp::kBackward ? duration(r, a) : 0;
    if (IsRecv(a.op)) clock[r] = std::max(clock[r], sent_at[MessageOf(a)]);
    clock[r] += d;
    busy[r] += d;
    if (IsSend(a.op)) sent_at[MessageOf(a)] = clock[r] + latency;
  });
  ScheduleTiming t;
  t.makespan = *std::max_element(clock.begin(), clock.end());
  double total = 0;
  for (double b : busy) total += b;
  t.busy_per_rank = total / s.ranks;
  t.bubble_fraction = t.makespan > 0 ? 1 - t.busy_per_rank / t.makespan : 0;
  return t;
}

double TheoreticalBubble(const PipelineSchedule& s) {
  const double p = s.ranks, m = s.microbatches, v = s.chunks;
  return (p - 1) / (v * m + p - 1);
}

}  // namespace gpulaunch::rt
