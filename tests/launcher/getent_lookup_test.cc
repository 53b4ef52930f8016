// The shim's name lookup through getent (launcher/shim/getent_lookup.h).
#include "launcher/shim/getent_lookup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace gpulaunch {
namespace {

TEST(GetentLookup, ReadsTheFirstFieldOfEachLineOnce) {
  const std::string out =
      "10.0.0.2        STREAM node2.cluster node2\n"
      "10.0.0.2        DGRAM  \n"
      "10.0.0.2        RAW    \n"
      "fd00::2         STREAM \n"
      "\n";
  EXPECT_EQ(ParseGetentHosts(out), (std::vector<std::string>{"10.0.0.2", "fd00::2"}));
  EXPECT_TRUE(ParseGetentHosts("").empty());
}

// localhost is in every /etc/hosts (the "files" source: no packet leaves).
TEST(GetentLookup, ResolvesLocalhostThroughTheSystemsNameService) {
  const std::vector<std::string> addresses = AddressesByGetent("localhost");
  ASSERT_FALSE(addresses.empty()) << "getent ahosts localhost found nothing";
  const bool loopback = std::any_of(addresses.begin(), addresses.end(),
                                    [](const std::string& a) { return a.rfind("127.", 0) == 0 || a == "::1"; });
  EXPECT_TRUE(loopback) << addresses.front();
}

TEST(GetentLookup, ANameThatLooksLikeAnOptionIsNotPassedOn) {
  EXPECT_TRUE(AddressesByGetent("-s").empty());
  EXPECT_TRUE(AddressesByGetent("").empty());
}

}  // namespace
}  // namespace gpulaunch
