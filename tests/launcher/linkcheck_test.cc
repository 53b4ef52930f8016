#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "launcher/check/linkcheck/link_result.h"
#include "launcher/check/linkcheck/ucx_link.h"

namespace gpulaunch {
namespace {

// ucp_ep_print_info of UCX 1.13 (shared memory, then tcp).
constexpr char kShmInfo[] =
    "#\n# UCP endpoint \n#\n#               peer: <no debug data>\n"
    "#                 lane[0]:  3:sysv/memory.0 md[2]           -> md[2]/sysv/sysdev[255] am am_bw#0\n"
    "#                 lane[1]:  5:cma/memory.0 md[4]            -> md[4]/cma/sysdev[255] rma_bw#0\n"
    "#\n#                tag_send: 0..<egr/short>..93..<egr/bcopy>..8256..<rndv>..(inf)\n";
constexpr char kTcpInfo[] =
    "#                 lane[0]:  1:tcp/lo.0 md[0]                -> md[0]/tcp/sysdev[255] rma_bw#0 am am_bw#0\n"
    "#                 lane[1]:  0:tcp/eth0.100.0 md[0]          -> md[0]/tcp/sysdev[255] rma_bw#1 wireup\n"
    "#                 lane[2]:  2:rc_mlx5/mlx5_0:1.0 md[1]      -> md[1]/ib/sysdev[255] rma_bw#2\n"
    "#                 lane[3]:  4:self/memory.0 md[3]           -> md[3]/self/sysdev[255] am\n";

TEST(Linkcheck, LanesNameTransportAndDevice) {
  EXPECT_EQ(ParseUcxLanes(kShmInfo), (std::vector<std::string>{"sysv/memory", "cma/memory"}));
  EXPECT_EQ(ParseUcxLanes(kTcpInfo), (std::vector<std::string>{"tcp/lo", "tcp/eth0.100", "rc_mlx5/mlx5_0:1"}));
  EXPECT_TRUE(ParseUcxLanes("no lanes here").empty());
}

LinkResult Link(const std::string& from, const std::string& to, double rtt, double gbps_1m) {
  LinkResult l;
  l.from = from;
  l.to = to;
  l.transports = {"tcp/eth0"};
  l.iterations = 1000;
  l.rtt_median_us = rtt;
  l.rtt_p99_us = rtt * 2;
  l.bandwidth = {{1u << 20, 1000ull << 20, 1000.0 * (1 << 20) * 8 / (gbps_1m * 1e9)}};
  return l;
}

TEST(Linkcheck, ResultsRoundTripAndRender) {
  std::vector<LinkResult> links = {Link("node1", "node2", 10, 9.5), Link("node2", "node3", 12, 9.0)};
  links.push_back(LinkResult{"node3", "node4", {}, 0, 0, 0, {}, "cannot connect to node4:13337"});
  auto back = ParseLinkResultsJson(LinkResultsJson(links), "links.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[0].transports, std::vector<std::string>{"tcp/eth0"});
  EXPECT_DOUBLE_EQ((*back)[1].rtt_median_us, 12);
  EXPECT_NEAR((*back)[0].bandwidth[0].gbps(), 9.5, 1e-9);
  EXPECT_EQ((*back)[2].error, "cannot connect to node4:13337");
  const std::string table = RenderLinkTable(*back);
  EXPECT_NE(table.find("node1        node2        tcp/eth0                   10.0 us     20.0 us      5.0 us"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("9.50 Gbps"), std::string::npos) << table;
  EXPECT_NE(table.find("node3        node4        FAILED: cannot connect"), std::string::npos) << table;
  EXPECT_FALSE(ParseLinkResultsJson("{\"format\":\"x\"}", "f.json").ok());
}

TEST(Linkcheck, ComparisonFlagsOnlyLinksBeyondTheTolerance) {
  const std::vector<LinkResult> base = {Link("a", "b", 10, 10), Link("b", "c", 10, 10), Link("c", "a", 10, 10)};
  std::vector<LinkResult> now = {Link("a", "b", 11, 9), Link("b", "c", 15, 10), Link("c", "a", 10, 4),
                                 Link("a", "z", 99, 0.1)};
  const auto worse = CompareLinks(base, now, 20);
  EXPECT_EQ(worse, (std::vector<std::string>{"b -> c: latency 15.0 us round trip, 50% above 10.0",
                                             "c -> a: bandwidth 1 MiB 4.00 Gbps, 60% below 10.00"}));
  now[0].error = "no result";
  EXPECT_EQ(CompareLinks(base, {now[0]}, 20), std::vector<std::string>{"a -> b: not measured now (no result)"});
}

TEST(Linkcheck, QuantilesAreNearestRank) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_EQ(Quantile(v, 0.5), 50);
  EXPECT_EQ(Quantile(v, 0.99), 99);
  EXPECT_EQ(Quantile({}, 0.5), 0);
}

LinkPlan SmallPlan() {
  LinkPlan plan;
  plan.warmup = 20;
  plan.iterations = 200;
  plan.sizes = {1u << 20, 2u << 20};
  plan.bytes_per_size = 16u << 20;
  return plan;
}

const std::string kSecret(64, 'a');

struct Served {
  StatusOr<LinkResult> client = Internal("not run");
  Status server;
};

// Real UCX, two workers in this process over loopback: a server with its
// secret and limits, and a client with its own secret and plan.
Served RunPair(const UcxSettings& settings, const LinkPlan& limits, const std::string& server_secret,
               const LinkPlan& plan, const std::string& client_secret) {
  std::mutex mu;
  std::condition_variable cv;
  int port = 0;
  Served out;
  std::thread server([&] {
    out.server = RunLinkServer(0, settings, true, {}, server_secret, limits, [&](int p) {
      std::lock_guard<std::mutex> lock(mu);
      port = p;
      cv.notify_all();
    });
    std::lock_guard<std::mutex> lock(mu);
    port = port == 0 ? -1 : port;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return port != 0; });
  }
  if (port > 0) out.client = RunLinkClient("127.0.0.1", port, settings, plan, 5000, {}, client_secret);
  server.join();
  return out;
}

// The measured figures are present and sane, and --tls tcp makes UCX use tcp.
void MeasureLoopback(const UcxSettings& settings, const std::string& transport_prefix) {
  const Served s = RunPair(settings, SmallPlan(), kSecret, SmallPlan(), kSecret);
  const auto& r = s.client;
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(s.server.ok()) << s.server.message();
  ASSERT_FALSE(r->transports.empty());
  for (const std::string& t : r->transports) EXPECT_EQ(t.rfind(transport_prefix, 0), 0u) << t;
  EXPECT_EQ(r->iterations, 200);
  EXPECT_GT(r->rtt_median_us, 0);
  EXPECT_GE(r->rtt_p99_us, r->rtt_median_us);
  EXPECT_LT(r->rtt_median_us, 100000);
  ASSERT_EQ(r->bandwidth.size(), 2u);
  for (const BandwidthSample& b : r->bandwidth) {
    EXPECT_EQ(b.total_bytes, 16u << 20);
    EXPECT_EQ(b.warmup_bytes, b.message_bytes * static_cast<uint64_t>(SmallPlan().window));
    EXPECT_GT(b.gbps(), 0.01);
  }
  EXPECT_LT(r->started_late_ms, 0);  // no start time given
  EXPECT_LT(r->ended_ms, 0);
}

TEST(Linkcheck, LoopbackOverUcxWithItsOwnChoice) { MeasureLoopback({}, ""); }
TEST(Linkcheck, LoopbackOverUcxForcedToTcp) { MeasureLoopback({"tcp", ""}, "tcp/"); }

// A client without the run's secret is refused before the server allocates
// anything, and a server without it does not start.
TEST(Linkcheck, AStartTimeDatesTheBandwidthHalf) {
  // --concurrent's clients begin together: each says when it began and ended,
  // after the start time, and the end lies after every timed sample.
  LinkPlan plan = SmallPlan();
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  plan.bandwidth_start_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now).count() + 300;
  const Served s = RunPair({"tcp", ""}, SmallPlan(), kSecret, plan, kSecret);
  ASSERT_TRUE(s.client.ok()) << s.client.status().message();
  EXPECT_GE(s.client->started_late_ms, 0);
  double timed_ms = 0;
  for (const BandwidthSample& b : s.client->bandwidth) timed_ms += b.seconds * 1000;
  EXPECT_GE(s.client->ended_ms, s.client->started_late_ms + timed_ms);
  LinkResult saved = *s.client;
  saved.from = "here";  // the survey names the client's host
  auto back = ParseLinkResultsJson(LinkResultsJson({saved}), "links.json");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_NEAR((*back)[0].ended_ms, s.client->ended_ms, 1e-6 * s.client->ended_ms);
  EXPECT_EQ((*back)[0].bandwidth[0].warmup_bytes, s.client->bandwidth[0].warmup_bytes);
}

TEST(Linkcheck, BothEndsMustKnowTheRunsSecret) {
  const Served wrong = RunPair({}, SmallPlan(), kSecret, SmallPlan(), std::string(64, 'b'));
  ASSERT_FALSE(wrong.client.ok());
  EXPECT_NE(wrong.client.status().message().find("refused this client"), std::string::npos)
      << wrong.client.status().message();
  EXPECT_NE(wrong.server.message().find("without this run's secret"), std::string::npos) << wrong.server.message();
  const Served none = RunPair({}, SmallPlan(), "", SmallPlan(), kSecret);
  EXPECT_EQ(none.server.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(none.server.message().find("GPULAUNCH_LINKCHECK_SECRET"), std::string::npos) << none.server.message();
}

// The server allocates window x size for the client's plan: one larger than
// the server's own limits is refused.
TEST(Linkcheck, APlanLargerThanTheServersLimitsIsRefused) {
  LinkPlan big = SmallPlan();
  big.sizes = {256u << 20};
  big.window = 64;
  const Served s = RunPair({}, SmallPlan(), kSecret, big, kSecret);
  EXPECT_FALSE(s.client.ok());
  EXPECT_NE(s.server.message().find("larger than this server allows"), std::string::npos) << s.server.message();
}

TEST(Linkcheck, NoServerIsAnErrorWithinTheConnectTimeout) {
  const auto start = std::chrono::steady_clock::now();
  auto r = RunLinkClient("127.0.0.1", 1, {}, LinkPlan(), 300, {}, kSecret);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot connect to 127.0.0.1:1"), std::string::npos) << r.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace gpulaunch
