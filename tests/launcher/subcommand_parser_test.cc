// Every subcommand that parses through SubcommandParser reads alike: the same
// --help layout, the same messages for an unknown option, a missing value and
// a stray word, each a usage error (exit 2 through Fail()).
#include "launcher/core/subcommand_parser.h"

#include <gtest/gtest.h>

#include "launcher/base/exit_codes.h"
#include "launcher/core/options.h"

namespace gpulaunch {
namespace {

struct Subcommand {
  std::string name;
  std::function<Status(const std::vector<std::string>&)> parse;
  std::function<std::string()> help;
};

std::vector<Subcommand> All() {
  return {
      {"nodes", [](const auto& a) { return ParseNodesCommandLine(a).status(); }, NodesHelpText},
      {"check", [](const auto& a) { return ParseCheckCommandLine(a).status(); }, CheckHelpText},
  };
}

TEST(SubcommandParser, EverySubcommandReportsBadInputTheSameWay) {
  for (const Subcommand& c : All()) {
    const std::string see = "; see 'gpulaunch " + c.name + " --help'";
    const Status unknown = c.parse({"--frobnicate"});
    EXPECT_EQ(unknown.message(), c.name + ": unknown option '--frobnicate'" + see) << c.name;
    EXPECT_EQ(ExitCodeFor(unknown.code()), kExitUsage);
    EXPECT_EQ(c.parse({"--budget"}).message(), c.name + ": --budget needs a value" + see) << c.name;
    EXPECT_EQ(c.parse({"--allow-run-as-root=yes"}).message(), c.name + ": --allow-run-as-root takes no value" + see);
    EXPECT_EQ(c.parse({"--budget", "0"}).message(), c.name + ": --budget 0: give seconds from 1 to 86400") << c.name;
    // The stray word is named, not the option value before it.
    EXPECT_EQ(c.parse({"-H", "a", "stray"}).message(),
              c.name + ": unexpected argument 'stray': it takes options only" + see)
        << c.name;
    EXPECT_EQ(c.parse({"--format", "xml"}).message(), c.name + ": --format xml: choose table or json") << c.name;
    EXPECT_EQ(c.parse({"-H", "a", "--hostfile", "f"}).message(), c.name + ": give either --host or --hostfile, not both");
    EXPECT_TRUE(c.parse({"-H", "a,b", "--format", "json", "--budget=5", "--allow-run-as-root"}).ok()) << c.name;
    // Boost's messages are templates with %placeholders%: the user's own '%'
    // must neither hang nor garble them.
    for (const std::vector<std::string>& odd : {std::vector<std::string>{"--%value%"},
                                                 std::vector<std::string>{"--budget", "%value%"},
                                                 std::vector<std::string>{"--allow-run-as-root=%s"}}) {
      const Status s = c.parse(odd);
      EXPECT_EQ(ExitCodeFor(s.code()), kExitUsage) << c.name << " " << odd[0];
      EXPECT_EQ(s.message().rfind(c.name + ": ", 0), 0u) << s.message();
    }
  }
}

TEST(SubcommandParser, HelpHasTheUsageWhatItDoesAndTheOptionsTable) {
  for (const Subcommand& c : All()) {
    const std::string help = c.help();
    EXPECT_EQ(help.rfind("usage: gpulaunch " + c.name + " ", 0), 0u) << help;
    EXPECT_NE(help.find("\nOptions:\n"), std::string::npos) << help;
    EXPECT_NE(help.find("-h [ --help ]"), std::string::npos) << help;
    EXPECT_NE(help.find("--budget S"), std::string::npos) << help;
    EXPECT_EQ(help.back(), '\n');
  }
  EXPECT_TRUE(ParseNodesCommandLine({"--help"}).value().help);
  EXPECT_TRUE(ParseCheckCommandLine({"-h"}).value().help);
}

TEST(SubcommandParser, ValuesReachTheOptions) {
  auto n = ParseNodesCommandLine({"-H", "a", "-H", "b[1-2]", "--watch", "5", "--count", "2", "--budget", "7"});
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(n->host_args, (std::vector<std::string>{"a", "b[1-2]"}));
  EXPECT_EQ(n->watch_s, 5);
  EXPECT_EQ(n->count, 2);
  EXPECT_EQ(n->budget_s, 7);
  auto c = ParseCheckCommandLine({"--machinefile", "hosts", "--binary", "./job", "--max-clock-skew", "0.5"});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->hostfile, std::optional<std::string>("hosts"));
  EXPECT_EQ(c->binary, std::optional<std::string>("./job"));
  EXPECT_DOUBLE_EQ(c->max_clock_skew_s, 0.5);
  EXPECT_EQ(c->budget_s, 30);
}

}  // namespace
}  // namespace gpulaunch
