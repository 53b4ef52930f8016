#include "runtime/step_profiler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

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

// The two tests below run two ranks on threads, so what each rank measures
// must not depend on how the threads are scheduled: each rank's profiler
// reads a logical clock (seconds that only the test moves), and a rank moves
// its neighbour's clock only while that neighbour is known to be blocked in
// Recv. So a wait is exactly the time moved during it, on any load.

// A clock that another thread may move.
struct SharedClock {
  std::atomic<double> now{100};
  StepProfiler::Clock fn() {
    return [this] { return now.load(); };
  }
  void Advance(double s) { now.store(now.load() + s); }  // one writer at a time
};

// Counts the receives a rank has entered, so that another thread can wait
// until that rank is blocked in its k-th Recv.
class RecvGate {
 public:
  void Entered() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++entered_;
    }
    cv_.notify_all();
  }
  // Blocks until at least `n` receives have been entered.
  void AwaitEntered(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return entered_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int entered_ = 0;
};

// Passes every call to `inner` (not owned), telling `gate` before each Recv.
class GatedCommunicator : public Communicator {
 public:
  GatedCommunicator(Communicator& inner, RecvGate& gate) : inner_(inner), gate_(gate) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string Name() const override { return "gated(" + inner_.Name() + ")"; }
  Status Send(int dst, int tag, const void* data, size_t bytes) override { return inner_.Send(dst, tag, data, bytes); }
  Status Recv(int src, int tag, void* data, size_t bytes) override {
    gate_.Entered();
    return inner_.Recv(src, tag, data, bytes);
  }
  Status SendRecv(int dst, const void* send, size_t send_bytes, int src, void* recv, size_t recv_bytes,
                  int tag) override {
    return inner_.SendRecv(dst, send, send_bytes, src, recv, recv_bytes, tag);
  }
  Status PostSend(int dst, int tag, const void* data, size_t bytes) override {
    return inner_.PostSend(dst, tag, data, bytes);
  }
  Status FlushSends() override { return inner_.FlushSends(); }
  Status Barrier() override { return inner_.Barrier(); }
  Status Allgather(const void* in, size_t bytes, void* out) override { return inner_.Allgather(in, bytes, out); }
  Status Broadcast(void* data, size_t bytes, int root) override { return inner_.Broadcast(data, bytes, root); }
  StatusOr<std::unique_ptr<Communicator>> SplitImpl(int color, int key) override { return inner_.Split(color, key); }

 private:
  Communicator& inner_;
  RecvGate& gate_;
};

TEST(StepProfiler, ProfiledCommunicatorCountsTimeAndBytesOfEveryCall) {
  std::mutex mu;
  std::map<int, StepMetrics> by_rank;
  SharedClock clocks[2];
  RecvGate gates[2];
  RunOnThreads(2, [&](Communicator& comm) {
    const int r = comm.rank();
    StepProfiler p(
        r,
        [&](const StepMetrics& m) {
          std::lock_guard<std::mutex> lock(mu);
          by_rank[m.rank] = m;
        },
        clocks[r].fn());
    // Wrap a split of the thread world (Split hands back the inner split).
    auto split = comm.Split(0, r);
    ASSERT_TRUE(split.ok());
    std::unique_ptr<Communicator> inner = std::move(split).value();
    auto profiled = ProfileCommunicator(std::make_unique<GatedCommunicator>(*inner, gates[r]), "dp", p);
    ProfiledStep step(0, p);
    std::vector<char> buf(1000);
    if (r == 0) {
      clocks[0].Advance(0.25);  // rank 0 computes: not communication
      gates[1].AwaitEntered(1);
      clocks[1].Advance(0.5);   // rank 1 waits this long inside its Recv
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
  EXPECT_DOUBLE_EQ(by_rank[1].groups[0].comm_s, 0.5);  // the wait counts as communication
  EXPECT_DOUBLE_EQ(by_rank[1].compute_s, 0.0);
  EXPECT_DOUBLE_EQ(by_rank[0].compute_s, 0.25);        // the work does not
  EXPECT_DOUBLE_EQ(by_rank[0].groups[0].comm_s, 0.0);
}

TEST(StepProfiler, SendsToAnotherHostAreCountedApart) {
  std::mutex mu;
  std::map<int, StepMetrics> by_rank;
  RunOnThreads(3, [&](Communicator& comm) {
    const int r = comm.rank();
    StepProfiler p(r, [&](const StepMetrics& m) {
      std::lock_guard<std::mutex> lock(mu);
      by_rank[m.rank] = m;
    });
    auto split = comm.Split(0, r);
    ASSERT_TRUE(split.ok());
    // Ranks 0 and 1 share a host, rank 2 is on another.
    auto profiled = ProfileCommunicator(std::move(split).value(), "dp", p, {7, 7, 3});
    ProfiledStep step(0, p);
    std::vector<char> buf(100);
    if (r == 0) {
      ASSERT_TRUE(profiled->Send(1, 1, buf.data(), 10).ok());   // same host
      ASSERT_TRUE(profiled->PostSend(2, 1, buf.data(), 20).ok());  // other host
      ASSERT_TRUE(profiled->FlushSends().ok());
    } else {
      ASSERT_TRUE(profiled->Recv(0, 1, buf.data(), r == 1 ? 10 : 20).ok());
    }
    // A pairwise exchange: 1 <-> 2 cross hosts, 40 bytes each way.
    if (r > 0) {
      ASSERT_TRUE(profiled->SendRecv(3 - r, buf.data(), 40, 3 - r, buf.data() + 50, 40, 2).ok());
    }
  });
  EXPECT_EQ(by_rank[0].groups[0].inter_host_bytes, 20u);
  EXPECT_EQ(by_rank[1].groups[0].inter_host_bytes, 40u);
  EXPECT_EQ(by_rank[2].groups[0].inter_host_bytes, 40u);
}

// Stage 0 works 1 s per micro-batch on its own clock, and each second passes
// on stage 1's clock too while stage 1 is blocked receiving that micro-batch.
class GatedStages : public PipelineStages {
 public:
  GatedStages(SharedClock& own, SharedClock& next, RecvGate* next_gate)
      : own_(own), next_(next), next_gate_(next_gate) {}
  size_t ActivationFloats(int) const override { return 4; }
  StatusOr<std::vector<float>> Forward(int microbatch, int stage, const std::vector<float>&) override {
    if (stage == 0) {
      next_gate_->AwaitEntered(microbatch + 1);
      own_.Advance(1.0);
      next_.Advance(1.0);
    }
    return std::vector<float>(4, 1.0f);
  }

 private:
  SharedClock& own_;
  SharedClock& next_;
  RecvGate* next_gate_;
};

TEST(StepProfiler, PipelineExecutorMeasuresTheBubbleAgainstTheory) {
  auto schedule = MakeSchedule("gpipe", 2, 3, 1, false);
  ASSERT_TRUE(schedule.ok()) << schedule.status().message();
  std::mutex mu;
  std::map<int, StepMetrics> by_rank;
  SharedClock clocks[2];
  RecvGate gates[2];
  RunOnThreads(2, [&](Communicator& comm) {
      const int r = comm.rank();
      GatedCommunicator gated(comm, gates[r]);
      StepProfiler p(
          r,
          [&](const StepMetrics& m) {
            std::lock_guard<std::mutex> lock(mu);
            by_rank[m.rank] = m;
          },
          clocks[r].fn());
      GatedStages stages(clocks[0], clocks[1], &gates[1]);
      PipelineRunOptions options;
      options.profiler = &p;
      ProfiledStep step(0, p);
      ASSERT_TRUE(RunPipeline(*schedule, gated, stages, options).ok());
  });
  ASSERT_EQ(by_rank.size(), 2u);
  EXPECT_DOUBLE_EQ(by_rank[1].bubble_theory, 1.0 / 4.0);
  // Stage 1 spends every second of stage 0's work waiting for it; stage 0
  // never waits (its sends are buffered), and its work is not bubble.
  EXPECT_DOUBLE_EQ(by_rank[1].bubble_s, 3.0);
  EXPECT_DOUBLE_EQ(by_rank[1].step_s, 3.0);
  EXPECT_DOUBLE_EQ(by_rank[0].bubble_s, 0.0);
  EXPECT_DOUBLE_EQ(by_rank[0].step_s, 3.0);
}

}  // namespace
}  // namespace gpulaunch::rt
