#include "runtime/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "runtime/thread_communicator.h"

namespace fs = std::filesystem;

namespace gpulaunch::rt {
namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("gl-ckpt-" + std::to_string(getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
};

TEST(Checkpoint, EveryRankGetsBackWhatItSavedAtTheLatestStep) {
  TempDir dir;
  std::vector<std::string> loaded(3);
  std::vector<int> steps(3, -9);
  RunOnThreads(3, [&](Communicator& c) {
    Checkpointer ckpt(c, dir.path.string(), "world=3");
    auto none = ckpt.LoadLatest();
    ASSERT_TRUE(none.ok()) << none.status().message();
    EXPECT_FALSE(*none);  // nothing saved yet: start fresh
    for (int step = 0; step < 3; ++step) {
      ASSERT_TRUE(ckpt.Save(step, "rank " + std::to_string(c.rank()) + " step " + std::to_string(step)).ok());
    }
    auto last = ckpt.LoadLatest();
    ASSERT_TRUE(last.ok()) << last.status().message();
    ASSERT_TRUE(*last);
    steps[c.rank()] = (*last)->step;
    loaded[c.rank()] = (*last)->state;
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(steps[r], 2);
    EXPECT_EQ(loaded[r], "rank " + std::to_string(r) + " step 2");
  }
  // Older steps are gone once a newer one is complete.
  EXPECT_FALSE(fs::exists(dir.path / "step-1"));
  EXPECT_TRUE(fs::exists(dir.path / "step-2" / "rank-2.bin"));
}

TEST(Checkpoint, AnIncompleteStepIsNeverLoaded) {
  TempDir dir;
  RunOnThreads(2, [&](Communicator& c) {
    Checkpointer ckpt(c, dir.path.string(), "world=2");
    ASSERT_TRUE(ckpt.Save(4, "good " + std::to_string(c.rank())).ok());
  });
  // A crash while step 5 was being written: one rank's file only, latest unmoved.
  fs::create_directories(dir.path / "step-5");
  std::ofstream(dir.path / "step-5" / "rank-0.bin") << "gpurt-checkpoint/v1 world=2 5\nhalf";
  std::vector<std::string> loaded(2);
  RunOnThreads(2, [&](Communicator& c) {
    auto last = Checkpointer(c, dir.path.string(), "world=2").LoadLatest();
    ASSERT_TRUE(last.ok() && *last);
    EXPECT_EQ((*last)->step, 4);
    loaded[c.rank()] = (*last)->state;
  });
  EXPECT_EQ(loaded, (std::vector<std::string>{"good 0", "good 1"}));
}

// Save returns on a rank only once the checkpoint is committed: when rank 0
// cannot move `latest` (here a directory in its way), no rank hears Ok. A
// rank that had returned Ok earlier could die, believing in a checkpoint that
// a restart would not find.
TEST(Checkpoint, SaveIsOkOnNoRankUntilLatestIsCommitted) {
  TempDir dir;
  fs::create_directories(dir.path / "latest" / "in-the-way");
  std::vector<std::string> errors(3);
  RunOnThreads(3, [&](Communicator& c) {
    const Status s = Checkpointer(c, dir.path.string(), "world=3").Save(0, "x");
    errors[c.rank()] = s.ok() ? "ok" : s.message();
  });
  for (int r = 1; r < 3; ++r) EXPECT_NE(errors[r].find("rank 0 failed to checkpoint"), std::string::npos) << errors[r];
  EXPECT_NE(errors[0], "ok");
  // Committed, every rank's Save finds `latest` naming its step on return.
  fs::remove_all(dir.path / "latest");
  std::vector<std::string> seen(3);
  RunOnThreads(3, [&](Communicator& c) {
    ASSERT_TRUE(Checkpointer(c, dir.path.string(), "world=3").Save(1, "y").ok());
    std::ifstream latest(dir.path / "latest");
    std::getline(latest, seen[c.rank()]);
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"1", "1", "1"}));
}

TEST(Checkpoint, AnotherRunsCheckpointIsRefusedOnEveryRank) {
  TempDir dir;
  RunOnThreads(2, [&](Communicator& c) { ASSERT_TRUE(Checkpointer(c, dir.path.string(), "layout=dp2").Save(0, "x").ok()); });
  std::vector<std::string> errors(2);
  RunOnThreads(2, [&](Communicator& c) {
    auto last = Checkpointer(c, dir.path.string(), "layout=pp2").LoadLatest();
    ASSERT_FALSE(last.ok());
    errors[c.rank()] = last.status().message();
  });
  for (const std::string& e : errors) {
    EXPECT_NE(e.find("gpurt-checkpoint/v1 layout=dp2 0"), std::string::npos) << e;
    EXPECT_NE(e.find("gpurt-checkpoint/v1 layout=pp2 0"), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace gpulaunch::rt
