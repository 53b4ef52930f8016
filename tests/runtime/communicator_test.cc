// Conformance of the in-process implementations (MPI: runtime_mpi_test).
#include <gtest/gtest.h>

#include "runtime/fault_injecting_communicator.h"
#include "runtime/thread_communicator.h"
#include "tests/runtime/communicator_conformance.h"

namespace gpulaunch::rt {
namespace {

class ThreadConformance : public ::testing::TestWithParam<int> {};

TEST_P(ThreadConformance, Passes) {
  RunOnThreads(GetParam(), [](Communicator& c) { testing::RunCommunicatorConformance(c); });
}

TEST_P(ThreadConformance, PassesThroughAFaultInjectorWithNoFaults) {
  auto comms = ThreadCommunicator::CreateWorld(GetParam());
  std::vector<std::unique_ptr<Communicator>> wrapped;
  for (auto& c : comms) wrapped.push_back(std::make_unique<FaultInjectingCommunicator>(std::move(c), FaultPlan{}));
  std::vector<std::thread> threads;
  for (auto& w : wrapped) threads.emplace_back([&w] { testing::RunCommunicatorConformance(*w); });
  for (auto& t : threads) t.join();
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, ThreadConformance, ::testing::Values(1, 2, 3, 4, 7));

TEST(FaultInjection, FailuresComeBackAsStatus) {
  auto comms = ThreadCommunicator::CreateWorld(2);
  FaultInjectingCommunicator faulty(std::move(comms[0]), FaultPlan{.fail_send = 1});
  int v = 1;
  EXPECT_TRUE(faulty.Send(1, 0, &v, sizeof v).ok());
  const Status s = faulty.Send(1, 0, &v, sizeof v);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("injected fault"), std::string::npos);
  int got = 0;
  EXPECT_TRUE(comms[1]->Recv(0, 0, &got, sizeof got).ok());  // the first one arrived
  EXPECT_EQ(got, 1);

  FaultInjectingCommunicator lost(std::make_unique<ThreadCommunicator>(nullptr, 0), FaultPlan{.lose_peer_after = 0});
  EXPECT_EQ(lost.Barrier().code(), StatusCode::kUnavailable);
}

TEST(FaultInjection, CorruptionIsDelivered) {
  auto comms = ThreadCommunicator::CreateWorld(2);
  FaultInjectingCommunicator faulty(std::move(comms[0]), FaultPlan{.corrupt_send = 0});
  const char sent[4] = {0, 1, 2, 3};
  ASSERT_TRUE(faulty.Send(1, 5, sent, sizeof sent).ok());
  char got[4];
  ASSERT_TRUE(comms[1]->Recv(0, 5, got, sizeof got).ok());
  EXPECT_NE(got[0], sent[0]);
  EXPECT_EQ(got[3], sent[3]);
}

}  // namespace
}  // namespace gpulaunch::rt
