// The environment's way to Hydra's proxies over ssh (hydra_launch_agent.h):
// the block round-trips, ssh's command line is cut where ssh cuts it, and the
// agent's ssh argv prefixes the remote command with the shim's proxy role.
#include "launcher/shim/hydra_launch_agent.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

TEST(HydraLaunchAgent, TheEnvironmentBlockRoundTripsEveryValue) {
  const std::vector<std::string> env = {"GPULAUNCH_CONTROL_SECRET=" + std::string(64, 'a'), "EMPTY=",
                                        "WITH_EQUALS=a=b=c", "LINES=one\ntwo", "UTF8=\xc3\xa9t\xc3\xa9"};
  const std::string block = EncodeEnvironmentBlock(env);
  const size_t newline = block.find('\n');
  ASSERT_NE(newline, std::string::npos);
  auto size = ParseEnvironmentHeader(block.substr(0, newline));
  ASSERT_TRUE(size.ok()) << size.status().message();
  EXPECT_EQ(*size, block.size() - newline - 1);
  auto decoded = DecodeEnvironmentEntries(block.substr(newline + 1));
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded->size(), env.size());
  EXPECT_EQ(decoded->at("GPULAUNCH_CONTROL_SECRET"), std::string(64, 'a'));
  EXPECT_EQ(decoded->at("EMPTY"), "");
  EXPECT_EQ(decoded->at("WITH_EQUALS"), "a=b=c");
  EXPECT_EQ(decoded->at("LINES"), "one\ntwo");
}

TEST(HydraLaunchAgent, ABadBlockIsRefusedWithItsReason) {
  EXPECT_FALSE(ParseEnvironmentHeader("HELLO 12").ok());
  EXPECT_FALSE(ParseEnvironmentHeader("GLENV1 -3").ok());
  EXPECT_FALSE(ParseEnvironmentHeader("GLENV1 99999999999").ok());
  EXPECT_FALSE(ParseEnvironmentHeader("GLENV1 12x").ok());
  EXPECT_FALSE(DecodeEnvironmentEntries(std::string("A=1\0NOEQUALS\0", 13)).ok());
  EXPECT_FALSE(DecodeEnvironmentEntries(std::string("=1\0", 3)).ok());
  auto unterminated = DecodeEnvironmentEntries("A=1");
  ASSERT_FALSE(unterminated.ok());
  EXPECT_NE(unterminated.status().message().find("NUL"), std::string::npos);
}

TEST(HydraLaunchAgent, SshArgumentsAreCutWhereSshCutsThem) {
  // As MPICH 4.0's Hydra runs its launcher.
  auto hydra = ParseSshArguments({"-x", "node2", "\"/usr/bin/hydra_pmi_proxy\"", "--control-port", "10.0.0.1:4000"});
  ASSERT_TRUE(hydra.ok()) << hydra.status().message();
  EXPECT_EQ(hydra->options, std::vector<std::string>{"-x"});
  EXPECT_EQ(hydra->destination, "node2");
  EXPECT_EQ(hydra->remote.size(), 3u);
  // Options with arguments, attached or not, and flags run together.
  auto options = ParseSshArguments({"-F", "/etc/cfg", "-xq", "-p22", "-o", "BatchMode=yes", "user@h", "cmd"});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->options, (std::vector<std::string>{"-F", "/etc/cfg", "-xq", "-p22", "-o", "BatchMode=yes"}));
  EXPECT_EQ(options->destination, "user@h");
  EXPECT_EQ(options->remote, std::vector<std::string>{"cmd"});
  EXPECT_FALSE(ParseSshArguments({"-x", "-F"}).ok());
  EXPECT_FALSE(ParseSshArguments({"-x", "host"}).ok()) << "no remote command";
  EXPECT_FALSE(ParseSshArguments({"-x"}).ok()) << "no host";
}

TEST(HydraLaunchAgent, TheRemoteCommandStartsWithTheShimsProxyRole) {
  auto cmd = ParseSshArguments({"-x", "node2", "\"/usr/bin/hydra_pmi_proxy\"", "--proxy-id", "1"});
  ASSERT_TRUE(cmd.ok());
  EXPECT_EQ(HydraProxySshArgv("/usr/bin/ssh", *cmd, "/opt/gl bin/gpulaunch-shim"),
            (std::vector<std::string>{"/usr/bin/ssh", "-x", "node2", "'/opt/gl bin/gpulaunch-shim'", "--hydra-proxy",
                                      "\"/usr/bin/hydra_pmi_proxy\"", "--proxy-id", "1"}));
}

}  // namespace
}  // namespace gpulaunch
