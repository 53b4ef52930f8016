#include "slurm/slurm_policy.h"

#include <gtest/gtest.h>

#include "common/strings.h"

namespace gpulaunch {
namespace {

constexpr char kPolicy[] = R"({"format": "gpulaunch-policy/v1", "grace_s": 120,
 "teams": [{"name": "ml", "guarantee": 8, "nominal": 16, "borrow_limit": 8, "users": ["alice", "bob"]},
           {"name": "infra", "guarantee": 4, "nominal": 8, "lend_limit": 4}],
 "reservations": [{"name": "demo", "team": "ml", "nodes": 2, "start": "2026-12-01T10:00:00", "minutes": 90},
                  {"name": "ops", "team": "infra", "start": "now"}]})";

TEST(SlurmPolicy, ReadsTeamsAndReservations) {
  auto p = ParsePolicyFile(kPolicy, "policy.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->teams.size(), 2u);
  EXPECT_EQ(p->teams[1].borrow_limit, 0);
  EXPECT_EQ(p->teams[0].users, (std::vector<std::string>{"alice", "bob"}));
  ASSERT_EQ(p->reservations.size(), 2u);
  EXPECT_EQ(p->reservations[1].start, "now");
  EXPECT_EQ(p->reservations[1].minutes, 60);
  EXPECT_EQ(PolicyQuotaText(*p), "ml:8/16/8,infra:4/8/0/4");
  // Slurm lends every idle GPU: slurm-config refuses a lend limit, naming it.
  EXPECT_EQ(CheckPolicySlurmCanEnforce(*p).message(),
            "policy.json:3: team infra sets \"lend_limit\", which Slurm cannot enforce (a borrowed job may take any "
            "idle GPU, docs/slurm.md); remove it for slurm-config (gpulaunch sim --quota still takes a lend limit)");
  p->teams[1].lend_limit = -1;
  EXPECT_TRUE(CheckPolicySlurmCanEnforce(*p).ok());
}

TEST(SlurmPolicy, AReservationMustFitTheCluster) {
  auto p = ParsePolicyFile(R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": 4}],
      "reservations": [{"name": "big", "team": "a", "start": "2028-02-29T10:00:00", "nodes": 1000}]})",
                           "policy.json");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(CheckPolicyFits(*p, 1000).ok());
  EXPECT_EQ(CheckPolicyFits(*p, 2).message(), "policy.json:2: reservation big asks for 1000 nodes, and the cluster has 2");
}

TEST(SlurmPolicy, BadFilesSayWhereAndWhat) {
  const struct {
    const char* text;
    const char* says;
  } cases[] = {
      {R"({"format": "x"})", "policy.json:1: not a policy file"},
      {R"({"format": "gpulaunch-policy/v1", "teams": []})", "\"teams\" must be a non-empty array"},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a;rm -rf /", "nominal": 1}]})", "\"name\" must be like"},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a"}]})", "team a needs \"nominal\""},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "borrowed", "nominal": 1}]})",
       "a team may not be called \"borrowed\""},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": 4, "guarantee": 8}]})",
       "guarantee 8 exceeds nominal 4"},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": 4}, {"name": "a", "nominal": 4}]})",
       "team a appears twice"},
      {R"J({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": 4, "users": ["$(id)"]}]})J",
       "user names must be like"},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": 4}],
           "reservations": [{"name": "r", "team": "b", "start": "now"}]})",
       "names unknown team b"},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": 4}],
           "reservations": [{"name": "r", "team": "a", "start": "tomorrow"}]})",
       "\"start\" must be like"},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": 1.5}]})", "must be a whole number"},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": 4,
           "gaurantee": 2}]})",
       "policy.json:2: unknown key \"gaurantee\" in a team (it takes name, guarantee, nominal"},
      {R"({"format": "gpulaunch-policy/v1", "grace": 5, "teams": [{"name": "a", "nominal": 4}]})",
       "unknown key \"grace\" in the policy"},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": 4}],
           "reservations": [{"name": "r", "team": "a", "start": "2030-13-45T99:99:99"}]})",
       "\"start\" 2030-13-45T99:99:99 is not a date and time"},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": 4}],
           "reservations": [{"name": "r", "team": "a", "start": "2027-02-29T10:00:00"}]})",
       "is not a date and time"},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": 4, "users": ["u", "u"]}]})",
       "user u is listed twice in team a"},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": 4, "users": ["u"]},
           {"name": "b", "nominal": 4, "users": ["u"]}]})",
       "policy.json:2: user u is in teams a and b; a user belongs to one team"},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": 4}],
           "reservations": [{"name": "r", "team": "a", "start": "now", "node": 2}]})",
       "unknown key \"node\" in a reservation"},
      // Far outside int's range (a cast would be undefined; the fuzzer found it).
      {R"({"format": "gpulaunch-policy/v1", "grace_s": 3099999999999999999999999990,
           "teams": [{"name": "a", "nominal": 4}]})",
       "\"grace_s\" must be a whole number from 0 to 86400"},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": -1e300}]})",
       "\"nominal\" must be a whole number"},
      // Slurm folds account (and user) names: a team "TQA" would be account tqa.
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "TQa", "nominal": 4}]})",
       "policy.json:1: team \"TQa\" has capitals; it is a Slurm account, and Slurm keeps account names in lower case "
       "(sacctmgr folds them): write \"tqa\""},
      {R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": 4,
           "users": ["Alice"]}]})",
       "policy.json:2: user \"Alice\" has capitals; it is a Slurm user"},
  };
  for (const auto& c : cases) {
    auto p = ParsePolicyFile(c.text, "policy.json");
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_NE(p.status().message().find(c.says), std::string::npos) << p.status().message();
  }
}

TEST(SlurmPolicy, AReservationWhoseStartHasPassedIsRefused) {
  auto p = ParsePolicyFile(R"({"format": "gpulaunch-policy/v1", "teams": [{"name": "a", "nominal": 4}],
      "reservations": [{"name": "now", "team": "a", "start": "now"},
                       {"name": "old", "team": "a", "start": "2026-12-01T10:00:00", "minutes": 60}]})",
                           "policy.json");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::tm before{};
  before.tm_year = 2026 - 1900, before.tm_mon = 11, before.tm_mday = 1, before.tm_hour = 9, before.tm_isdst = -1;
  EXPECT_TRUE(CheckPolicyReservationsAhead(*p, std::mktime(&before)).ok());
  std::tm after = before;
  after.tm_hour = 10, after.tm_min = 30;
  const Status late = CheckPolicyReservationsAhead(*p, std::mktime(&after));
  EXPECT_EQ(late.message(), "policy.json:3: reservation old starts at 2026-12-01T10:00:00, which has passed (it is "
                            "2026-12-01T10:30:00 here): give a later \"start\", or \"now\", or remove it");
}

}  // namespace
}  // namespace gpulaunch
