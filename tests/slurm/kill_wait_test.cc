// KillWait from scontrol, and the kill grace that fits inside it.
#include "slurm/kill_wait.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

TEST(KillWait, IsReadFromScontrolShowConfig) {
  const std::string config =
      "Configuration data as of 2026-12-07T10:00:00\n"
      "KeepAliveTime           = SYSTEM_DEFAULT\n"
      "KillOnBadExit           = 0\n"
      "KillWait                = 5 sec\n"
      "LaunchParameters        = (null)\n"
      "ProctrackType           = proctrack/linuxproc\n";
  EXPECT_EQ(ParseKillWaitSeconds(config), 5);
  EXPECT_EQ(ParseKillWaitSeconds("KillWait = 30 sec\n"), 30);
  EXPECT_EQ(ParseKillWaitSeconds("KillOnBadExit = 0\n"), std::nullopt);
  EXPECT_EQ(ParseKillWaitSeconds("KillWait = soon\n"), std::nullopt);
  EXPECT_EQ(ParseKillWaitSeconds(""), std::nullopt);
  EXPECT_EQ(ParseProctrackType(config), "proctrack/linuxproc");
  EXPECT_EQ(ParseProctrackType("KillWait = 5 sec\n"), "");
}

TEST(KillWait, TheGraceLeavesRoomToStopAndReport) {
  EXPECT_EQ(KillGraceWithinKillWait(10000, 5), 3000) << "srun's default 10 s against the CI cluster's 5 s";
  EXPECT_EQ(KillGraceWithinKillWait(10000, 30), 10000) << "already fits";
  EXPECT_EQ(KillGraceWithinKillWait(10000, 2), 1000) << "never below 1 s";
  EXPECT_EQ(KillGraceWithinKillWait(500, 5), 500);
}

}  // namespace
}  // namespace gpulaunch
