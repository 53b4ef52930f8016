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
      // As Slurm: white space separates, empty items are skipped, and
      // several groups vary the last fastest, then the first.
      {"a b,,c", {"a", "b", "c"}},
      {"a[1-2]b[1-2]c[1-2]", {"a1b1c1", "a1b1c2", "a2b1c1", "a2b1c2", "a1b2c1", "a1b2c2", "a2b2c1", "a2b2c2"}},
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
      {"", "names no host"},
      {" , ,", "names no host"},
      {"node[1-99999999]", "more than 65536 hosts, Slurm's limit for one range"},
      {"no;de", "';' is not allowed in a host name (Slurm would keep it"},
      {"x[1-2]y", "text after the last ']' ('y'), which Slurm refuses"},
  };
  for (const auto& [expr, why] : cases) {
    auto got = ExpandHostlist(expr);
    ASSERT_FALSE(got.ok()) << expr;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find(why), std::string::npos) << got.status().message();
  }
}

// DNS's limits: 253 characters, 63 between dots; the longest legal names pass.
TEST(Hostlist, RefusesNamesLongerThanDnsAllows) {
  const std::string label63(63, 'a');
  const std::string longest = label63 + "." + label63 + "." + label63 + "." + std::string(61, 'b');  // 253
  ASSERT_EQ(longest.size(), 253u);
  EXPECT_TRUE(ExpandHostlist(longest).ok());
  EXPECT_TRUE(ExpandHostlist(label63 + ".example").ok());
  const std::pair<std::string, const char*> cases[] = {
      {std::string(300, 'h'), "host name of 300 characters; DNS names hold at most 253"},
      {longest + "c", "254 characters"},
      {std::string(64, 'a') + ".example", "a label of 64 characters"},
      {std::string(70, 'x') + "[1-2]", "a label of 71 characters"},
  };
  for (const auto& [expr, why] : cases) {
    auto got = ExpandHostlist(expr);
    ASSERT_FALSE(got.ok()) << expr;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(got.status().message().find(why), std::string::npos) << got.status().message();
  }
}

// Slurm's own limit, as scontrol show hostnames reads it: a range of 65,536
// expands, 65,537 is "Too many hosts in range". A longer product of ranges
// (Slurm expands a[1-300]b[1-300]) is refused here, saying so.
TEST(Hostlist, HoldsAtMostSlurmsRangeLimitAndNeverLoopsPastTheTop) {
  auto full = ExpandHostlist("n[1-65536]");
  ASSERT_TRUE(full.ok()) << full.status().message();
  EXPECT_EQ(full->size(), 65536u);
  EXPECT_EQ(full->back(), "n65536");
  EXPECT_FALSE(ExpandHostlist("n[1-65537]").ok());
  auto product = ExpandHostlist("a[1-300]b[1-300]");
  ASSERT_FALSE(product.ok());
  EXPECT_NE(product.status().message().find("Slurm would expand"), std::string::npos) << product.status().message();
  EXPECT_FALSE(ExpandHostlist("a[1-40000],b[1-40000]").ok());
  // The largest value ends the loop (v <= INT64_MAX is always true).
  auto top = ExpandHostlist("n[9223372036854775807]");
  ASSERT_TRUE(top.ok()) << top.status().message();
  EXPECT_EQ(*top, (std::vector<std::string>{"n9223372036854775807"}));
  auto near_top = ExpandHostlist("n[9223372036854775806-9223372036854775807]");
  ASSERT_TRUE(near_top.ok());
  EXPECT_EQ(near_top->size(), 2u);
  // The fuzzer's input that ran 14 s expanding 808,375 names: refused at once.
  EXPECT_FALSE(ExpandHostlist("noden[0-4][01-6467]node-[0-4][01-04,7]gode4").ok());
}

}  // namespace
}  // namespace gpulaunch
