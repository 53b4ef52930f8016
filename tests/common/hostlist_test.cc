#include "common/hostlist.h"

#include <gtest/gtest.h>

namespace gpulaunch {
namespace {

struct ExpandCase {
  const char* expr;
  std::vector<std::string> hosts;
};

TEST(Hostlist, Expands) {
  const ExpandCase cases[] = {
      {"node1", {"node1"}},
      {"node[01-04]", {"node01", "node02", "node03", "node04"}},
      {"gpu[1,3-5]", {"gpu1", "gpu3", "gpu4", "gpu5"}},
      {"n[08-10]", {"n08", "n09", "n10"}},
      {"r[1-2]n[1-2]", {"r1n1", "r1n2", "r2n1", "r2n2"}},
      {"node[01-02],login1", {"node01", "node02", "login1"}},
      {" a.example.com , b ", {"a.example.com", "b"}},
      {"x[7]", {"x7"}},
  };
  for (const auto& c : cases) {
    auto got = ExpandHostlist(c.expr);
    ASSERT_TRUE(got.ok()) << c.expr << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.hosts) << c.expr;
  }
}

TEST(Hostlist, RejectsMalformedWithTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"node[01-04", "'[' without ']'"},
      {"node]1", "']' without '['"},
      {"node[4-1]", "runs backwards"},
      {"node[a-b]", "not a number"},
      {"", "empty"},
      {"node[1-99999999]", "too many hosts"},
      {"no de", "not allowed"},
      {"a,,b", "empty host name"},
  };
  for (const auto& [expr, why] : cases) {
    auto got = ExpandHostlist(expr);
    ASSERT_FALSE(got.ok()) << expr;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find(why), std::string::npos) << got.status().message();
  }
}

}  // namespace
}  // namespace gpulaunch
