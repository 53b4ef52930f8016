#include "runtime/step_profiler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "runtime/pipeline_executor.h"
#include "runtime/pipeline_schedule.h"
#include "runtime/thread_communicator.h"

namespace gpulaunch::rt {
namespace {

// A clock the test moves by hand.
struct ManualClock {
  double now = 100;
  StepProfiler::Clock fn() {
    return [this] { return now; };
  }
};

TEST(StepProfiler, ComputeIsTheStepMinusEveryGroupsCommunication) {
  ManualClock clock;
  std::vector<StepMetrics> out;
  StepProfiler p(3, [&](const StepMetrics& m) { out.push_back(m); }, clock.fn());
  p.AddCommunication("dp", 5, 999);  // outside a step: not counted
  p.BeginStep(7);
  clock.now += 1.0;
  p.AddCommunication("dp", 0.25, 1000);
  p.AddCommunication("tp", 0.125, 64);
  p.AddCommunication("dp", 0.25, 1000);
  p.EndStep();
  ASSERT_EQ(out.size(), 1u);
  const StepMetrics& m = out[0];
  EXPECT_EQ(m.rank, 3);
  EXPECT_EQ(m.step, 7);
  EXPECT_DOUBLE_EQ(m.step_s, 1.0);
  EXPECT_DOUBLE_EQ(m.compute_s, 0.375);
  ASSERT_EQ(m.groups.size(), 2u);
  EXPECT_EQ(m.groups[0].group, "dp");
  EXPECT_DOUBLE_EQ(m.groups[0].comm_s, 0.5);
  EXPECT_EQ(m.groups[0].bytes, 2000u);
  EXPECT_EQ(m.groups[0].calls, 2u);
  EXPECT_EQ(m.groups[1].group, "tp");
  p.EndStep();  // no step open: nothing more
  EXPECT_EQ(out.size(), 1u);
}

TEST(StepProfiler, DisabledProfilerLeavesCommunicatorsUnwrapped) {
  StepProfiler off;
  auto world = ThreadCommunicator::CreateWorld(1);
  Communicator* raw = world[0].get();
  auto same = ProfileCommunicator(std::move(world[0]), "dp", off);
  EXPECT_EQ(same.get(), raw);
  off.BeginStep(0);  // no sink: a no-op
  off.EndStep();
}

TEST(StepProfiler, ProfiledCommunicatorCountsTimeAndBytesOfEveryCall) {
  std::mutex mu;
  std::map<int, StepMetrics> by_rank;
  RunOnThreads(2, [&](Communicator& comm) {
    StepProfiler p(comm.rank(), [&](const StepMetrics& m) {
      std::lock_guard<std::mutex> lock(mu);
      by_rank[m.rank] = m;
    });
    // Wrap a split of the thread world (Split hands back the inner split).
    auto split = comm.Split(0, comm.rank());
    ASSERT_TRUE(split.ok());
    auto profiled = ProfileCommunicator(std::move(split).value(), "dp", p);
    ProfiledStep step(0, p);
    std::vector<char> buf(1000);
    if (comm.rank() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(60));  // rank 1 waits for this in Recv
      ASSERT_TRUE(profiled->Send(1, 1, buf.data(), buf.size()).ok());
    } else {
      ASSERT_TRUE(profiled->Recv(0, 1, buf.data(), buf.size()).ok());
    }
    std::vector<char> all(2 * 8);
    ASSERT_TRUE(profiled->Allgather(buf.data(), 8, all.data()).ok());
  });
  ASSERT_EQ(by_rank.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(by_rank[r].groups.size(), 1u);
    EXPECT_EQ(by_rank[r].groups[0].calls, 2u);
    EXPECT_EQ(by_rank[r].groups[0].bytes, 1000u + 16u);
  }
  EXPECT_GE(by_rank[1].groups[0].comm_s, 0.05);  // the wait counts as communication
  EXPECT_GE(by_rank[0].compute_s, 0.05);         // the sleep does not
  EXPECT_LT(by_rank[1].compute_s, 0.05);
}

class SlowStages : public PipelineStages {
 public:
  size_t ActivationFloats(int) const override { return 4; }
  StatusOr<std::vector<float>> Forward(int, int stage, const std::vector<float>&) override {
    if (stage == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return std::vector<float>(4, 1.0f);
  }
};

TEST(StepProfiler, PipelineExecutorMeasuresTheBubbleAgainstTheory) {
  auto schedule = MakeSchedule("gpipe", 2, 3, 1, false);
  ASSERT_TRUE(schedule.ok()) << schedule.status().message();
  std::mutex mu;
  std::map<int, StepMetrics> by_rank;
  RunOnThreads(2, [&](Communicator& comm) {
    StepProfiler p(comm.rank(), [&](const StepMetrics& m) {
      std::lock_guard<std::mutex> lock(mu);
      by_rank[m.rank] = m;
    });
    SlowStages stages;
    PipelineRunOptions options;
    options.profiler = &p;
    ProfiledStep step(0, p);
    ASSERT_TRUE(RunPipeline(*schedule, comm, stages, options).ok());
  });
  // Stage 1 waits for stage 0's first micro-batch and between the others.
  EXPECT_DOUBLE_EQ(by_rank[1].bubble_theory, 1.0 / 4.0);
  EXPECT_GE(by_rank[1].bubble_s, 0.055);
  EXPECT_LT(by_rank[0].bubble_s, 0.02);
}

}  // namespace
}  // namespace gpulaunch::rt
