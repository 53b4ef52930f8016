#include "common/cluster_spec.h"

#include <gtest/gtest.h>

#include "common/cluster_json.h"
#include "common/synthetic_cluster.h"
#include "policies/pool/gpu_pool.h"

namespace gpulaunch {
namespace {

TEST(ClusterSpec, TheOldSwitchWordBuildsTheSameClusterWithANote) {
  for (const auto& [old_text, new_text] : std::vector<std::pair<std::string, std::string>>{
           {"switch:2 node:4 gpu:8 nic:4", "leaf:2 node:4 gpu:8 nic:4"},
           {"pod:2 switch:3 node:2 gpu:4", "pod:2 leaf:3 node:2 gpu:4"}}) {
    auto old_spec = ParseClusterSpec(old_text);
    auto new_spec = ParseClusterSpec(new_text);
    ASSERT_TRUE(old_spec.ok() && new_spec.ok()) << old_text;
    ASSERT_EQ(old_spec->notes.size(), 1u);
    EXPECT_NE(old_spec->notes[0].find("old name of 'leaf:'"), std::string::npos);
    EXPECT_TRUE(new_spec->notes.empty());
    EXPECT_EQ(DumpClusterJson(*MakeSyntheticCluster(*old_spec)), DumpClusterJson(*MakeSyntheticCluster(*new_spec)));
  }
  auto a = pool::GpuPool::FromSpec("switch:2 node:3 gpu:4");
  auto b = pool::GpuPool::FromSpec("leaf:2 node:3 gpu:4");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->hosts().size(), b->hosts().size());
  for (size_t i = 0; i < a->hosts().size(); ++i) {
    EXPECT_EQ(a->hosts()[i].name, b->hosts()[i].name);
    EXPECT_EQ(a->hosts()[i].leaf, b->hosts()[i].leaf);
  }
}

TEST(ClusterSpec, GroupsOfOtherHostsForPlanToo) {
  auto c = MakeSyntheticCluster("leaf:1 node:2 gpu:8 + leaf:2 node:1 gpu:4 nic:2");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->hosts.size(), 4u);
  EXPECT_EQ(c->hosts[0].name, "node0001");
  EXPECT_EQ(c->hosts[0].topology->gpus.size(), 8u);
  EXPECT_EQ(c->hosts[3].name, "node0004");
  EXPECT_EQ(c->hosts[3].topology->gpus.size(), 4u);
  EXPECT_EQ(c->hosts[3].topology->nics.size(), 2u);
  // Three leaves under one spine, numbered on across the groups.
  const std::string json = DumpClusterJson(*c);
  EXPECT_NE(json.find("leaf03"), std::string::npos) << json;
  EXPECT_NE(json.find("spine"), std::string::npos);
}

TEST(ClusterSpec, WhatACommandCannotModelIsRefusedByName) {
  auto plan = MakeSyntheticCluster("leaf:2 node:2 gpu:8 mem:80");
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("does not model mem:"), std::string::npos) << plan.status().message();
  auto sim = pool::GpuPool::FromSpec("leaf:2 node:2 gpu:8 nic:4");
  ASSERT_FALSE(sim.ok());
  EXPECT_NE(sim.status().message().find("gpulaunch sim does not model nic:"), std::string::npos);
  for (const char* bad : {"rack:2 node:2", "leaf:2 leaf:3 node:2", "leaf:x", "node", "leaf:1 + ", "node:100001"}) {
    EXPECT_FALSE(ParseClusterSpec(bad).ok()) << bad;
  }
  EXPECT_NE(ParseClusterSpec("leaf:2 leaf:3").status().message().find("leaf given twice"), std::string::npos);
  // sim keeps its own rules: node required, values from 1.
  EXPECT_FALSE(pool::GpuPool::FromSpec("leaf:2 gpu:8").ok());
  EXPECT_FALSE(pool::GpuPool::FromSpec("leaf:2 node:0").ok());
}

}  // namespace
}  // namespace gpulaunch
