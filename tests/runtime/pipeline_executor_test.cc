#include "runtime/pipeline_executor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <random>

#include "runtime/thread_communicator.h"

namespace gpulaunch::rt {
namespace {

constexpr size_t kWidth = 5;

// Stage s: y = 2x + s (+ mb at stage 0's input). Backward: dx = 2 dy, with
// dy = 1 at the last stage. Results and gradients are recorded per mb.
class ToyStages : public PipelineStages {
 public:
  explicit ToyStages(int stages) : stages_(stages) {}
  size_t ActivationFloats(int) const override { return kWidth; }
  StatusOr<std::vector<float>> Forward(int mb, int stage, const std::vector<float>& in) override {
    if (before_forward) before_forward(stage);
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
  std::function<void(int stage)> before_forward;  // called on the stage's thread

 private:
  int stages_;
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
  ToyStages model(2);
  const std::string want =
      "gpurt pipeline: rank 1 stalled: last completed nothing; waiting at action 0 (recv activation mb 0 stage 1 "
      "from rank 0)";
  std::mutex mu;
  std::condition_variable reported;
  std::vector<std::string> reports;
  bool rank1_reported = false;
  PipelineRunOptions options;
  options.stall_report_ms = 100;
  options.report = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    reports.push_back(line);
    rank1_reported = rank1_reported || line == want;
    reported.notify_all();
  };
  // Stage 0 holds its first forward until rank 1 has reported its stall, so
  // the stall lasts as long as the report takes to come, on any load; the
  // timeout only keeps a broken watch from hanging the test.
  model.before_forward = [&](int stage) {
    if (stage != 0) return;
    std::unique_lock<std::mutex> lock(mu);
    reported.wait_for(lock, std::chrono::seconds(120), [&] { return rank1_reported; });
  };
  std::vector<Status> status;
  RunOnToy(*s, model, status, options);
  ASSERT_TRUE(status[0].ok() && status[1].ok());
  std::lock_guard<std::mutex> lock(mu);
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
