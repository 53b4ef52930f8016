#include "common/host_spec.h"

#include <gtest/gtest.h>

#include <map>

namespace gpulaunch {
namespace {

HostSpec H(const char* name, std::optional<int> slots, std::optional<int> max = std::nullopt) {
  return HostSpec{name, slots, max};
}

TEST(HostArgument, MpirunForms) {
  EXPECT_EQ(*ParseHostArgument("a:2,b:2"), (std::vector<HostSpec>{H("a", 2), H("b", 2)}));
  EXPECT_EQ(*ParseHostArgument("a"), (std::vector<HostSpec>{H("a", 1)}));  // one slot, as mpirun
  EXPECT_EQ(*ParseHostArgument("node[1-2]:4"), (std::vector<HostSpec>{H("node1", 4), H("node2", 4)}));
  EXPECT_EQ(*ParseHostArgument("a:1,a:2"), (std::vector<HostSpec>{H("a", 3)}));  // merged
}

TEST(HostArgument, BadInput) {
  for (const char* bad : {"", "a:0", "a:x", "a:-1", "node[1-", "a:2:3"}) {
    auto got = ParseHostArgument(bad);
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(Hostfile, AllFormsCommentsAndBlankLines) {
  const char* text =
      "# cluster\n"
      "\n"
      "alpha slots=4 max_slots=8\n"
      "beta:2   # hydra form\n"
      "gamma\n"
      "node[01-02] slots=2\n"
      "alpha\n";  // one more slot, as in Open MPI
  auto got = ParseHostfileText(text, "hosts");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (std::vector<HostSpec>{H("alpha", 5, 8), H("beta", 2), H("gamma", std::nullopt), H("node01", 2),
                                         H("node02", 2)}));
}

TEST(Hostfile, ErrorsNameFileAndLine) {
  const std::pair<const char*, const char*> cases[] = {
      {"a slots=2\nb slot=4\n", "hosts:2: unknown word 'slot=4'"},
      {"a slots=zero\n", "hosts:1: slots 'zero'"},
      {"\n\na slots=4 max_slots=2\n", "hosts:3: max_slots=2 is below slots=4"},
      {"a:2 slots=3\n", "hosts:1: slots given twice"},
      {"a slots=2 count=3\n", "hosts:1: 'count' given twice on one line"},
      {"a slots=2\na slots=1\n", "hosts:2: 'a' already appears on line 1"},
      {"a\na slots=1\n", "hosts:2: 'a' already appears on line 1"},
      {"node[1-\n", "hosts:1: malformed hostlist"},
      {"# nothing\n\n", "no hosts"},
  };
  for (const auto& [text, want] : cases) {
    auto got = ParseHostfileText(text, "hosts");
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_NE(got.status().message().find(want), std::string::npos) << got.status().message();
  }
}

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(SlurmAllocation, NodesAndTasksPerNode) {
  auto h = HostsFromSlurmAllocation(Env({{"SLURM_JOB_NODELIST", "node[01-03],gpu7"}, {"SLURM_TASKS_PER_NODE", "2(x3),4"}}));
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(*h, (std::vector<HostSpec>{H("node01", 2), H("node02", 2), H("node03", 2), H("gpu7", 4)}));
  EXPECT_EQ(HostsFromSlurmAllocation(Env({{"SLURM_NODELIST", "a,b"}}))->size(), 2u);
  EXPECT_TRUE(HostsFromSlurmAllocation(Env({}))->empty());
  EXPECT_FALSE(HostsFromSlurmAllocation(Env({{"SLURM_JOB_NODELIST", "n[1-2]"}, {"SLURM_TASKS_PER_NODE", "2(x3)"}})).ok());
  EXPECT_FALSE(HostsFromSlurmAllocation(Env({{"SLURM_JOB_NODELIST", "n[1-"}})).ok());
}

TEST(Hostfile, AtMostTheHostLimitHoweverManyLinesNameThem) {
  std::string text;
  for (int line = 0; line < 3; ++line) text += "r" + std::to_string(line) + "n[1-30000]\n";
  auto many = ParseHostfileText(text, "hosts");
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("hosts:3: more than 65536 distinct hosts"), std::string::npos)
      << many.status().message();
  // Repeated names merge and do not count again.
  auto same = ParseHostfileText("n[1-30000]\nn[1-30000]\nn[1-30000]\n", "hosts");
  ASSERT_TRUE(same.ok()) << same.status().message();
  EXPECT_EQ(same->size(), 30000u);
  EXPECT_FALSE(ParseHostArgument("a[1-40000],b[1-40000]").ok());
}

TEST(Hostfile, MissingFileIsNotFound) {
  auto got = ReadHostfile("/nonexistent/hosts");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_NE(got.status().message().find("/nonexistent/hosts"), std::string::npos);
}

}  // namespace
}  // namespace gpulaunch
