#include "launcher/job/run_report.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

namespace gpulaunch {
namespace {

StepMetrics Step(int rank, int step, double step_s, std::vector<GroupTraffic> groups, double bubble = 0,
                 double theory = 0) {
  StepMetrics m;
  m.rank = rank;
  m.step = step;
  m.step_s = step_s;
  m.groups = std::move(groups);
  m.compute_s = step_s - m.comm_s();
  m.bubble_s = bubble;
  m.bubble_theory = theory;
  return m;
}

// 4 ranks on 2 hosts, 10 steps of 100 ms: rank `slow` computes 90 ms, the
// others 30 ms and wait 60 ms in dp.
RunProfile Straggler(int slow) {
  RunProfile p;
  p.job_id = "gl-test";
  p.host_of_rank = {"a", "a", "b", "b"};
  for (int r = 0; r < 4; ++r) {
    for (int s = 0; s < 10; ++s) {
      const double comm = r == slow ? 0.01 : 0.07;
      p.steps[r].push_back(Step(r, s, 0.1 + (s == 9 ? 0.05 : 0), {{"dp", comm, 1 << 20, 2}}));
    }
  }
  return p;
}

TEST(RunReport, StepDistributionSharesAndTheStraggler) {
  const RunReport r = AnalyzeRun(Straggler(2));
  EXPECT_EQ(r.ranks, 4);
  EXPECT_EQ(r.steps, 10);
  EXPECT_DOUBLE_EQ(r.step_median_s, 0.1);
  EXPECT_DOUBLE_EQ(r.step_max_s, 0.15);
  EXPECT_EQ(r.step_max_at, 9);
  ASSERT_EQ(r.groups.size(), 1u);
  // (3 * 0.07 + 0.01) * 10 / (4 * 1.05)
  EXPECT_NEAR(r.comm_share, 2.2 / 4.2, 1e-12);
  EXPECT_EQ(r.groups[0].bytes, 40u << 20);
  EXPECT_NEAR(r.groups[0].gbps, (40.0 * (1 << 20)) * 8 / 2.2 / 1e9, 1e-9);
  EXPECT_EQ(r.slowest_rank, 2);
  EXPECT_EQ(r.slowest_host, "b");
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("rank 2 on b computes"), std::string::npos) << r.warnings[0];
  const std::string text = RenderRunReport(r);
  EXPECT_NE(text.find("run report (4 ranks, 10 steps)"), std::string::npos) << text;
  EXPECT_NE(text.find("slowest rank: 2 on b"), std::string::npos) << text;
  EXPECT_NE(text.find("warning: communication takes 52%"), std::string::npos) << text;
}

TEST(RunReport, LowCommunicationShareGivesNoWarning) {
  RunProfile p;
  p.host_of_rank = {"a", "a"};
  for (int r = 0; r < 2; ++r) p.steps[r].push_back(Step(r, 0, 0.1, {{"dp", 0.02, 100, 1}}));
  const RunReport r = AnalyzeRun(p);
  EXPECT_NEAR(r.comm_share, 0.2, 1e-12);
  EXPECT_TRUE(r.warnings.empty());
}

TEST(RunReport, BytesToOtherHostsAreShownPerStep) {
  RunProfile p;
  p.host_of_rank = {"a", "b"};
  for (int r = 0; r < 2; ++r) {
    for (int s = 0; s < 4; ++s) p.steps[r].push_back(Step(r, s, 0.1, {{"dp", 0.02, 4096, 2, 3u << 20}}));
  }
  const RunReport r = AnalyzeRun(p);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_DOUBLE_EQ(r.groups[0].inter_host_bytes_per_step, 6.0 * (1 << 20));  // both ranks' 3 MiB
  const std::string text = RenderRunReport(r);
  EXPECT_NE(text.find("6.0 MiB a step to other hosts"), std::string::npos) << text;
  EXPECT_NE(RunReportJson(r).find("\"inter_host_bytes_per_step\""), std::string::npos);
  // Without host information nothing is claimed.
  EXPECT_EQ(RenderRunReport(AnalyzeRun(Straggler(2))).find("other hosts"), std::string::npos);
}

TEST(RunReport, TensorParallelGroupAcrossHostsIsTheLikelyCause) {
  RunProfile p;
  p.layout = "tp=2,dp=2";
  p.host_of_rank = {"a", "b", "a", "b"};  // every tp pair (0,1) and (2,3) crosses hosts
  for (int r = 0; r < 4; ++r) p.steps[r].push_back(Step(r, 0, 0.1, {{"tp", 0.05, 100, 1}}));
  const RunReport r = AnalyzeRun(p);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("tensor-parallel groups span hosts (ranks 0-1 on a, b, and 1 more)"),
            std::string::npos)
      << r.warnings[0];
  p.host_of_rank = {"a", "a", "b", "b"};  // each tp pair inside one host: no such cause
  const RunReport inside = AnalyzeRun(p);
  ASSERT_EQ(inside.warnings.size(), 1u);
  EXPECT_NE(inside.warnings[0].find("tp communication takes 50% of the step at"), std::string::npos)
      << inside.warnings[0];
}

TEST(RunReport, BubbleWellAboveTheoryIsNamed) {
  RunProfile p;
  p.host_of_rank = {"a", "a"};
  for (int r = 0; r < 2; ++r) p.steps[r].push_back(Step(r, 0, 0.1, {{"pp", 0.05, 100, 4}}, 0.05, 0.2));
  const RunReport r = AnalyzeRun(p);
  EXPECT_DOUBLE_EQ(r.bubble_share, 0.5);
  EXPECT_DOUBLE_EQ(r.bubble_theory, 0.2);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("bubble is 50% of the step against 20% in theory"), std::string::npos);
  EXPECT_NE(RenderRunReport(r).find("pipeline bubble: 50% of the step (theory 20%)"), std::string::npos);
}

TEST(RunReport, NothingMeasuredSaysSo) {
  const RunReport r = AnalyzeRun(RunProfile());
  EXPECT_EQ(r.ranks, 0);
  EXPECT_NE(RenderRunReport(r).find("no step was measured"), std::string::npos);
}

TEST(RunReport, PrometheusTextIsWellFormedAndEscapesLabels) {
  RunProfile p = Straggler(1);
  p.host_of_rank[0] = "we\"ird\\host";
  const RunReport r = AnalyzeRun(p);
  const std::string text = PrometheusText(p, r);
  std::istringstream in(text);
  std::string line;
  const std::regex sample(R"re([a-z_]+\{([a-z_]+="([^"\\]|\\.)*",?)+\} [0-9.e+-]+)re");
  int helps = 0, types = 0, samples = 0;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      ++helps;
    } else if (line.rfind("# TYPE ", 0) == 0) {
      ++types;
    } else {
      EXPECT_TRUE(std::regex_match(line, sample)) << line;
      ++samples;
    }
  }
  EXPECT_EQ(helps, types);
  EXPECT_EQ(helps, 9);
  EXPECT_NE(text.find("host=\"we\\\"ird\\\\host\""), std::string::npos) << text;
  EXPECT_NE(text.find("gpulaunch_communication_bytes_total{job=\"gl-test\",rank=\"3\",host=\"b\",group=\"dp\"} 10485760\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gpulaunch_profiled_steps_total{job=\"gl-test\",rank=\"0\""), std::string::npos);
  EXPECT_NE(text.find("gpulaunch_step_time_seconds{job=\"gl-test\",quantile=\"0.5\"} 0.100000000\n"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace gpulaunch
