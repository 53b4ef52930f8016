// The control server and the shim's client over real loopback sockets.
#include "launcher/base/control_server.h"

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "launcher/shim/control_client.h"
#include "tests/testing/control_peer.h"

namespace gpulaunch {
namespace {

using Kind = ControlMessage::Kind;
using testing_control::Join;
using testing_control::Options;
using testing_control::TestKey;
using testing_control::kTestJob;

ControlMessage Checkin(int rank, int pid, const std::string& hash) {
  ControlMessage m;
  m.kind = Kind::kCheckin;
  m.rank = rank;
  m.pid = pid;
  m.world = 2;
  m.host = "localhost";
  m.plan_hash = hash;
  return m;
}

// The shim connects to the numeric address gpulaunch advertises and resolves
// no names (control_client.h): a host name or a malformed port is refused
// without a connection.
TEST(ControlClient, ConnectsOnlyToANumericAddress) {
  ControlServer server;
  ASSERT_TRUE(server.Start(Options(1, {"node1/0/1/0/0/-/-1/-/0/-"})).ok());
  const std::string port = std::to_string(server.port());
  ControlClient client;
  EXPECT_TRUE(client.Connect("127.0.0.1:" + port));
  for (const std::string& bad : {"localhost:" + port, std::string("127.0.0.1:"), std::string("127.0.0.1:99999"),
                                 "127.0.0.1:" + port + "x", std::string("127.0.0.1"), std::string("")}) {
    EXPECT_FALSE(client.Connect(bad)) << bad;
    EXPECT_FALSE(client.connected()) << bad;
  }
}

// Each shim asks for its own row; the answer names the plan it belongs to.
TEST(ControlServer, ServesEachRankItsRowOfThePlan) {
  ControlServer server;
  ASSERT_TRUE(server.Start(Options(4, {"node1/0/2/0/1/0-3/0/0/1/mlx5_0:1", "node1/1/2/0/1/4-7/0/1/1/-"})).ok());
  ControlClient a, b, c, d;
  ASSERT_TRUE(Join(a, server, 0) && Join(b, server, 1) && Join(c, server, 2) && Join(d, server, 3));
  auto row1 = b.FetchSlotRow(1, "H", 60000);
  ASSERT_TRUE(row1.ok()) << row1.status().ToString();
  EXPECT_EQ(*row1, "node1/1/2/0/1/4-7/0/1/1/-");
  auto row0 = a.FetchSlotRow(0, "H", 60000);
  ASSERT_TRUE(row0.ok()) << row0.status().ToString();
  EXPECT_EQ(*row0, "node1/0/2/0/1/0-3/0/0/1/mlx5_0:1");
  // A rank started for another plan, or one the plan has no row for, is told so.
  auto other = c.FetchSlotRow(2, "other-plan", 60000);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("gpulaunch serves plan H"), std::string::npos) << other.status().message();
  auto missing = d.FetchSlotRow(3, "H", 60000);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("the plan has no rank 3"), std::string::npos) << missing.status().message();
  // The row is asked before the check-in, on the same connection.
  ASSERT_TRUE(a.Send(Checkin(0, 999991, "H")));
  EXPECT_EQ(server.CheckedIn(), 1);
}

// With cached topologies, no rank gets its row before every checked host's
// first rank confirmed the host's fingerprint.
TEST(ControlServer, HoldsEveryRowUntilEachCachedHostIsConfirmed) {
  ControlServer server;
  HostCheck check{{"node2", "node2", "node3"}, {{"node2", "f2"}, {"node3", "f3"}}};
  ASSERT_TRUE(server.Start(Options(3, {"node2/0/2/0/0/-/-1/-/0/-", "node2/1/2/0/0/-/-1/-/0/-",
                                       "node3/0/1/1/0/-/-1/-/0/-"}, check)).ok());
  ControlClient a, b, c;
  ASSERT_TRUE(Join(a, server, 0) && Join(b, server, 1) && Join(c, server, 2));
  // node2's confirmed, node3's not yet: rank 1 waits (1 s is long enough to
  // see that it is not answered).
  StatusOr<std::string> row0 = Internal("not answered");
  std::thread first([&] { row0 = a.FetchSlotRow(0, "H", 60000, "f2"); });
  auto early = b.FetchSlotRow(1, "H", 1000);
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.status().message().find("no answer"), std::string::npos) << early.status().message();
  EXPECT_NE(early.status().message().find("first rank of a host"), std::string::npos) << early.status().message();
  EXPECT_EQ(server.HeldRanks(), (std::set<int>{0, 1}));
  // node3's rank confirms it: every row goes out.
  auto row2 = c.FetchSlotRow(2, "H", 60000, "f3");
  ASSERT_TRUE(row2.ok()) << row2.status().ToString();
  EXPECT_EQ(*row2, "node3/0/1/1/0/-/-1/-/0/-");
  first.join();
  ASSERT_TRUE(row0.ok()) << row0.status().ToString();
  EXPECT_EQ(*row0, "node2/0/2/0/0/-/-1/-/0/-");
  EXPECT_TRUE(server.ChangedHosts().empty());
  EXPECT_TRUE(server.HeldRanks().empty());
}

TEST(ControlServer, AHostUnlikeItsCachedTopologyStopsEveryRank) {
  ControlServer server;
  HostCheck check{{"node2", "node3", "node3"}, {{"node2", "f2"}, {"node3", "f3"}}};
  ASSERT_TRUE(server.Start(Options(3, {"node2/0/1/0/0/-/-1/-/0/-", "node3/0/2/1/0/-/-1/-/0/-",
                                       "node3/1/2/1/0/-/-1/-/0/-"}, check)).ok());
  ControlClient a, b, c;
  ASSERT_TRUE(Join(a, server, 0) && Join(b, server, 1) && Join(c, server, 2));
  std::thread waiting([&] {
    auto row = a.FetchSlotRow(0, "H", 60000, "f2");  // node2 is as cached: waits for node3
    ASSERT_TRUE(row.ok()) << row.status().ToString();
    EXPECT_EQ(*row, kHostChangedRow);
  });
  auto changed = b.FetchSlotRow(1, "H", 60000, "something-else");
  waiting.join();
  ASSERT_TRUE(changed.ok()) << changed.status().ToString();
  EXPECT_EQ(*changed, kHostChangedRow);
  EXPECT_EQ(*c.FetchSlotRow(2, "H", 60000), kHostChangedRow);  // a late rank too
  EXPECT_EQ(server.ChangedHosts(), std::set<std::string>{"node3"});
}

// A job needs one socket per rank; one the open-file limit cannot hold is
// refused at once with the limit and the fix.
TEST(ControlServer, MoreRanksThanTheFileLimitAreRefusedByName) {
  rlimit lim{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  if (lim.rlim_max == RLIM_INFINITY) GTEST_SKIP() << "no hard open-file limit here";
  ControlServer server;
  const Status s = server.Start(Options(static_cast<int>(std::min<rlim_t>(lim.rlim_max, 1 << 30))));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("one connection per rank"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("hard open-file limit here is " + std::to_string(lim.rlim_max)), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("ulimit -Hn"), std::string::npos) << s.message();
}

TEST(ControlServer, RecordsCheckInsTailsExitsAndLostRanks) {
  ControlServer server;
  ASSERT_TRUE(server.Start(Options(2)).ok());
  ControlClient a, b;
  ASSERT_TRUE(Join(a, server, 0));
  ASSERT_TRUE(Join(b, server, 1));
  ASSERT_TRUE(a.Send(Checkin(0, 999991, "H")));
  ASSERT_TRUE(b.Send(Checkin(1, 999992, "other")));
  // What was sent before a query is in its answer: no sleeping here.
  EXPECT_EQ(server.CheckedIn(), 2);
  EXPECT_EQ(server.HashMismatches(), (std::set<int>{1}));

  ControlMessage tail;
  tail.kind = Kind::kTail;
  tail.rank = 0;
  tail.text = "Traceback: boom";
  ASSERT_TRUE(a.Send(tail));
  ControlMessage exit_msg;
  exit_msg.kind = Kind::kExit;
  exit_msg.rank = 0;
  exit_msg.value = 3;
  ASSERT_TRUE(a.Send(exit_msg));
  b.Close();  // rank 1 vanishes without a report

  const auto records = server.Records();
  ASSERT_EQ(records.size(), 2u);
  const RankRecord& r0 = records.at(0);
  EXPECT_TRUE(r0.ended);
  EXPECT_FALSE(r0.signaled);
  EXPECT_EQ(r0.exit_value, 3);
  EXPECT_EQ(r0.stderr_tail, std::vector<std::string>{"Traceback: boom"});
  EXPECT_FALSE(records.at(1).ended);
  // The close is seen on the server's next poll round, which a loaded machine
  // may delay: wait for it (the 60 s only keeps a broken server from hanging).
  bool lost = records.at(1).lost;
  for (int i = 0; i < 6000 && !lost; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    lost = server.Records().at(1).lost;
  }
  EXPECT_TRUE(lost);
  server.Stop();
}

// Profiled steps are kept with --profile only, for the connection's rank.
TEST(ControlServer, KeepsEachRanksMetricsAndCountsMalformedOnes) {
  ControlServer server;
  ControlServerOptions options = Options(1);
  options.keep_metrics = true;
  ASSERT_TRUE(server.Start(options).ok());
  ControlClient a;
  ASSERT_TRUE(Join(a, server, 0));
  ControlMessage m;
  m.kind = Kind::kMetric;
  m.rank = 0;
  ASSERT_TRUE(a.Send(Checkin(0, 999993, "H")));
  // The record claims rank 7; the connection speaks for rank 0.
  m.text = R"({"rank":7,"step":0,"step_s":0.5,"compute_s":0.25,"groups":[{"group":"dp","comm_s":0.25,"bytes":8}]})";
  ASSERT_TRUE(a.Send(m));
  m.text = R"({"rank":0,"step":1})";
  ASSERT_TRUE(a.Send(m));
  const auto metrics = server.Metrics();
  ASSERT_EQ(metrics.size(), 1u);
  ASSERT_EQ(metrics.at(0).size(), 1u);
  EXPECT_EQ(metrics.at(0)[0].rank, 0);
  EXPECT_DOUBLE_EQ(metrics.at(0)[0].step_s, 0.5);
  EXPECT_EQ(metrics.at(0)[0].groups.at(0).bytes, 8u);
  EXPECT_EQ(server.MalformedMetrics(), 1);
  EXPECT_NE(server.Records().at(0).last_beat, ControlClock::time_point{});  // a step is progress
  server.Stop();
}

TEST(ControlServer, StackRequestsReachTheShimAndTheAnswerIsRecorded) {
  ControlServer server;
  ASSERT_TRUE(server.Start(Options(1)).ok());
  ControlClient shim;
  ASSERT_TRUE(Join(shim, server, 0));
  ASSERT_TRUE(shim.Send(Checkin(0, 999993, "H")));
  ASSERT_EQ(server.CheckedIn(), 1);
  const std::string stacks = "#0 StallHere ()\n#1 main ()\n";
  std::thread answer([&] {
    pollfd p{shim.fd(), POLLIN, 0};
    while (poll(&p, 1, 5000) == 1) {
      for (const std::string& request : shim.ReadRequests()) {
        if (request != "stacks") continue;
        ControlMessage m;
        m.kind = Kind::kStacks;
        m.rank = 0;
        m.payload_bytes = stacks.size();
        shim.Send(m, stacks);
        return;
      }
    }
  });
  server.CollectStacks({0}, 5000);
  answer.join();
  EXPECT_EQ(server.Records().at(0).stacks, stacks);
}

// Every request line the shim receives within `ms` (poll on its socket).
std::vector<std::string> RequestsWithin(ControlClient& shim, int ms) {
  std::vector<std::string> got;
  pollfd p{shim.fd(), POLLIN, 0};
  while (poll(&p, 1, ms) == 1) {
    for (const std::string& r : shim.ReadRequests()) got.push_back(r);
    if (!got.empty()) break;
  }
  return got;
}

// A stop reaches every rank: those checked in at once, and one whose check-in
// comes (or is read) later the moment it arrives. Before, a rank not yet
// checked in made the stop fall back to the engine, and mpirun, signalled,
// sends SIGTERM and SIGKILL back to back: that rank never saw its SIGTERM.
TEST(ControlServer, AStopReachesARankThatChecksInAfterIt) {
  ControlServer server;
  ASSERT_TRUE(server.Start(Options(2)).ok());
  EXPECT_FALSE(server.SignalAllRanks(SIGTERM)) << "no rank known: the caller must signal the engine";
  ControlClient early, late;
  ASSERT_TRUE(Join(early, server, 0));
  ASSERT_TRUE(early.Send(Checkin(0, 999991, "H")));
  ASSERT_EQ(server.CheckedIn(), 1);
  EXPECT_TRUE(server.SignalAllRanks(SIGTERM)) << "one rank known: the shims carry the stop";
  EXPECT_EQ(RequestsWithin(early, 5000), (std::vector<std::string>{"signal 15"}));
  ASSERT_TRUE(Join(late, server, 1));
  ASSERT_TRUE(late.Send(Checkin(1, 999992, "H")));
  // The last rank in: `started` follows the stop (EveryRankHearsWhenTheLastRankCheckedIn).
  const std::vector<std::string> asked = RequestsWithin(late, 5000);
  ASSERT_FALSE(asked.empty());
  EXPECT_EQ(asked[0], "signal 15");
}

// `started` reaches every connection once the last rank checks in: ranks
// that already reported their end (they wait for it) too, and none before.
TEST(ControlServer, EveryRankHearsWhenTheLastRankCheckedIn) {
  ControlServer server;
  ASSERT_TRUE(server.Start(Options(3)).ok());
  ControlClient a, b, c;
  ASSERT_TRUE(Join(a, server, 0));
  ASSERT_TRUE(Join(b, server, 1));
  ASSERT_TRUE(Join(c, server, 2));
  ASSERT_TRUE(a.Send(Checkin(0, 999991, "H")));
  ControlMessage exit_msg;
  exit_msg.kind = Kind::kExit;
  exit_msg.rank = 0;
  ASSERT_TRUE(a.Send(exit_msg));
  ASSERT_TRUE(b.Send(Checkin(1, 999992, "H")));
  ASSERT_EQ(server.CheckedIn(), 2);  // both read and handled: anything they caused was sent
  EXPECT_TRUE(RequestsWithin(a, 100).empty());
  EXPECT_TRUE(RequestsWithin(b, 100).empty());
  ASSERT_TRUE(c.Send(Checkin(2, 999993, "H")));
  for (ControlClient* shim : {&a, &b, &c}) EXPECT_EQ(RequestsWithin(*shim, 5000), (std::vector<std::string>{"started"}));
}

}  // namespace
}  // namespace gpulaunch
