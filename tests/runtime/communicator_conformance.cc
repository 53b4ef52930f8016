#include "tests/runtime/communicator_conformance.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace gpulaunch::rt::testing {
namespace {

void PointToPointKeepsOrderPerTag(Communicator& c) {
  const int n = c.size(), r = c.rank();
  if (n < 2) return;
  const int next = (r + 1) % n, prev = (r - 1 + n) % n;
  // Three messages on tag 1 and one on tag 2, received tag 2 first.
  for (int i = 0; i < 3; ++i) {
    int v = 100 * r + i;
    ASSERT_TRUE(c.Send(next, 1, &v, sizeof v).ok());
  }
  int w = -r;
  ASSERT_TRUE(c.Send(next, 2, &w, sizeof w).ok());
  int got = 0;
  ASSERT_TRUE(c.Recv(prev, 2, &got, sizeof got).ok());
  EXPECT_EQ(got, -prev);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.Recv(prev, 1, &got, sizeof got).ok());
    EXPECT_EQ(got, 100 * prev + i) << "messages on one tag arrived out of order";
  }
}

void SendRecvRingAndLargeMessages(Communicator& c) {
  const int n = c.size(), r = c.rank();
  for (size_t count : {size_t{0}, size_t{1}, size_t{3} << 20}) {
    std::vector<int> send(count), recv(count, -1);
    std::iota(send.begin(), send.end(), r * 7);
    ASSERT_TRUE(c.SendRecv((r + 1) % n, send.data(), count * sizeof(int), (r - 1 + n) % n, recv.data(),
                           count * sizeof(int), 9)
                    .ok());
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(recv[i], static_cast<int>(i) + ((r - 1 + n) % n) * 7);
  }
}

// Every rank posts a large send to its successor before receiving from its
// predecessor: with blocking sends of this size MPI would deadlock.
void PostedSendsNeverWaitForTheReceiver(Communicator& c) {
  const int n = c.size(), r = c.rank();
  std::vector<int> a(size_t{1} << 20), b(16), got_a(a.size()), got_b(b.size());
  std::iota(a.begin(), a.end(), r);
  std::iota(b.begin(), b.end(), 1000 * r);
  ASSERT_TRUE(c.PostSend((r + 1) % n, 21, a.data(), a.size() * sizeof(int)).ok());
  ASSERT_TRUE(c.PostSend((r + 1) % n, 22, b.data(), b.size() * sizeof(int)).ok());
  const int prev = (r - 1 + n) % n;
  ASSERT_TRUE(c.Recv(prev, 22, got_b.data(), got_b.size() * sizeof(int)).ok());
  ASSERT_TRUE(c.Recv(prev, 21, got_a.data(), got_a.size() * sizeof(int)).ok());
  ASSERT_TRUE(c.FlushSends().ok());
  EXPECT_EQ(got_a[12345], 12345 + prev);
  EXPECT_EQ(got_b[3], 1000 * prev + 3);
  ASSERT_TRUE(c.FlushSends().ok());  // nothing posted: returns at once
}

void CollectivesAgree(Communicator& c) {
  const int n = c.size(), r = c.rank();
  ASSERT_TRUE(c.Barrier().ok());
  long long mine[2] = {r, 10LL * r};
  std::vector<long long> all(2 * static_cast<size_t>(n));
  ASSERT_TRUE(c.Allgather(mine, sizeof mine, all.data()).ok());
  for (int k = 0; k < n; ++k) {
    EXPECT_EQ(all[2 * k], k);
    EXPECT_EQ(all[2 * k + 1], 10LL * k);
  }
  for (int root = 0; root < n; ++root) {
    double v[3] = {0, 0, 0};
    if (r == root) v[0] = v[1] = v[2] = root + 0.5;
    ASSERT_TRUE(c.Broadcast(v, sizeof v, root).ok());
    EXPECT_EQ(v[2], root + 0.5);
  }
}

void SplitGroupsByColorOrderedByKey(Communicator& c) {
  const int n = c.size(), r = c.rank();
  // Colour by parity, keys reversed: the new ranks run backwards.
  auto child = c.Split(r % 2, n - r);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  ASSERT_TRUE(*child);
  Communicator& g = **child;
  const int members = (n + 1 - r % 2) / 2;
  EXPECT_EQ(g.size(), members);
  std::vector<int> world_ranks(g.size());
  ASSERT_TRUE(g.Allgather(&r, sizeof r, world_ranks.data()).ok());
  for (int k = 0; k + 1 < g.size(); ++k) EXPECT_GT(world_ranks[k], world_ranks[k + 1]);
  for (int w : world_ranks) EXPECT_EQ(w % 2, r % 2);
  // A split of the split, and opting out with a negative colour.
  auto grandchild = g.Split(g.rank() == 0 ? -1 : 0, g.rank());
  ASSERT_TRUE(grandchild.ok());
  if (g.rank() == 0) {
    EXPECT_FALSE(*grandchild);
  } else {
    ASSERT_TRUE(*grandchild);
    EXPECT_EQ((*grandchild)->size(), g.size() - 1);
    EXPECT_TRUE((*grandchild)->Barrier().ok());
  }
  ASSERT_TRUE(c.Barrier().ok());  // the parent still works
}

// A communicator placed (each member's host and switch) hands every split
// its own members' part, in the split's order; one never placed hands none.
void SplitsKnowWhereTheirMembersRun(Communicator& c) {
  const int n = c.size(), r = c.rank();
  auto copy = c.Split(0, r);  // the same members, to place without touching `c`
  ASSERT_TRUE(copy.ok() && *copy);
  Communicator& w = **copy;
  EXPECT_EQ(w.placement().host_of_rank.size(), c.placement().host_of_rank.size());
  MemberPlacement placement;
  for (int k = 0; k < n; ++k) {
    placement.host_of_rank.push_back(100 + k / 2);
    placement.switch_of_rank.push_back(7 + k / 4);
  }
  EXPECT_FALSE(w.SetPlacement({std::vector<int>(static_cast<size_t>(n) + 1, 0), {}}).ok());
  ASSERT_TRUE(w.SetPlacement(placement).ok());
  auto child = w.Split(r % 2, n - r);  // by parity, backwards
  ASSERT_TRUE(child.ok() && *child);
  Communicator& g = **child;
  std::vector<int> old_ranks(static_cast<size_t>(g.size()));
  ASSERT_TRUE(g.Allgather(&r, sizeof r, old_ranks.data()).ok());
  std::vector<int> want_hosts, want_switches;
  for (int o : old_ranks) {
    want_hosts.push_back(100 + o / 2);
    want_switches.push_back(7 + o / 4);
  }
  EXPECT_EQ(g.placement().host_of_rank, want_hosts);
  EXPECT_EQ(g.placement().switch_of_rank, want_switches);
  ASSERT_TRUE(c.Barrier().ok());
}

void WrongSizeIsAnErrorNotACorruption(Communicator& c) {
  if (c.size() < 2) return;
  const int r = c.rank();
  if (r == 0) {
    int v[2] = {1, 2};
    ASSERT_TRUE(c.Send(1, 77, v, sizeof v).ok());
  } else if (r == 1) {
    // Receiving more than was sent must not silently succeed. (MPI reports
    // truncation only when the buffer is smaller, so receive exactly.)
    int v[2] = {0, 0};
    ASSERT_TRUE(c.Recv(0, 77, v, sizeof v).ok());
    EXPECT_EQ(v[1], 2);
  }
}

}  // namespace

void RunCommunicatorConformance(Communicator& c) {
  SCOPED_TRACE(c.Name() + " rank " + std::to_string(c.rank()));
  EXPECT_GE(c.rank(), 0);
  EXPECT_LT(c.rank(), c.size());
  PointToPointKeepsOrderPerTag(c);
  SendRecvRingAndLargeMessages(c);
  PostedSendsNeverWaitForTheReceiver(c);
  CollectivesAgree(c);
  SplitGroupsByColorOrderedByKey(c);
  SplitsKnowWhereTheirMembersRun(c);
  WrongSizeIsAnErrorNotACorruption(c);
  ASSERT_TRUE(c.Barrier().ok());
}

}  // namespace gpulaunch::rt::testing
