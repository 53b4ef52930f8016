#include "launcher/core/options.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

StatusOr<CommandLine> Parse(std::vector<std::string> args) { return ParseCommandLine(args); }

TEST(Options, MpirunStyleFlags) {
  auto cl = Parse({"-np", "16", "-H", "a:2,b:2", "-x", "FOO=bar", "-x", "HOME", "--oversubscribe", "--tag",
                   "./job", "--steps", "3", "-n", "9"});
  ASSERT_TRUE(cl.ok()) << cl.status().ToString();
  const LaunchOptions& o = cl->options;
  EXPECT_EQ(o.ranks, 16);
  EXPECT_EQ(o.host_args, (std::vector<std::string>{"a:2,b:2"}));
  EXPECT_EQ(o.env, (std::vector<EnvAssignment>{{"FOO", "bar"}, {"HOME", std::nullopt}}));
  EXPECT_TRUE(o.oversubscribe);
  EXPECT_TRUE(o.tag);
  // Everything from the program on belongs to the job, even option-like words.
  EXPECT_EQ(o.program, (std::vector<std::string>{"./job", "--steps", "3", "-n", "9"}));
}

TEST(Options, DoubleDashSeparatesTheJob) {
  auto cl = Parse({"-n4", "--hostfile=hosts", "--", "-weird-program", "x"});
  ASSERT_TRUE(cl.ok()) << cl.status().ToString();
  EXPECT_EQ(cl->options.ranks, 4);
  EXPECT_EQ(cl->options.hostfile, "hosts");
  EXPECT_EQ(cl->options.program, (std::vector<std::string>{"-weird-program", "x"}));
}

TEST(Options, DisplayMapAsMpirunSpellsIt) {
  EXPECT_FALSE(Parse({"prog"})->options.display_map);
  EXPECT_TRUE(Parse({"--display-map", "prog"})->options.display_map);
  EXPECT_TRUE(Parse({"-display-map", "prog"})->options.display_map);
  EXPECT_FALSE(Parse({"--display-map", "prog"})->options.dry_run);
}

TEST(Options, EqualsValueInXKeepsEverythingAfterFirstEquals) {
  auto cl = Parse({"-x", "A=b=c", "--dry-run", "--topology-file", "t.xml", "prog"});
  ASSERT_TRUE(cl.ok());
  EXPECT_EQ(cl->options.env[0].value, "b=c");
  EXPECT_TRUE(cl->options.dry_run);
  EXPECT_EQ(cl->options.topology_files, (std::vector<std::string>{"t.xml"}));
  EXPECT_FALSE(cl->options.kill_grace_s);
  EXPECT_EQ(Parse({"--kill-grace", "3", "prog"})->options.kill_grace_s, 3);
}

TEST(Options, HelpAndVersion) {
  EXPECT_EQ(Parse({"--help"})->action, CommandAction::kHelp);
  EXPECT_EQ(Parse({"-h"})->action, CommandAction::kHelp);
  EXPECT_EQ(Parse({"--version"})->action, CommandAction::kVersion);
  EXPECT_NE(HelpText().find("Examples:"), std::string::npos);
  EXPECT_NE(HelpText().find("--oversubscribe"), std::string::npos);
}

TEST(Options, BadInputIsAUsageErrorThatSaysWhat) {
  const std::pair<std::vector<std::string>, const char*> cases[] = {
      {{"-n", "0", "job"}, "at least 1"},
      {{"-n", "-3", "job"}, "at least 1"},
      {{"-n", "many", "job"}, "invalid"},
      {{"--frobnicate", "job"}, "unknown option '--frobnicate'"},
      {{"-n", "2"}, "no program to run"},
      {{"-x", "1BAD=2", "job"}, "is not a variable name"},
      {{"-x", "A B", "job"}, "is not a variable name"},
      {{"--hostfile", "a", "--machinefile", "b", "job"}, "same option"},
      {{"-n"}, "-n"},
      {{"--kill-grace", "-1", "job"}, "from 0 to 3600"},
      {{"--layout", "", "job"}, "--layout is empty"},
      {{"--=x", "job"}, "unknown option '--=x' (no option name)"},
      {{"--layout", "tp=0", "job"}, "must be a positive whole number"},
      {{"-n", "4", "--layout", "tp=3", "job"}, "tp=3"},
  };
  for (const auto& [args, want] : cases) {
    auto cl = Parse(args);
    ASSERT_FALSE(cl.ok()) << args[0];
    EXPECT_EQ(cl.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(cl.status().message().find(want), std::string::npos) << cl.status().message();
  }
}

// Found by fuzz_command_line: Boost fills %placeholders% into its error
// messages and never finished when the user's text held one.
TEST(Options, PercentPlaceholdersInBadInputDoNotHangTheParser) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--np", "%value%", "./x"},
                                               {"--layout", "tp=%canonical_option%", "-n", "x", "./x"},
                                               {"--%option%", "./x"}}) {
    auto cl = ParseCommandLine(args);
    ASSERT_FALSE(cl.ok()) << args[0];
    EXPECT_NE(cl.status().message().find("gpulaunch --help"), std::string::npos) << cl.status().message();
  }
  auto plan = ParsePlanCommandLine({"-n", "%value%"});
  ASSERT_FALSE(plan.ok());
}

}  // namespace
}  // namespace gpulaunch
