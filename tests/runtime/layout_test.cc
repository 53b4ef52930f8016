#include <gtest/gtest.h>

#include <set>

#include "runtime/process_groups.h"
#include "runtime/rank_env.h"
#include "runtime/thread_communicator.h"

namespace gpulaunch::rt {
namespace {

TEST(ParseLayout, FormsAndInference) {
  auto l = ParseLayout("tp=2,pp=2,dp=2", 8);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->ToString(), "tp=2,pp=2,dp=2,order=tp-pp-dp");
  EXPECT_EQ(ParseLayout("tp=4", 16)->ToString(), "tp=4,pp=1,dp=4,order=tp-pp-dp");
  EXPECT_EQ(ParseLayout("tp=2,pp=4,order=tp-dp-pp", 16)->ToString(), "tp=2,pp=4,dp=2,order=tp-dp-pp");
  EXPECT_EQ(ParseLayout("", 6)->ToString(), "tp=1,pp=1,dp=6,order=tp-pp-dp");
}

TEST(ParseLayout, BadInput) {
  const std::pair<const char*, const char*> cases[] = {
      {"tp=2,pp=2,dp=2", "needs 8 ranks but the job has 6"},
      {"tp=4", "does not divide"},
      {"xp=2", "unknown key 'xp'"},
      {"tp=0", "positive whole number"},
      {"tp=2,tp=2", "given twice"},
      {"tp", "has no '='"},
      {"order=tp-tp-dp", "once each"},
      // Found by fuzz_layout: the product of the extents overflowed an int.
      {"tp=1048576,pp=1048576", "more than the 1048576 a layout may have"},
      {"tp=65536,pp=65536,dp=65536", "more than the 1048576"},
  };
  for (const auto& [text, want] : cases) {
    auto l = ParseLayout(text, 6);
    ASSERT_FALSE(l.ok()) << text;
    EXPECT_NE(l.status().message().find(want), std::string::npos) << l.status().message();
  }
}

TEST(ParallelLayout, CoordinatesAndGroupsForManyShapes) {
  const char* orders[] = {"tp-pp-dp", "tp-dp-pp", "dp-tp-pp", "pp-dp-tp"};
  for (int tp : {1, 2, 4})
    for (int pp : {1, 2, 3})
      for (int dp : {1, 2, 5})
        for (const char* order : orders) {
          const std::string text = "tp=" + std::to_string(tp) + ",pp=" + std::to_string(pp) + ",dp=" +
                                   std::to_string(dp) + ",order=" + order;
          auto l = ParseLayout(text, tp * pp * dp);
          ASSERT_TRUE(l.ok()) << text;
          std::set<std::array<int, 3>> seen;
          for (int r = 0; r < l->world_size(); ++r) {
            const auto c = l->CoordsOf(r);
            EXPECT_EQ(l->RankOf(c), r) << text;
            EXPECT_TRUE(seen.insert(c).second);
            for (Axis a : {kTp, kPp, kDp}) {
              const auto g = l->GroupOf(a, r);
              ASSERT_EQ(static_cast<int>(g.size()), l->extent[a]);
              EXPECT_EQ(g[c[a]], r);
              for (int m : g) {  // members differ only along a
                const auto mc = l->CoordsOf(m);
                for (Axis b : {kTp, kPp, kDp}) {
                  if (b != a) {
                    EXPECT_EQ(mc[b], c[b]);
                  }
                }
              }
            }
          }
          // The fastest axis holds adjacent ranks.
          if (l->extent[l->order[0]] > 1) {
            EXPECT_EQ(l->GroupOf(l->order[0], 0)[1], 1) << text;
          }
        }
}

TEST(ProcessGroups, MatchTheLayoutOnEveryRankAndWarnAcrossHosts) {
  const auto layout = *ParseLayout("tp=2,pp=3,dp=2", 12);
  std::vector<std::string> hosts;
  for (int r = 0; r < 12; ++r) hosts.push_back(r < 5 ? "a" : "b");  // rank 4|5 TP pair spans hosts
  RunOnThreads(12, [&](Communicator& c) {
    auto pg = CreateGroups(c, layout, hosts);
    ASSERT_TRUE(pg.ok()) << pg.status().ToString();
    for (Axis a : {kTp, kPp, kDp}) {
      Communicator& g = *pg->group[a];
      const auto expected = layout.GroupOf(a, c.rank());
      ASSERT_EQ(g.size(), static_cast<int>(expected.size()));
      std::vector<int> members(g.size());
      const int me = c.rank();
      ASSERT_TRUE(g.Allgather(&me, sizeof me, members.data()).ok());
      EXPECT_EQ(members, expected) << AxisName(a) << " group of rank " << me;
    }
    EXPECT_EQ(!pg->warnings.empty(), c.rank() == 4 || c.rank() == 5) << c.rank();
    // Each group's hosts by group rank, as a reducer over the group takes them.
    for (Axis a : {kTp, kPp, kDp}) {
      const auto members = layout.GroupOf(a, c.rank());
      ASSERT_EQ(pg->group_hosts[a].size(), members.size());
      for (size_t i = 0; i < members.size(); ++i) {
        for (size_t k = 0; k < members.size(); ++k) {
          EXPECT_EQ(pg->group_hosts[a][i] == pg->group_hosts[a][k], hosts[members[i]] == hosts[members[k]]);
        }
      }
    }
  });
  RunOnThreads(2, [&](Communicator& c) {
    auto pg = CreateGroups(c, *ParseLayout("dp=2", 2));
    ASSERT_TRUE(pg.ok());
    EXPECT_TRUE(pg->group_hosts[kDp].empty());  // no hosts given: unknown
  });
}

EnvLookup Fake(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(RankEnv, Precedence) {
  auto ompi = ReadRankEnv(Fake({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"},
                               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"},
                               {"GPULAUNCH_PLAN_HASH", "abc"}}));
  ASSERT_TRUE(ompi.ok());
  EXPECT_EQ(ompi->rank, 3);
  EXPECT_EQ(ompi->local_rank, 1);
  EXPECT_EQ(ompi->plan_hash, "abc");
  auto torch = ReadRankEnv(Fake({{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}, {"SLURM_PROCID", "9"}}));
  EXPECT_EQ(torch->rank, 2);
  EXPECT_EQ(torch->source, "RANK/WORLD_SIZE");
  auto slurm = ReadRankEnv(Fake({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"}, {"SLURM_LOCALID", "1"}}));
  EXPECT_EQ(slurm->rank, 5);
  EXPECT_EQ(slurm->local_rank, 1);
  auto pmix = ReadRankEnv(Fake({{"PMIX_RANK", "4"}, {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "6"}}));
  EXPECT_EQ(pmix->rank, 4);
  EXPECT_EQ(pmix->world_size, 6);
  EXPECT_EQ(pmix->source, "PMIX_RANK");
  auto alone = ReadRankEnv(Fake({}));
  EXPECT_EQ(alone->world_size, 1);
  auto stale = ReadRankEnv(Fake({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"RANK", "0"}}));
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.status().message().find("stale"), std::string::npos);
  EXPECT_FALSE(ReadRankEnv(Fake({{"RANK", "4"}, {"WORLD_SIZE", "4"}})).ok());
}

TEST(RankEnv, CarriesThePlannedLayoutOrDataParallel) {
  auto planned = ReadRankEnv(Fake({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"GPULAUNCH_LAYOUT", "tp=2,pp=2,dp=2,order=tp-pp-dp"}}));
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  EXPECT_TRUE(planned->layout_from_launcher);
  EXPECT_EQ(planned->layout.ToString(), "tp=2,pp=2,dp=2,order=tp-pp-dp");
  EXPECT_EQ(planned->layout.CoordsOf(planned->rank), (std::array<int, 3>{1, 0, 1}));
  // Without gpulaunch: one replica per rank, over the engine's world.
  auto plain = ReadRankEnv(Fake({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "3"}}));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->layout_from_launcher);
  EXPECT_EQ(plain->layout.ToString(), "tp=1,pp=1,dp=3,order=tp-pp-dp");
  // A layout that does not fit the world is a contract violation, named.
  auto wrong = ReadRankEnv(Fake({{"RANK", "0"}, {"WORLD_SIZE", "6"}, {"GPULAUNCH_LAYOUT", "tp=4"}}));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("GPULAUNCH_LAYOUT='tp=4'"), std::string::npos) << wrong.status().message();
}

}  // namespace
}  // namespace gpulaunch::rt
