// Which host names are this machine (launcher/base/host_names.h, and the
// launcher's cached form in host_identity.h).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "launcher/base/host_identity.h"

namespace gpulaunch {
namespace {

TEST(HostIdentity, LocalNamesAreLocalAndAnswersStayTheSame) {
  for (const std::string& name : {std::string("localhost"), std::string("127.0.0.1"), LocalHostname()}) {
    EXPECT_TRUE(IsLocalHost(name)) << name;
    EXPECT_TRUE(IsLocalHost(name)) << name << ", asked again";
  }
  // A documentation address (RFC 5737), on no interface here: numeric, so no
  // name lookup leaves the machine. Asked twice, the kept answer is the same.
  EXPECT_FALSE(IsLocalHost("192.0.2.7"));
  EXPECT_FALSE(IsLocalHost("192.0.2.7"));
}

// A lookup that records what it was asked and answers from a table.
struct FakeLookup {
  std::map<std::string, std::vector<std::string>> table;
  std::vector<std::string> asked;
  AddressLookup Fn() {
    return [this](const std::string& name) {
      asked.push_back(name);
      auto it = table.find(name);
      return it == table.end() ? std::vector<std::string>{} : it->second;
    };
  }
};

TEST(HostNames, OwnNamesAndNumericAddressesNeedNoLookup) {
  FakeLookup lookup;
  const std::string self = LocalHostname();
  EXPECT_TRUE(IsThisHost("localhost", lookup.Fn()));
  EXPECT_TRUE(IsThisHost(self, lookup.Fn()));
  EXPECT_TRUE(IsThisHost(self + ".example.org", lookup.Fn()));  // the same short name
  EXPECT_TRUE(IsThisHost("127.0.0.1", lookup.Fn()));
  EXPECT_TRUE(IsThisHost("127.0.1.1", lookup.Fn()));
  EXPECT_TRUE(IsThisHost("::1", lookup.Fn()));
  EXPECT_TRUE(IsThisHost("0:0::01", lookup.Fn()));  // ::1 written otherwise
  EXPECT_FALSE(IsThisHost("192.0.2.7", lookup.Fn()));
  EXPECT_FALSE(IsThisHost("2001:db8::7", lookup.Fn()));
  EXPECT_FALSE(IsThisHost("", lookup.Fn()));
  EXPECT_TRUE(lookup.asked.empty()) << lookup.asked.front();
}

TEST(HostNames, AnAliasIsThisHostWhenOneOfItsAddressesIsLocal) {
  const std::vector<std::string> local = LocalInterfaceAddresses();
  ASSERT_FALSE(local.empty()) << "getifaddrs found no address (not even loopback)";
  FakeLookup lookup;
  lookup.table["alias-of-me"] = {"192.0.2.9", local.front()};
  lookup.table["loopback-alias"] = {"127.0.1.1"};
  lookup.table["elsewhere"] = {"192.0.2.9", "2001:db8::9"};
  EXPECT_TRUE(IsThisHost("alias-of-me", lookup.Fn()));
  EXPECT_TRUE(IsThisHost("loopback-alias", lookup.Fn()));
  EXPECT_FALSE(IsThisHost("elsewhere", lookup.Fn()));
  EXPECT_FALSE(IsThisHost("unknown-name", lookup.Fn()));
  EXPECT_EQ(lookup.asked, (std::vector<std::string>{"alias-of-me", "loopback-alias", "elsewhere", "unknown-name"}));
}

TEST(HostNames, LocalInterfaceAddressesAreNumeric) {
  for (const std::string& a : LocalInterfaceAddresses()) {
    EXPECT_NE(a.find_first_of(".:"), std::string::npos) << a;
    EXPECT_EQ(a.find_first_not_of("0123456789abcdef.:"), std::string::npos) << a;
  }
}

}  // namespace
}  // namespace gpulaunch
