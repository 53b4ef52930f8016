#include "common/step_metrics.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

TEST(StepMetrics, JsonRoundTripsOnOneLine) {
  StepMetrics m;
  m.rank = 5;
  m.step = 12;
  m.step_s = 0.125;
  m.compute_s = 0.0625;
  m.bubble_s = 0.001;
  m.bubble_theory = 0.2;
  m.groups = {{"dp", 0.05, 4096, 3, 1536}, {"tp", 0.0125, 64, 10, 0}};
  const std::string line = StepMetricsJson(m);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto back = ParseStepMetricsJson(line, "test");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->rank, 5);
  EXPECT_EQ(back->step, 12);
  EXPECT_DOUBLE_EQ(back->step_s, 0.125);
  EXPECT_DOUBLE_EQ(back->bubble_theory, 0.2);
  ASSERT_EQ(back->groups.size(), 2u);
  EXPECT_EQ(back->groups[1].group, "tp");
  EXPECT_EQ(back->groups[0].bytes, 4096u);
  EXPECT_EQ(back->groups[1].calls, 10u);
  EXPECT_EQ(back->groups[0].inter_host_bytes, 1536u);
  // A record from before the field existed still reads, as 0.
  auto old = ParseStepMetricsJson(R"({"rank":1,"step":2,"step_s":1,"compute_s":1,"groups":[{"group":"dp","comm_s":0}]})",
                                  "test");
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_EQ(old->groups[0].inter_host_bytes, 0u);
  EXPECT_DOUBLE_EQ(back->comm_s(), 0.0625);
  EXPECT_EQ(StepMetricsJson(*back), line);
}

TEST(StepMetrics, BadRecordsSayWhatIsWrong) {
  const struct {
    const char* line;
    const char* says;
  } cases[] = {
      {"[1]", "must be a JSON object"},
      {R"({"step":1,"step_s":1,"compute_s":1})", "\"rank\" is missing"},
      {R"({"rank":0,"step":1,"step_s":-1,"compute_s":1})", "\"step_s\" must be a non-negative number"},
      {R"({"rank":0,"step":1,"step_s":1,"compute_s":1,"groups":{}})", "\"groups\" must be an array"},
      {R"({"rank":0,"step":1,"step_s":1,"compute_s":1,"groups":[{"comm_s":1}]})", "needs a \"group\" name"},
      {R"({"rank":0,"step":1e300,"step_s":1,"compute_s":1})", "out of range"},
      {"{", "rank 1 metrics"},
  };
  for (const auto& c : cases) {
    auto m = ParseStepMetricsJson(c.line, "rank 1 metrics");
    ASSERT_FALSE(m.ok()) << c.line;
    EXPECT_NE(m.status().message().find(c.says), std::string::npos) << c.line << ": " << m.status().message();
  }
}

}  // namespace
}  // namespace gpulaunch
