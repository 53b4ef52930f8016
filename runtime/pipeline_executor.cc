#include "runtime/pipeline_executor.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "runtime/heartbeat.h"
#include "runtime/step_profiler.h"

namespace gpulaunch::rt {
namespace {

constexpr int kTagBase = 4096;  // clear of the tags collectives use

// The tag of a message channel: direction and the stage the message enters.
int TagOf(const PipelineSchedule& s, bool gradient, int stage_entered) {
  return kTagBase + (gradient ? s.stages() : 0) + stage_entered;
}

// Reports a stall once when no action completes for `ms`.
class StallWatch {
 public:
  StallWatch(int ms, std::function<void()> report) : ms_(ms), report_(std::move(report)) {
    if (ms_ > 0) thread_ = std::thread([this] { Watch(); });
  }
  ~StallWatch() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void Progress() { ++ticks_; }

 private:
  void Watch() {
    std::unique_lock<std::mutex> lock(mu_);
    long seen = -1;
    bool reported = false;
    while (!done_) {
      const long now = ticks_.load();
      if (now != seen) {
        seen = now;
        reported = false;
      } else if (!reported) {
        report_();
        reported = true;
      }
      cv_.wait_for(lock, std::chrono::milliseconds(ms_), [this] { return done_; });
    }
  }
  int ms_;
  std::function<void()> report_;
  std::atomic<long> ticks_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// One rank's run of its table: the buffers between its actions and one
// method per kind of action. Received inputs and computed outputs are kept by
// (micro-batch, stage); sent buffers stay alive until FlushSends (PostSend's
// contract). Blocked time on a neighbour (receives, the final flush) is the
// measured bubble.
class PipelineRun {
 public:
  PipelineRun(const PipelineSchedule& s, Communicator& comm, PipelineStages& stages, StepProfiler& profiler)
      : s_(s), comm_(comm), stages_(stages), profiler_(profiler),
        theory_(profiler.enabled() ? TheoreticalBubble(s) : 0) {}

  Status Do(const PipeAction& a, const std::string& what) {
    switch (a.op) {
      case PipeOp::kForward:
        return Forward(a, what);
      case PipeOp::kBackward:
        return Backward(a, what);
      case PipeOp::kSendActivation:
      case PipeOp::kSendGradient:
        return Send(a, what);
      case PipeOp::kRecvActivation:
      case PipeOp::kRecvGradient:
        return Recv(a, what);
    }
    return Internal(what + ": unknown action");
  }

  Status Flush() {
    const double flush_from = profiler_.enabled() ? profiler_.Now() : 0;
    Status flushed = comm_.FlushSends();
    if (profiler_.enabled()) profiler_.AddBubble(profiler_.Now() - flush_from, theory_);
    return flushed;
  }

 private:
  using Key = std::pair<int, int>;  // (micro-batch, stage)

  Status Forward(const PipeAction& a, const std::string& what) {
    const Key key{a.microbatch, a.stage};
    auto it = inputs_.find(key);
    auto out = stages_.Forward(a.microbatch, a.stage, it == inputs_.end() ? none_ : it->second);
    if (!out.ok()) return Status(out.status().code(), what + ": " + out.status().message());
    if (it != inputs_.end()) inputs_.erase(it);  // the model keeps what its backward needs
    if (a.stage + 1 < s_.stages()) outputs_[key] = std::move(out).value();
    return Status::Ok();
  }

  Status Backward(const PipeAction& a, const std::string& what) {
    const Key key{a.microbatch, a.stage};
    auto it = grads_in_.find(key);
    auto out = stages_.Backward(a.microbatch, a.stage, it == grads_in_.end() ? none_ : it->second);
    if (!out.ok()) return Status(out.status().code(), what + ": " + out.status().message());
    if (it != grads_in_.end()) grads_in_.erase(it);
    if (a.stage > 0) grads_out_[key] = std::move(out).value();
    return Status::Ok();
  }

  // The message: the micro-batch (int32) then the floats.
  Status Send(const PipeAction& a, const std::string& what) {
    const bool gradient = a.op == PipeOp::kSendGradient;
    auto& from = gradient ? grads_out_ : outputs_;
    auto it = from.find(Key{a.microbatch, a.stage});
    const int entered = gradient ? a.stage - 1 : a.stage + 1;
    const size_t floats = stages_.ActivationFloats(gradient ? a.stage : entered);
    if (it == from.end() || it->second.size() != floats) {
      return Internal(what + ": the stage produced " + std::to_string(it == from.end() ? 0 : it->second.size()) +
                      " floats, expected " + std::to_string(floats));
    }
    std::vector<char>& msg = in_flight_.emplace_back(sizeof(int32_t) + floats * sizeof(float));
    const int32_t mb = a.microbatch;
    std::memcpy(msg.data(), &mb, sizeof mb);
    std::memcpy(msg.data() + sizeof mb, it->second.data(), floats * sizeof(float));
    from.erase(it);
    return comm_.PostSend(s_.RankOfStage(entered), TagOf(s_, gradient, entered), msg.data(), msg.size());
  }

  Status Recv(const PipeAction& a, const std::string& what) {
    const bool gradient = a.op == PipeOp::kRecvGradient;
    const int from_stage = gradient ? a.stage + 1 : a.stage - 1;
    const size_t floats = stages_.ActivationFloats(gradient ? a.stage + 1 : a.stage);
    std::vector<char> msg(sizeof(int32_t) + floats * sizeof(float));
    const double wait_from = profiler_.enabled() ? profiler_.Now() : 0;
    GL_RETURN_IF_ERROR(comm_.Recv(s_.RankOfStage(from_stage), TagOf(s_, gradient, a.stage), msg.data(), msg.size()));
    if (profiler_.enabled()) profiler_.AddBubble(profiler_.Now() - wait_from, theory_);
    int32_t mb = -1;
    std::memcpy(&mb, msg.data(), sizeof mb);
    if (mb != a.microbatch) {
      return Internal(what + ": received micro-batch " + std::to_string(mb) + " instead; the ranks run different "
                      "schedules");
    }
    std::vector<float> values(floats);
    std::memcpy(values.data(), msg.data() + sizeof mb, floats * sizeof(float));
    (gradient ? grads_in_ : inputs_)[Key{a.microbatch, a.stage}] = std::move(values);
    return Status::Ok();
  }

  const PipelineSchedule& s_;
  Communicator& comm_;
  PipelineStages& stages_;
  StepProfiler& profiler_;
  const double theory_;
  std::map<Key, std::vector<float>> inputs_, grads_in_, outputs_, grads_out_;
  std::deque<std::vector<char>> in_flight_;
  const std::vector<float> none_;
};

}  // namespace

Status RunPipeline(const PipelineSchedule& s, Communicator& comm, PipelineStages& stages,
                   const PipelineRunOptions& options) {
  GL_RETURN_IF_ERROR(CheckSchedule(s));
  if (comm.size() != s.ranks) {
    return InvalidArgument("the pipeline communicator has " + std::to_string(comm.size()) + " ranks, the schedule " +
                           std::to_string(s.ranks));
  }
  const int rank = comm.rank();
  const std::vector<PipeAction>& table = s.actions[rank];
  std::atomic<int> position{0};
  auto report = options.report ? options.report : [](const std::string& line) { std::cerr << line << std::endl; };
  StallWatch watch(options.stall_report_ms, [&] {
    const int at = position.load();
    report("gpurt pipeline: rank " + std::to_string(rank) + " stalled: last completed " +
           (at == 0 ? std::string("nothing") : DescribeAction(s, table[at - 1])) + "; waiting at action " +
           std::to_string(at) + " (" + (at < static_cast<int>(table.size()) ? DescribeAction(s, table[at]) : "end") +
           ")");
  });
  StepProfiler disabled;
  StepProfiler& profiler = s.ranks < 2 ? disabled : options.profiler ? *options.profiler : StepProfiler::Process();
  PipelineRun run(s, comm, stages, profiler);
  for (size_t i = 0; i < table.size(); ++i) {
    ReportProgress();  // the previous action completed
    GL_RETURN_IF_ERROR(run.Do(table[i], "pipeline rank " + std::to_string(rank) + ", " + DescribeAction(s, table[i])));
    position = static_cast<int>(i) + 1;
    watch.Progress();
  }
  return run.Flush();
}

}  // namespace gpulaunch::rt
