#include "launcher/base/engine_activity.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace gpulaunch {
namespace {

// A child that runs `body` until killed.
template <typename Body>
pid_t Child(Body body) {
  const pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  return pid;
}

void Reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// Samples every 50 ms for about a second; returns how many said active.
int ActiveSamples(EngineActivity& a) {
  int active = 0;
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    active += a.Sample();
  }
  return active;
}

TEST(EngineActivity, AnAsleepProcessIsQuiet) {
  const pid_t pid = Child([] { pause(); });
  EngineActivity a(pid);
  EXPECT_TRUE(a.Sample()) << "the first sample is the baseline";
  // Asleep: no CPU tick and no byte moves. (Stdout and stderr of the test
  // are a file or a pipe ctest drains, never blocked for long.)
  EXPECT_LE(ActiveSamples(a), 1);
  Reap(pid);
}

TEST(EngineActivity, AProcessThatWritesIsActive) {
  const pid_t pid = Child([] {
    const int fd = open("/dev/null", O_WRONLY);
    for (;;) {
      (void)!write(fd, "x", 1);
      usleep(10000);
    }
  });
  EngineActivity a(pid);
  a.Sample();
  EXPECT_GE(ActiveSamples(a), 18) << "a write every 10 ms, a sample every 50 ms";
  Reap(pid);
}

TEST(EngineActivity, AProcessThatComputesIsActive) {
  const pid_t pid = Child([] {
    volatile unsigned long spins = 0;
    for (;;) spins = spins + 1;
  });
  EngineActivity a(pid);
  a.Sample();
  // CPU time moves in clock ticks (10 ms), and on a loaded machine the
  // spinner may not run in every 50 ms window.
  EXPECT_GE(ActiveSamples(a), 5);
  Reap(pid);
}

TEST(EngineActivity, AGoneProcessNeverCountsAsQuiet) {
  EngineActivity a(999999999);
  EXPECT_TRUE(a.Sample());
  EXPECT_TRUE(a.Sample()) << "unreadable counters must not let gpulaunch kill what it cannot see";
}

TEST(OutputBlocked, AFullPipeIsBlockedAnEmptyOneAndAFileAreNot) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_NONBLOCK), 0);
  EXPECT_FALSE(OutputBlocked(p[1]));
  char buf[4096] = {};
  while (write(p[1], buf, sizeof buf) > 0) {
  }
  EXPECT_TRUE(OutputBlocked(p[1]));
  const int null_fd = open("/dev/null", O_WRONLY);
  EXPECT_FALSE(OutputBlocked(null_fd));
  close(null_fd);
  close(p[0]);
  close(p[1]);
}

}  // namespace
}  // namespace gpulaunch
