// linkcheck's options (launcher/check/linkcheck/linkcheck_options.h): the
// forms it accepts, the errors it gives, and the measurement options that a
// remote server and client are started with, which must parse back to the
// same measurement.
#include "launcher/check/linkcheck/linkcheck_options.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

TEST(LinkcheckOptions, ExactlyOneFormIsGiven) {
  EXPECT_TRUE(ParseLinkcheckOptions({"--server"}).ok());
  EXPECT_TRUE(ParseLinkcheckOptions({"--client", "node2"}).ok());
  EXPECT_TRUE(ParseLinkcheckOptions({"--hosts", "node1,node2"}).ok());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{}, {"--server", "--client", "node2"}, {"--server", "--hosts", "a,b"}}) {
    const auto o = ParseLinkcheckOptions(args);
    ASSERT_FALSE(o.ok()) << args.size();
    EXPECT_NE(o.status().message().find("give one of --server, --client HOST, or --hosts"), std::string::npos);
  }
}

TEST(LinkcheckOptions, BadValuesNameTheOptionAndTheFix) {
  const auto pattern = ParseLinkcheckOptions({"--hosts", "a,b", "--pattern", "star"});
  ASSERT_FALSE(pattern.ok());
  EXPECT_NE(pattern.status().message().find("--pattern star: choose ring or pairs"), std::string::npos);
  const auto sizes = ParseLinkcheckOptions({"--hosts", "a,b", "--sizes", "1,512"});
  ASSERT_FALSE(sizes.ok());
  EXPECT_NE(sizes.status().message().find("from 1 to 256"), std::string::npos);
  const auto sync = ParseLinkcheckOptions({"--hosts", "a,b", "--concurrent", "--sync", "60"});
  ASSERT_FALSE(sync.ok());
  EXPECT_NE(sync.status().message().find("--sync"), std::string::npos);
  EXPECT_FALSE(ParseLinkcheckOptions({"--client", "b", "--start-at", "-5"}).ok());
}

TEST(LinkcheckOptions, QuickAndConcurrentSetTheirDefaultsButNotOverGivenValues) {
  const auto quick = ParseLinkcheckOptions({"--hosts", "a,b", "--quick", "--iterations", "50"});
  ASSERT_TRUE(quick.ok());
  EXPECT_EQ(quick->plan.iterations, 50);                      // given: kept
  EXPECT_EQ(quick->plan.bytes_per_size, 32ull << 20);         // --quick's
  EXPECT_EQ(quick->plan.sizes, (std::vector<uint64_t>{1u << 20, 4u << 20}));
  const auto concurrent = ParseLinkcheckOptions({"--hosts", "a,b,c", "--concurrent"});
  ASSERT_TRUE(concurrent.ok());
  EXPECT_EQ(concurrent->pattern, "pairs");  // --concurrent measures every pair alone first
  EXPECT_TRUE(concurrent->shared_memory);
  EXPECT_FALSE(ParseLinkcheckOptions({"--hosts", "a,b", "--no-shared-memory"})->shared_memory);
}

// What the --hosts form hands a remote client (and, without --start-at, its
// server) parses back to the same measurement.
TEST(LinkcheckOptions, TheClientsArgumentsParseBackToTheSameMeasurement) {
  auto o = ParseLinkcheckOptions({"--hosts", "a,b", "--port", "14000", "--iterations", "77", "--window", "3",
                                  "--mib-per-size", "9", "--sizes", "2,8", "--tls", "tcp", "--nic", "eth1"});
  ASSERT_TRUE(o.ok());
  o->plan.bandwidth_start_unix_ms = 1764950000123;
  std::vector<std::string> args = {"--client", "b"};
  const std::vector<std::string> client = ClientOnlyArgs(*o);
  args.insert(args.end(), client.begin(), client.end());
  const auto back = ParseLinkcheckOptions(args);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->port, 14000);
  EXPECT_EQ(back->plan.iterations, 77);
  EXPECT_EQ(back->plan.window, 3);
  EXPECT_EQ(back->plan.bytes_per_size, 9ull << 20);
  EXPECT_EQ(back->plan.sizes, (std::vector<uint64_t>{2u << 20, 8u << 20}));
  EXPECT_EQ(back->plan.bandwidth_start_unix_ms, 1764950000123);
  EXPECT_EQ(back->ucx.tls, "tcp");
  EXPECT_EQ(back->ucx.net_devices, "eth1");
  EXPECT_EQ(back->format, "json");  // the --hosts form reads the client's results as JSON
  std::vector<std::string> server = {"--server", "--once"};
  const std::vector<std::string> measure = ClientArgs(*o);
  server.insert(server.end(), measure.begin(), measure.end());
  const auto served = ParseLinkcheckOptions(server);
  ASSERT_TRUE(served.ok()) << served.status().message();
  EXPECT_EQ(served->plan.bandwidth_start_unix_ms, 0);  // only the client is told when to begin
  EXPECT_EQ(served->plan.sizes, back->plan.sizes);
}

TEST(LinkcheckOptions, HelpNamesEveryForm) {
  const std::string help = LinkcheckHelp();
  for (const char* form : {"--server", "--client HOST", "--hosts LIST", "--concurrent", "--links FILE|none"})
    EXPECT_NE(help.find(form), std::string::npos) << form;
}

}  // namespace
}  // namespace gpulaunch
