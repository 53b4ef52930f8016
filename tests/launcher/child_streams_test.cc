#include "launcher/shim/child_streams.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

namespace gpulaunch {
namespace {

TEST(TailKeeper, KeepsTheLastLinesCutAndTheUnfinishedOne) {
  TailKeeper tail;
  std::string text;
  for (int i = 0; i < 25; ++i) text += "line " + std::to_string(i) + "\n";
  text += std::string(TailKeeper::kLineBytes + 40, 'x') + "\nunfinished";
  // Fed in pieces that split lines, as pipe reads do.
  for (size_t at = 0; at < text.size(); at += 7) tail.Feed(text.data() + at, std::min<size_t>(7, text.size() - at));
  const auto lines = tail.Finish();
  ASSERT_EQ(lines.size(), TailKeeper::kLines);
  EXPECT_EQ(lines.front(), "line 7");
  EXPECT_EQ(lines[lines.size() - 2], std::string(TailKeeper::kLineBytes, 'x'));
  EXPECT_EQ(lines.back(), "unfinished");
}

TEST(MetricsForwarder, DrainReadsWhatWaitsAndSaysWhenThePipeEnded) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_NONBLOCK), 0);
  MetricsForwarder forwarder(3, nullptr);  // nothing to send to: records are dropped
  ASSERT_EQ(write(p[1], "{\"step\":1}\n{\"st", 15), 15);
  EXPECT_TRUE(forwarder.Drain(p[0]));  // more may come
  close(p[1]);
  EXPECT_FALSE(forwarder.Drain(p[0]));  // end of file
  close(p[0]);
}

}  // namespace
}  // namespace gpulaunch
