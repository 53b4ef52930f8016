// The control channel's proofs and tags (control_auth.h).
#include "launcher/base/control_auth.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace gpulaunch {
namespace {

ControlKey Key(char c) { return *DecodeControlSecret(std::string(64, c)); }

TEST(ControlAuth, SecretsAndNoncesAreFreshHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string s = NewControlSecretHex();
    EXPECT_EQ(s.size(), 64u);
    EXPECT_TRUE(DecodeControlSecret(s).ok());
    EXPECT_TRUE(seen.insert(s).second);
    EXPECT_EQ(NewControlNonceHex().size(), kControlNonceHexChars);
  }
  for (const std::string& bad : std::vector<std::string>{"", "abc", std::string(63, 'a'), std::string(64, 'g'), std::string(66, 'a')}) {
    const auto key = DecodeControlSecret(bad);
    ASSERT_FALSE(key.ok()) << bad;
    EXPECT_EQ(key.status().message().find(bad.empty() ? "\x01" : bad), std::string::npos) << "the text is repeated";
  }
}

// A proof binds the side, the job, the rank and both nonces.
TEST(ControlAuth, AProofBindsEveryField) {
  const std::string p = ControlProof(Key('a'), ControlSide::kClient, "job", 3, "sn", "cn");
  EXPECT_TRUE(ControlProofsEqual(p, ControlProof(Key('a'), ControlSide::kClient, "job", 3, "sn", "cn")));
  EXPECT_FALSE(ControlProofsEqual(p, ControlProof(Key('b'), ControlSide::kClient, "job", 3, "sn", "cn")));
  EXPECT_FALSE(ControlProofsEqual(p, ControlProof(Key('a'), ControlSide::kServer, "job", 3, "sn", "cn")));
  EXPECT_FALSE(ControlProofsEqual(p, ControlProof(Key('a'), ControlSide::kClient, "job2", 3, "sn", "cn")));
  EXPECT_FALSE(ControlProofsEqual(p, ControlProof(Key('a'), ControlSide::kClient, "job", 4, "sn", "cn")));
  EXPECT_FALSE(ControlProofsEqual(p, ControlProof(Key('a'), ControlSide::kClient, "job", 3, "sn2", "cn")));
  EXPECT_FALSE(ControlProofsEqual(p, ControlProof(Key('a'), ControlSide::kClient, "job", 3, "sn", "cn2")));
  EXPECT_FALSE(ControlProofsEqual(p, p.substr(1)));
  // Fields cannot slide into each other ("job|3" against "jo|b3"...).
  EXPECT_FALSE(ControlProofsEqual(ControlProof(Key('a'), ControlSide::kClient, "ab", 1, "c", "d"),
                                  ControlProof(Key('a'), ControlSide::kClient, "a", 1, "bc", "d")));
}

// Tags: in order, one direction each way, payload included, never twice.
TEST(ControlAuth, TagsOpenOnlyInOrderFromTheOtherSide) {
  ControlSession client(Key('a'), ControlSide::kClient, "job", 0, "sn", "cn");
  ControlSession server(Key('a'), ControlSide::kServer, "job", 0, "sn", "cn");
  const std::string first = client.Seal("beat 0"), second = client.Seal("stacks 0 3", "abc");
  ASSERT_EQ(first.back(), '\n');
  const std::string one = first.substr(0, first.size() - 1), two = second.substr(0, second.size() - 1);
  EXPECT_FALSE(server.Open(two, "abc")) << "out of order";
  ASSERT_TRUE(server.Open(one));
  EXPECT_EQ(*ControlSession(server).Open(two, "abc"), "stacks 0 3");
  EXPECT_FALSE(ControlSession(server).Open(two, "abd")) << "payload altered";
  EXPECT_FALSE(server.Open(one)) << "replayed";
  // A line the server sealed does not open as one from the client.
  ControlSession server2(Key('a'), ControlSide::kServer, "job", 0, "sn", "cn");
  const std::string echo = server2.Seal("beat 0");
  EXPECT_FALSE(ControlSession(Key('a'), ControlSide::kServer, "job", 0, "sn", "cn").Open(echo.substr(0, echo.size() - 1)));
  // Another connection's session (other nonces) does not open it either.
  EXPECT_FALSE(ControlSession(Key('a'), ControlSide::kServer, "job", 0, "sn", "cX").Open(one));
  // SealInto writes the same bytes without allocating.
  ControlSession a(Key('a'), ControlSide::kClient, "job", 0, "sn", "cn"), b = a;
  char out[128];
  const size_t n = b.SealInto(b.ReserveSend(), "beat 0", 6, out);
  EXPECT_EQ(std::string(out, n), a.Seal("beat 0"));
}

}  // namespace
}  // namespace gpulaunch
