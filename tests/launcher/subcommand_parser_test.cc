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

// plan and slurm-config parse through the same helper, with the cluster
// options they share (slurm-config places no job, so it has no -n).
TEST(SubcommandParser, PlanAndSlurmConfigReadAlike) {
  const std::pair<std::string, std::function<Status(const std::vector<std::string>&)>> both[] = {
      {"plan", [](const auto& a) { return ParsePlanCommandLine(a).status(); }},
      {"slurm-config", [](const auto& a) { return ParseSlurmConfigCommandLine(a).status(); }},
  };
  for (const auto& [name, parse] : both) {
    const std::string see = "; see 'gpulaunch " + name + " --help'";
    const Status unknown = parse({"--frobnicate"});
    EXPECT_EQ(unknown.message(), name + ": unknown option '--frobnicate'" + see);
    EXPECT_EQ(ExitCodeFor(unknown.code()), kExitUsage);
    EXPECT_EQ(parse({"--network"}).message(), name + ": --network needs a value" + see);
    EXPECT_EQ(parse({"--synthetic", "node:2", "stray"}).message(),
              name + ": unexpected argument 'stray': it takes options only" + see);
  }
  EXPECT_EQ(ParsePlanCommandLine({"-n", "1", "--synthetic", "node:2", "--cluster", "c.json"}).status().message(),
            "plan: give --synthetic or --cluster, not both");
  EXPECT_EQ(ParseSlurmConfigCommandLine({"--out", "d", "-H", "a", "--synthetic", "node:2"}).status().message(),
            "slurm-config: --synthetic and --cluster describe the whole cluster; do not combine them with hosts or "
            "--topology-file");
  EXPECT_EQ(ParsePlanCommandLine({"--synthetic", "node:1"}).status().message(),
            "plan: needs -n N (at least 1 rank), e.g. gpulaunch plan -n 16 --layout tp=8");
  EXPECT_EQ(ParsePlanCommandLine({"-n", "0"}).status().message(), "plan: --np 0: give ranks from 1 to 16777216");
  EXPECT_EQ(ParsePlanCommandLine({"-n", "2", "--format", "xml"}).status().message(),
            "plan: --format xml: choose table or json");
  EXPECT_EQ(ParseSlurmConfigCommandLine({"-n", "4", "--out", "d"}).status().message(),
            "slurm-config: unknown option '-n'; see 'gpulaunch slurm-config --help'");
  EXPECT_EQ(ParseSlurmConfigCommandLine({"--synthetic", "node:2"}).status().message(),
            "slurm-config: needs --out DIR, where topology.conf and gres.conf go");

  auto plan = ParsePlanCommandLine({"-np", "8", "-H", "a:4", "-H", "b:4", "--layout", "tp=4", "--allow-run-as-root",
                                    "--format", "json", "--gpus-per-rank", "0", "--explain"});
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->ranks, 8);
  EXPECT_EQ(plan->host_args, (std::vector<std::string>{"a:4", "b:4"}));
  EXPECT_EQ(plan->layout, "tp=4");
  EXPECT_TRUE(plan->allow_run_as_root);
  EXPECT_EQ(plan->format, "json");
  EXPECT_EQ(plan->gpus_per_rank, 0);
  EXPECT_TRUE(plan->explain);
  auto config = ParseSlurmConfigCommandLine({"--out", "d", "--synthetic", "leaf:2 node:2", "--policy", "p.json"});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->out_dir, std::optional<std::string>("d"));
  EXPECT_EQ(config->policy_file, std::optional<std::string>("p.json"));
  EXPECT_EQ(config->synthetic, std::optional<std::string>("leaf:2 node:2"));
  for (const std::string& help : {PlanHelpText(), SlurmConfigHelpText()}) {
    EXPECT_NE(help.find("\nOptions:\n"), std::string::npos) << help;
    EXPECT_NE(help.find("--allow-run-as-root"), std::string::npos) << help;
  }
  EXPECT_EQ(PlanHelpText().rfind("usage: gpulaunch plan -n N", 0), 0u);
  EXPECT_EQ(SlurmConfigHelpText().rfind("usage: gpulaunch slurm-config --out DIR", 0), 0u);
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
