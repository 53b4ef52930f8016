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

  // Received inputs and computed outputs by (micro-batch, stage); sent
  // buffers stay alive until FlushSends (PostSend's contract).
  std::map<std::pair<int, int>, std::vector<float>> inputs, grads_in, outputs, grads_out;
  std::deque<std::vector<char>> in_flight;
  const std::vector<float> none;
  // Measured bubble: time blocked on a neighbour (receives, final flush).
  StepProfiler disabled;
  StepProfiler& profiler = s.ranks < 2 ? disabled : options.profiler ? *options.profiler : StepProfiler::Process();
  const double theory = profiler.enabled() ? TheoreticalBubble(s) : 0;
  for (size_t i = 0; i < table.size(); ++i) {
    ReportProgress();  // the previous action completed
    const PipeAction& a = table[i];
    const auto key = std::make_pair(a.microbatch, a.stage);
    const std::string what = "pipeline rank " + std::to_string(rank) + ", " + DescribeAction(s, a);
    switch (a.op) {
      case PipeOp::kForward: {
        auto it = inputs.find(key);
        auto out = stages.Forward(a.microbatch, a.stage, it == inputs.end() ? none : it->second);
        if (!out.ok()) return Status(out.status().code(), what + ": " + out.status().message());
        if (it != inputs.end()) inputs.erase(it);  // the model keeps what its backward needs
        if (a.stage + 1 < s.stages()) outputs[key] = std::move(out).value();
        break;
      }
      case PipeOp::kBackward: {
        auto it = grads_in.find(key);
        auto out = stages.Backward(a.microbatch, a.stage, it == grads_in.end() ? none : it->second);
        if (!out.ok()) return Status(out.status().code(), what + ": " + out.status().message());
        if (it != grads_in.end()) grads_in.erase(it);
        if (a.stage > 0) grads_out[key] = std::move(out).value();
        break;
      }
      case PipeOp::kSendActivation:
      case PipeOp::kSendGradient: {
        const bool gradient = a.op == PipeOp::kSendGradient;
        auto& from = gradient ? grads_out : outputs;
        auto it = from.find(key);
        const int entered = gradient ? a.stage - 1 : a.stage + 1;
        const size_t floats = stages.ActivationFloats(gradient ? a.stage : entered);
        if (it == from.end() || it->second.size() != floats) {
          return Internal(what + ": the stage produced " +
                          std::to_string(it == from.end() ? 0 : it->second.size()) + " floats, expected " +
                          std::to_string(floats));
        }
        std::vector<char>& msg = in_flight.emplace_back(sizeof(int32_t) + floats * sizeof(float));
        const int32_t mb = a.microbatch;
        std::memcpy(msg.data(), &mb, sizeof mb);
        std::memcpy(msg.data() + sizeof mb, it->second.data(), floats * sizeof(float));
        from.erase(it);
        GL_RETURN_IF_ERROR(comm.PostSend(s.RankOfStage(entered), TagOf(s, gradient, entered), msg.data(), msg.size()));
        break;
      }
      case PipeOp::kRecvActivation:
      case PipeOp::kRecvGradient: {
        const bool gradient = a.op == PipeOp::kRecvGradient;
        const int from_stage = gradient ? a.stage + 1 : a.stage - 1;
        const size_t floats = stages.ActivationFloats(gradient ? a.stage + 1 : a.stage);
        std::vector<char> msg(sizeof(int32_t) + floats * sizeof(float));
        const double wait_from = profiler.enabled() ? profiler.Now() : 0;
        GL_RETURN_IF_ERROR(comm.Recv(s.RankOfStage(from_stage), TagOf(s, gradient, a.stage), msg.data(), msg.size()));
        if (profiler.enabled()) profiler.AddBubble(profiler.Now() - wait_from, theory);
        int32_t mb = -1;
        std::memcpy(&mb, msg.data(), sizeof mb);
        if (mb != a.microbatch) {
          return Internal(what + ": received micro-batch " + std::to_string(mb) + " instead; the ranks run different "
                          "schedules");
        }
        std::vector<float> values(floats);
        std::memcpy(values.data(), msg.data() + sizeof mb, floats * sizeof(float));
        (gradient ? grads_in : inputs)[key] = std::move(values);
        break;
      }
    }
    position = static_cast<int>(i) + 1;
    watch.Progress();
  }
  const double flush_from = profiler.enabled() ? profiler.Now() : 0;
  Status flushed = comm.FlushSends();
  if (profiler.enabled()) profiler.AddBubble(profiler.Now() - flush_from, theory);
  return flushed;
}

}  // namespace gpulaunch::rt
