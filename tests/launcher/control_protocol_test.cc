#include "launcher/base/control_protocol.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

using Kind = ControlMessage::Kind;

TEST(ControlProtocol, EveryMessageReadsBackAsWritten) {
  ControlMessage checkin;
  checkin.kind = Kind::kCheckin;
  checkin.rank = 3;
  checkin.pid = 4242;
  checkin.world = 16;
  checkin.host = "node2";
  checkin.plan_hash = "abc123";
  checkin.slurm_step = "60.1";
  std::string line = FormatControlLine(checkin);
  ASSERT_EQ(line, "checkin 3 4242 16 node2 abc123 60.1\n");
  auto back = ParseControlLine(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->kind, Kind::kCheckin);
  EXPECT_EQ(back->pid, 4242);
  EXPECT_EQ(back->world, 16);
  EXPECT_EQ(back->host, "node2");
  EXPECT_EQ(back->slurm_step, "60.1");
  EXPECT_FALSE(back->in_cgroup);
  checkin.in_cgroup = true;  // the rank runs in a cgroup of its own
  ASSERT_EQ(FormatControlLine(checkin), "checkin 3 4242 16 node2 abc123 60.1 cgroup\n");
  back = ParseControlLine("checkin 3 4242 16 node2 abc123 60.1 cgroup");
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->in_cgroup);
  EXPECT_EQ(back->slurm_step, "60.1");
  checkin.in_cgroup = false;

  // Cut where the pid goes, for the job process to fill in (rank_supervisor.h).
  const CheckinLineParts parts = CheckinLineAround(checkin);
  EXPECT_EQ(parts.before_pid + "4242" + parts.after_pid, FormatControlLine(checkin));
  EXPECT_EQ(parts.before_pid, "checkin 3 ");

  ControlMessage singleton;
  singleton.kind = Kind::kSingleton;
  singleton.rank = 7;
  ASSERT_EQ(FormatControlLine(singleton), "singleton 7\n");
  back = ParseControlLine("singleton 7");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->kind, Kind::kSingleton);
  EXPECT_EQ(back->rank, 7);

  ControlMessage exit_msg;
  exit_msg.kind = Kind::kExit;
  exit_msg.rank = 5;
  exit_msg.signaled = true;
  exit_msg.value = 9;
  line = FormatControlLine(exit_msg);
  back = ParseControlLine(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->signaled);
  EXPECT_EQ(back->value, 9);
  EXPECT_FALSE(back->told_to_stop);
  exit_msg.told_to_stop = true;
  line = FormatControlLine(exit_msg);
  EXPECT_EQ(line, "exit 5 signal 9 stopped\n");
  back = ParseControlLine(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->told_to_stop);

  // A slot request, with its host's fingerprint from one rank a host.
  ControlMessage slot;
  slot.kind = Kind::kSlot;
  slot.rank = 7;
  EXPECT_EQ(FormatControlLine(slot), "slot 7\n");
  slot.text = "9f86d081884c7d659a2feaa0c55ad015";
  line = FormatControlLine(slot);
  EXPECT_EQ(line, "slot 7 9f86d081884c7d659a2feaa0c55ad015\n");
  back = ParseControlLine(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->kind, Kind::kSlot);
  EXPECT_EQ(back->rank, 7);
  EXPECT_EQ(back->text, slot.text);

  ControlMessage stacks;
  stacks.kind = Kind::kStacks;
  stacks.rank = 1;
  stacks.payload_bytes = 77;
  back = ParseControlLine("stacks 1 77");
  ASSERT_TRUE(back);
  EXPECT_EQ(back->payload_bytes, 77u);
  EXPECT_EQ(FormatControlLine(stacks), "stacks 1 77\n");
}

TEST(ControlProtocol, FreeTextKeepsSpacesAndLosesControlCharacters) {
  ControlMessage tail;
  tail.kind = Kind::kTail;
  tail.rank = 0;
  tail.text = "error:  two  spaces\tand a tab\r";
  const std::string line = FormatControlLine(tail);
  EXPECT_EQ(line, "tail 0 error:  two  spaces?and a tab?\n");
  auto back = ParseControlLine(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->text, "error:  two  spaces?and a tab?");
  tail.text = std::string(5000, 'x');
  EXPECT_EQ(FormatControlLine(tail).size(), std::string("tail 0 ").size() + 1000 + 1);
}

TEST(ControlProtocol, MetricRecordsTravelWholeOrNotAtAll) {
  ControlMessage metric;
  metric.kind = Kind::kMetric;
  metric.rank = 2;
  metric.text = R"({"rank":2,"step":0,"step_s":1,"compute_s":1,"groups":[]})";
  const std::string line = FormatControlLine(metric);
  auto back = ParseControlLine(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->kind, Kind::kMetric);
  EXPECT_EQ(back->text, metric.text);
  // Longer than a free-text field, still whole; over the limit, dropped.
  metric.text = std::string(kMaxMetricBytes, 'x');
  EXPECT_EQ(FormatControlLine(metric).size(), std::string("metric 2 ").size() + kMaxMetricBytes + 1);
  metric.text += "x";
  EXPECT_EQ(FormatControlLine(metric), "");
  EXPECT_FALSE(ParseControlLine("metric 2 " + metric.text));
  EXPECT_FALSE(ParseControlLine("metric 2"));
}

TEST(ControlProtocol, MalformedLinesAreNotMessages) {
  for (const char* bad : {"", "checkin", "checkin x 1 1 h hash -", "checkin 1 0 4 h hash -", "checkin 1 5 0 h hash -",
                          "checkin -1 5 4 h hash -", "exit 1 maybe 3", "exit 1 code", "exit 1 code 3 later", "stacks 1 -4",
                          "stacks 1 99999999999", "hello 1", "refuse 2"}) {
    EXPECT_FALSE(ParseControlLine(bad)) << bad;
  }
  // A step that is not JOB.STEP is dropped, the check-in kept.
  auto m = ParseControlLine("checkin 1 5 4 h hash -");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->slurm_step, "");
}

}  // namespace
}  // namespace gpulaunch
