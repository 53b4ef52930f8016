#include "runtime/pipeline_executor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "runtime/thread_communicator.h"

namespace gpulaunch::rt {
namespace {

constexpr size_t kWidth = 5;

// Stage s: y = 2x + s (+ mb at stage 0's input). Backward: dx = 2 dy, with
// dy = 1 at the last stage. Results and gradients are recorded per mb.
class ToyStages : public PipelineStages {
 public:
  ToyStages(int stages, int slow_stage = -1, int slow_ms = 0)
      : stages_(stages), slow_stage_(slow_stage), slow_ms_(slow_ms) {}
  size_t ActivationFloats(int) const override { return kWidth; }
  StatusOr<std::vector<float>> Forward(int mb, int stage, const std::vector<float>& in) override {
    if (stage == slow_stage_) std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms_));
    std::vector<float> x = stage == 0 ? std::vector<float>(kWidth, static_cast<float>(mb)) : in;
    if (x.size() != kWidth) return Internal("bad input size");
    for (float& v : x) v = 2 * v + static_cast<float>(stage);
    if (stage + 1 == stages_) {
      std::lock_guard<std::mutex> lock(mu_);
      result_[mb] = x[0];
    }
    return x;
  }
  StatusOr<std::vector<float>> Backward(int mb, int stage, const std::vector<float>& dy) override {
    std::vector<float> g = stage + 1 == stages_ ? std::vector<float>(kWidth, 1.0f) : dy;
    for (float& v : g) v *= 2;
    if (stage == 0) {
      std::lock_guard<std::mutex> lock(mu_);
      grad_[mb] = g[0];
    }
    return g;
  }
  std::map<int, float> result_, grad_;

 private:
  int stages_, slow_stage_, slow_ms_;
  std::mutex mu_;
};

float Expected(int mb, int stages) {
  float x = static_cast<float>(mb);
  for (int s = 0; s < stages; ++s) x = 2 * x + static_cast<float>(s);
  return x;
}

// Runs `schedule` on threads with one shared ToyStages (stages are disjoint
// per rank, results behind a mutex).
void RunOnToy(const PipelineSchedule& schedule, ToyStages& model, std::vector<Status>& status,
              const PipelineRunOptions& options = {}) {
  status.assign(schedule.ranks, Status::Ok());
  RunOnThreads(schedule.ranks, [&](Communicator& comm) {
    status[comm.rank()] = RunPipeline(schedule, comm, model, options);
  });
}

TEST(PipelineExecutor, RandomShapesRunToTheEndWithTheRightValues) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    const int p = 1 + static_cast<int>(rng() % 4);
    const int m = p * (1 + static_cast<int>(rng() % 3));
    const int kind = static_cast<int>(rng() % 4);
    auto s = kind == 0 ? MakeGPipe(p, m, false) : kind == 1 ? MakeGPipe(p, m, true) : kind == 2
             ? Make1F1B(p, m) : MakeInterleaved1F1B(p, m, 2);
    ASSERT_TRUE(s.ok());
    ToyStages model(s->stages());
    std::vector<Status> status;
    RunOnToy(*s, model, status);
    for (int r = 0; r < p; ++r) ASSERT_TRUE(status[r].ok()) << s->kind << " rank " << r << ": " << status[r].message();
    ASSERT_EQ(static_cast<int>(model.result_.size()), m) << s->kind;
    for (int mb = 0; mb < m; ++mb) EXPECT_EQ(model.result_[mb], Expected(mb, s->stages())) << s->kind << " mb " << mb;
    if (s->training) {
      ASSERT_EQ(static_cast<int>(model.grad_.size()), m);
      for (int mb = 0; mb < m; ++mb) EXPECT_EQ(model.grad_[mb], static_cast<float>(1 << s->stages()));
    }
  }
}

TEST(PipelineExecutor, AStallNamesTheLastActionAndTheWait) {
  auto s = MakeGPipe(2, 2, false);
  ToyStages model(2, /*slow_stage=*/0, /*slow_ms=*/400);
  std::mutex mu;
  std::vector<std::string> reports;
  PipelineRunOptions options;
  options.stall_report_ms = 100;
  options.report = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    reports.push_back(line);
  };
  std::vector<Status> status;
  RunOnToy(*s, model, status, options);
  ASSERT_TRUE(status[0].ok() && status[1].ok());
  bool rank1_reported = false;
  for (const std::string& r : reports) {
    rank1_reported = rank1_reported ||
                     r == "gpurt pipeline: rank 1 stalled: last completed nothing; waiting at action 0 (recv activation "
                          "mb 0 stage 1 from rank 0)";
  }
  EXPECT_TRUE(rank1_reported) << (reports.empty() ? "no reports" : reports.front());
}

TEST(PipelineExecutor, RefusesAnUncheckedOrMismatchedSchedule) {
  auto s = *MakeGPipe(2, 1, true);
  std::swap(s.actions[0][1], s.actions[0][2]);  // deadlocks
  ToyStages model(2);
  std::vector<Status> status;
  RunOnToy(s, model, status);
  EXPECT_NE(status[0].message().find("deadlocks"), std::string::npos);
  auto three = *MakeGPipe(3, 1, false);
  status.assign(2, Status::Ok());
  RunOnThreads(2, [&](Communicator& comm) { status[comm.rank()] = RunPipeline(three, comm, model); });
  EXPECT_NE(status[0].message().find("communicator has 2 ranks, the schedule 3"), std::string::npos);
}

}  // namespace
}  // namespace gpulaunch::rt
