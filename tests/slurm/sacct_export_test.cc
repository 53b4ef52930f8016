#include "slurm/sacct_export.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

TEST(SacctExport, ReadsJobsMergesRequeuedRunsAndSkipsSteps) {
  auto jobs = ParseSacctExport(
      "State|JobIDRaw|Submit|Start|End|AllocTRES|Timelimit\n"
      "COMPLETED|10|2026-12-05T11:00:00|2026-12-05T11:00:01|2026-12-05T11:00:13|cpu=1,gres/gpu=4,node=1|00:01:00\n"
      "COMPLETED|10.batch|2026-12-05T11:00:00|2026-12-05T11:00:01|2026-12-05T11:00:13|cpu=1|\n"
      "PREEMPTED|11|2026-12-05T11:00:02|2026-12-05T11:00:02|2026-12-05T11:00:20|gres/gpu=8,node=2|1-00:00:00\n"
      "COMPLETED|11|2026-12-05T11:00:02|2026-12-05T11:02:30|2026-12-05T11:03:00|gres/gpu=8,node=2|1-00:00:00\n"
      "CANCELLED|12|2026-12-05T11:00:03|None|2026-12-05T11:00:04||UNLIMITED\n",
      "x.sacct");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 3u);
  const SacctJob& a = (*jobs)[0];
  EXPECT_EQ(a.id, "10");
  EXPECT_EQ(a.gpus, 4);
  EXPECT_DOUBLE_EQ(a.start - a.submit, 1);
  EXPECT_DOUBLE_EQ(a.last_run_s, 12);
  EXPECT_DOUBLE_EQ(a.limit_s, 60);
  const SacctJob& b = (*jobs)[1];  // requeued: first start, last end, last run's length
  EXPECT_EQ(b.runs, 2);
  EXPECT_DOUBLE_EQ(b.start - b.submit, 0);
  EXPECT_DOUBLE_EQ(b.end - b.submit, 178);
  EXPECT_DOUBLE_EQ(b.last_run_s, 30);
  EXPECT_DOUBLE_EQ(b.limit_s, 86400);
  EXPECT_EQ(b.state, "COMPLETED");
  EXPECT_DOUBLE_EQ((*jobs)[2].start, -1);  // never started
  EXPECT_DOUBLE_EQ((*jobs)[2].limit_s, 0);
}

TEST(SacctExport, BadExportsSayWhereAndHowToMakeOne) {
  EXPECT_EQ(ParseSacctExport("10 COMPLETED\n", "a.txt").status().message(),
            "a.txt:1: not a sacct -P export with a header line; make one with: sacct -P -X -D -o "
            "JobIDRaw,Submit,Start,End,State,AllocTRES,Timelimit");
  EXPECT_NE(ParseSacctExport("JobIDRaw|Submit|Start|End\n", "b.txt").status().message().find(
                "b.txt:1: the export has no AllocTRES column"),
            std::string::npos);
  EXPECT_EQ(ParseSacctExport("JobIDRaw|Submit|Start|End|AllocTRES\n1|2026-12-05T11:00:00|x|y\n", "c.txt")
                .status()
                .message(),
            "c.txt:2: 4 fields, the header has 5");
  EXPECT_EQ(ParseSacctExport("JobIDRaw|Submit|Start|End|AllocTRES\n1|yesterday|None|None|\n", "d.txt")
                .status()
                .message(),
            "d.txt:2: time 'yesterday' is not YYYY-MM-DDTHH:MM:SS");
}

}  // namespace
}  // namespace gpulaunch
