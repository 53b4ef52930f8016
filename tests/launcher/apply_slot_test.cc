#include "launcher/shim/apply_slot.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <map>

namespace gpulaunch {
namespace {

EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

SlotTable Table() {
  SlotTable t;
  t.job_id = "gl-1";
  t.plan_hash = "h";
  t.master_addr = "127.0.0.1";
  t.master_port = 1234;
  for (int i = 0; i < 4; ++i) {
    RankSlot r;
    r.rank = i; r.host = i < 2 ? "here" : "there"; r.local_rank = i % 2; r.local_size = 2; r.node_rank = i / 2;
    r.bound = true; r.cpus = {i % 2}; r.mem_node = 0; r.leaf_switch = i < 2 ? "leaf1" : "";
    if (i == 1) { r.gpus = {3}; r.host_has_gpus = true; r.nic = "mlx5_1:1"; }
    t.ranks.push_back(r);
  }
  return t;
}

TEST(EngineIdentity, OpenMpiWinsOverStaleSlurm) {
  auto id = ReadEngineIdentity(FakeEnv({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                                        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"SLURM_PROCID", "0"},
                                        {"SLURM_LOCALID", "0"}, {"PMIX_RANK", "3"}}));
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->rank, 3);
  EXPECT_EQ(id->local_rank, 1);
  EXPECT_EQ(id->source, "OMPI_COMM_WORLD_*");
}

// An engine the shim does not know names its variables; they win over
// everything else in the environment (a stale Open MPI or Slurm rank too).
TEST(EngineIdentity, TheEngineNamedVariablesWin) {
  auto id = ReadEngineIdentity(FakeEnv({{"GPULAUNCH_ENGINE_IDENTITY", "PMI_RANK PMI_SIZE MPI_LOCALRANKID"},
                                        {"PMI_RANK", "5"}, {"PMI_SIZE", "8"}, {"MPI_LOCALRANKID", "1"},
                                        {"OMPI_COMM_WORLD_RANK", "0"}, {"SLURM_PROCID", "0"}}));
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_EQ(id->rank, 5);
  EXPECT_EQ(id->world_size, 8);
  EXPECT_EQ(id->local_rank, 1);
  EXPECT_EQ(id->source, "PMI_RANK/PMI_SIZE");
  // Without a local rank variable, none is checked.
  auto two = ReadEngineIdentity(FakeEnv({{"GPULAUNCH_ENGINE_IDENTITY", "PMI_RANK  PMI_SIZE"}, {"PMI_RANK", "2"},
                                         {"PMI_SIZE", "3"}, {"MPI_LOCALRANKID", "0"}}));
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->rank, 2);
  EXPECT_FALSE(two->local_rank.has_value());
  // A named variable that is missing is an error naming it, not a fallback.
  auto missing = ReadEngineIdentity(FakeEnv({{"GPULAUNCH_ENGINE_IDENTITY", "PMI_RANK PMI_SIZE"},
                                             {"OMPI_COMM_WORLD_RANK", "1"}}));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("PMI_RANK"), std::string::npos);
  EXPECT_FALSE(ReadEngineIdentity(FakeEnv({{"GPULAUNCH_ENGINE_IDENTITY", "ONE"}, {"ONE", "0"}})).ok());
}

TEST(EngineIdentity, FallsBackToPmixThenSlurm) {
  EXPECT_EQ(ReadEngineIdentity(FakeEnv({{"PMIX_RANK", "2"}, {"SLURM_PROCID", "1"}}))->rank, 2);
  auto s = ReadEngineIdentity(FakeEnv({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "1"}}));
  EXPECT_EQ(s->rank, 1);
  EXPECT_EQ(s->world_size, 4);
  EXPECT_FALSE(ReadEngineIdentity(FakeEnv({})).ok());
}

TEST(CheckIdentity, AcceptsTheRankThePlanExpects) {
  EngineIdentity id{2, 4, 0, "test"};
  EXPECT_TRUE(CheckIdentity(Table(), id, [](const std::string& h) { return h == "there"; }, "there").ok());
}

TEST(CheckIdentity, RefusesMismatches) {
  const auto here = [](const std::string& h) { return h == "here"; };
  const std::pair<EngineIdentity, const char*> cases[] = {
      {{7, 4, 0, "t"}, "plan has ranks 0-3"},
      {{0, 5, 0, "t"}, "started 5 ranks"},
      {{1, 4, 0, "t"}, "local rank 0 but the plan says 1"},
      {{2, 4, 0, "t"}, "plan puts it on 'there'"},
  };
  for (const auto& [id, want] : cases) {
    Status s = CheckIdentity(Table(), id, here, "here");
    ASSERT_FALSE(s.ok()) << want;
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  }
}

TEST(RankEnvironment, ContractVariables) {
  const auto env = RankEnvironment(Table(), 1);
  EXPECT_EQ(env.at("RANK"), "1");
  EXPECT_EQ(env.at("WORLD_SIZE"), "4");
  EXPECT_EQ(env.at("LOCAL_RANK"), "1");
  EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(env.at("NODE_RANK"), "0");
  EXPECT_EQ(env.at("MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(env.at("MASTER_PORT"), "1234");
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "3");
  EXPECT_EQ(env.at("CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
  EXPECT_EQ(env.at("UCX_NET_DEVICES"), "mlx5_1:1");
  EXPECT_EQ(env.at("NCCL_IB_HCA"), "=mlx5_1:1");
  EXPECT_EQ(env.at("GPULAUNCH_PLAN_HASH"), "h");
  EXPECT_EQ(env.at("GPULAUNCH_CPUSET"), "1");
  EXPECT_EQ(env.at("GPULAUNCH_JOB_ID"), "gl-1");
  EXPECT_EQ(env.count("GPULAUNCH_COORDS"), 1u);  // data parallel: tp=0,pp=0,dp=rank
  EXPECT_EQ(env.at("GPULAUNCH_COORDS"), "tp=0,pp=0,dp=1");
  SlotTable with_layout = Table();
  with_layout.layout = "tp=2,pp=2,dp=1,order=tp-pp-dp";
  EXPECT_EQ(RankEnvironment(with_layout, 3).at("GPULAUNCH_COORDS"), "tp=1,pp=1,dp=0");
  EXPECT_EQ(RankEnvironment(with_layout, 3).at("GPULAUNCH_LAYOUT"), "tp=2,pp=2,dp=1,order=tp-pp-dp");
  const auto cpu_rank = RankEnvironment(Table(), 2);
  EXPECT_EQ(cpu_rank.count("CUDA_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(cpu_rank.count("UCX_NET_DEVICES"), 0u);
  EXPECT_EQ(cpu_rank.at("NODE_RANK"), "1");
  // The plan's leaf switch, empty where the network tree does not name the host.
  EXPECT_EQ(env.at("GPULAUNCH_SWITCH"), "leaf1");
  EXPECT_EQ(cpu_rank.at("GPULAUNCH_SWITCH"), "");
}

TEST(CudaVisibleDevices, PlanIndicesOutsideSlurm) {
  EXPECT_EQ(*CudaVisibleDevices({1, 3}, FakeEnv({})), "1,3");
  // A user's own CUDA_VISIBLE_DEVICES without Slurm's GPU list: the plan's indices.
  EXPECT_EQ(*CudaVisibleDevices({1}, FakeEnv({{"CUDA_VISIBLE_DEVICES", "2,3"}})), "1");
}

TEST(CudaVisibleDevices, TranslatedThroughTheSlurmStep) {
  // Without device cgroups Slurm names the GPUs by index...
  EXPECT_EQ(*CudaVisibleDevices({3}, FakeEnv({{"SLURM_STEP_GPUS", "2,3"}, {"CUDA_VISIBLE_DEVICES", "2,3"}})), "3");
  // ...with ConstrainDevices by position among the step's GPUs.
  EXPECT_EQ(*CudaVisibleDevices({3}, FakeEnv({{"SLURM_STEP_GPUS", "2,3"}, {"CUDA_VISIBLE_DEVICES", "0,1"}})), "1");
  // The batch step reports SLURM_JOB_GPUS instead.
  EXPECT_EQ(*CudaVisibleDevices({2, 5}, FakeEnv({{"SLURM_JOB_GPUS", "2,5"}, {"CUDA_VISIBLE_DEVICES", "0,1"}})), "0,1");
  auto foreign = CudaVisibleDevices({0}, FakeEnv({{"SLURM_STEP_GPUS", "2,3"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}));
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("GPU 0, but this Slurm step holds GPUs 2,3"), std::string::npos);
}

TEST(ApplyBinding, BindsAndRefusesCpusThatDoNotExist) {
  cpu_set_t saved;
  sched_getaffinity(0, sizeof saved, &saved);
  RankSlot slot;
  slot.cpus = {0};
  slot.mem_node = 0;
  EXPECT_TRUE(ApplyBinding(slot).ok());
  cpu_set_t now;
  sched_getaffinity(0, sizeof now, &now);
  EXPECT_TRUE(CPU_ISSET(0, &now));
  EXPECT_EQ(CPU_COUNT(&now), 1);
  slot.cpus = {1000};
  Status s = ApplyBinding(slot);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot bind to CPUs 1000"), std::string::npos) << s.message();
  slot.cpus = {0};
  slot.mem_node = 77;
  EXPECT_NE(ApplyBinding(slot).message().find("memory node 77 does not exist"), std::string::npos);
  sched_setaffinity(0, sizeof saved, &saved);
}

}  // namespace
}  // namespace gpulaunch
