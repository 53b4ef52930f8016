// Which host names are this machine (launcher/base/host_identity.h).
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gpulaunch
