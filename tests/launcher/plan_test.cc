#include "launcher/engine/mpirun_engine.h"
#include "launcher/engine/srun_engine.h"
#include "launcher/core/plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "policies/slot_placement.h"
#include "tests/testing/synthetic_host.h"

namespace gpulaunch {
namespace {

LaunchPlan Plan(int ranks, std::vector<std::string> program = {"./job"}, const std::string& layout = "") {
  LaunchOptions o;
  o.program = std::move(program);
  o.env = {{"FOO", "bar"}};
  auto p = PlaceBySlot(SlotJob(ranks, false), {ClusterHost{.name = "n1", .topology = testing::SyntheticHost(2, 4, 2, 2, 1)},
                                        ClusterHost{.name = "n2", .topology = testing::SyntheticHost(2, 4, 2, 2, 1)}});
  return MakeLaunchPlan(std::move(p).value(), ParseLayout(layout, ranks).value(), o, false);
}

TEST(Plan, RankfileNamesHostsAndLogicalCores) {
  const LaunchPlan plan = Plan(6);
  EXPECT_EQ(RenderRankfile(plan.placement),
            "rank 0=n1 slot=0-1\nrank 1=n1 slot=2-3\nrank 2=n1 slot=4-5\nrank 3=n1 slot=6-7\n"
            "rank 4=n2 slot=0-1\nrank 5=n2 slot=2-3\n");
}

TEST(Plan, HashNamesThePlacementAndLayoutNotTheProgram) {
  EXPECT_EQ(Plan(6).plan_hash, Plan(6).plan_hash);
  EXPECT_EQ(Plan(6).plan_hash.size(), 64u);
  EXPECT_NE(Plan(6).plan_hash, Plan(5).plan_hash);
  // The layout is part of the plan, however it is spelt.
  EXPECT_NE(Plan(4, {"./job"}, "tp=2").plan_hash, Plan(4, {"./job"}, "pp=2").plan_hash);
  EXPECT_EQ(Plan(4, {"./job"}, "tp=2,pp=2").plan_hash, Plan(4, {"./job"}, "pp=2,tp=2").plan_hash);
  EXPECT_EQ(Plan(4, {"./job"}, "").plan_hash, Plan(4, {"./job"}, "dp=4").plan_hash);
  // The program is the job's: `gpulaunch plan` has none and must hash alike.
  EXPECT_EQ(Plan(6).plan_hash, Plan(6, {"./other", "x"}).plan_hash);
  // One function for every command.
  const LaunchPlan plan = Plan(6);
  EXPECT_EQ(plan.plan_hash, PlanHash(plan.placement, plan.layout));
  // Each rank's row counts: a different NIC is a different plan.
  Placement changed = plan.placement;
  changed.ranks[3].nic = "mlx5_9";
  EXPECT_NE(PlanHash(changed, plan.layout), plan.plan_hash);
}

TEST(Plan, MpirunArgvPassesValuesThroughTheEnvironment) {
  const LaunchPlan plan = Plan(2);
  EngineSettings s;
  s.shim = "/opt/gl/bin/gpulaunch-shim";
  s.rankfile = "/tmp/x/rankfile";
  s.tag = true;
  s.allow_run_as_root = true;
  s.kill_grace_s = 7;
  const auto argv = BuildMpirunArgv(plan, s);
  const std::vector<std::string> want = {"mpirun", "-n", "2", "--rankfile", "/tmp/x/rankfile", "--allow-run-as-root",
                                         "--tag-output", "--mca", "odls_base_sigkill_timeout", "7",
                                         "-x", "GPULAUNCH_SLOT_TABLE", "-x", "GPULAUNCH_CONTROL_SECRET",
                                         "-x", "GPULAUNCH_KILL_GRACE_MS", "-x", "FOO",
                                         "/opt/gl/bin/gpulaunch-shim", "--", "./job"};
  EXPECT_EQ(argv, want);
}

TEST(Plan, LoopbackOnlyKeepsTcpOnLo) {
  EngineSettings s;
  s.loopback_only = true;
  unsetenv("OMPI_MCA_btl_tcp_if_include");
  unsetenv("OMPI_MCA_oob_tcp_if_include");
  const auto argv = BuildMpirunArgv(Plan(2), s);
  const std::string joined = [&] { std::string j; for (auto& a : argv) j += a + " "; return j; }();
  EXPECT_NE(joined.find("--mca oob_tcp_if_include lo"), std::string::npos);
  EXPECT_NE(joined.find("--mca btl_tcp_if_include lo"), std::string::npos);
}

// With every rank on this host, mpirun reads gpulaunch's topology from the
// job's folder, through a setting for the engine alone; never for other
// hosts (their daemons would get it too), nor over a user's own setting.
TEST(Plan, MpirunReadsTheLocalTopologyOnlyWhenEveryRankIsLocal) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("gl-plan-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  unsetenv("OMPI_MCA_hwloc_base_topo_file");
  EngineSettings s;
  s.local_topology_xml = "<topology>this host</topology>\n";
  s.loopback_only = true;
  auto job = MpirunEngine().PrepareJob(Plan(2), s, dir);
  ASSERT_TRUE(job.ok()) << job.status().message();
  const std::string file = (dir / "topology.xml").string();
  EXPECT_EQ(job->engine_only_env["OMPI_MCA_hwloc_base_topo_file"], file);
  std::ifstream in(file);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), *s.local_topology_xml);
  EXPECT_EQ(job->env.count("OMPI_MCA_hwloc_base_topo_file"), 0u) << "the job would see it";

  s.loopback_only = false;
  EXPECT_EQ(MpirunEngine().PrepareJob(Plan(2), s, dir)->engine_only_env.count("OMPI_MCA_hwloc_base_topo_file"), 0u);
  s.loopback_only = true;
  s.local_topology_xml.reset();
  EXPECT_TRUE(MpirunEngine().PrepareJob(Plan(2), s, dir)->engine_only_env.empty());
  s.local_topology_xml = "<topology/>";
  setenv("OMPI_MCA_hwloc_base_topo_file", "/users/own.xml", 1);
  EXPECT_TRUE(MpirunEngine().PrepareJob(Plan(2), s, dir)->engine_only_env.empty());
  unsetenv("OMPI_MCA_hwloc_base_topo_file");
  std::filesystem::remove_all(dir);
}

// Over ssh Open MPI's daemons get their hosts' own open-file limit: they
// start through the shim, which raises it for the most ranks any host has.
TEST(Plan, RemoteDaemonsStartThroughTheShimSizedForTheBusiestHost) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("gl-agent-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  unsetenv("OMPI_MCA_orte_launch_agent");
  EngineSettings s;
  s.shim = "/opt/gl/bin/gpulaunch-shim";
  const LaunchPlan plan = Plan(6);  // 4 ranks on n1, 2 on n2
  auto job = MpirunEngine().PrepareJob(plan, s, dir);
  ASSERT_TRUE(job.ok()) << job.status().message();
  EXPECT_EQ(job->engine_only_env["OMPI_MCA_orte_launch_agent"],
            "/opt/gl/bin/gpulaunch-shim --raise-open-files " + std::to_string(4 * 4 + 128) + " orted");
  EXPECT_EQ(job->env.count("OMPI_MCA_orte_launch_agent"), 0u) << "the job would see it";
  s.loopback_only = true;  // every rank here: no daemon
  EXPECT_EQ(MpirunEngine().PrepareJob(plan, s, dir)->engine_only_env.count("OMPI_MCA_orte_launch_agent"), 0u);
  s.loopback_only = false;
  for (const char* odd : {"/opt/my gl/gpulaunch-shim", "/opt/$HOME/gpulaunch-shim", "/opt/a;b/gpulaunch-shim"}) {
    s.shim = odd;  // Open MPI splits the agent at spaces and a remote shell reads it
    EXPECT_EQ(MpirunEngine().PrepareJob(plan, s, dir)->engine_only_env.count("OMPI_MCA_orte_launch_agent"), 0u) << odd;
  }
  s.shim = "/opt/gl/bin/gpulaunch-shim";
  setenv("OMPI_MCA_orte_launch_agent", "/users/own/orted", 1);  // the user's own wins
  EXPECT_EQ(MpirunEngine().PrepareJob(plan, s, dir)->engine_only_env.count("OMPI_MCA_orte_launch_agent"), 0u);
  unsetenv("OMPI_MCA_orte_launch_agent");
  std::filesystem::remove_all(dir);
}

TEST(Plan, OversubscribedHostsYieldWhenIdle) {
  unsetenv("OMPI_MCA_mpi_yield_when_idle");
  EngineSettings s;
  const auto joined = [](const std::vector<std::string>& v) { std::string j; for (auto& a : v) j += a + " "; return j; };
  EXPECT_EQ(joined(BuildMpirunArgv(Plan(6), s)).find("mpi_yield_when_idle"), std::string::npos);
  LaunchOptions o;
  o.program = {"./job"};
  auto over = PlaceBySlot(SlotJob(5, true), {ClusterHost{.name = "n1", .topology = testing::SyntheticHost(1, 2, 1, 0, 0), .slots = 2}});
  ASSERT_TRUE(over.ok());
  const LaunchPlan plan = MakeLaunchPlan(std::move(over).value(), ParseLayout("", 5).value(), o, true);
  EXPECT_TRUE(HostsOversubscribed(plan.placement));
  EXPECT_NE(joined(BuildMpirunArgv(plan, s)).find("--mca mpi_yield_when_idle 1"), std::string::npos);
}

TEST(Plan, SrunStepAndCpuMasks) {
  const LaunchPlan plan = Plan(6);  // n1: ranks 0-3, n2: ranks 4-5, same cores per local id
  EXPECT_EQ(RenderSlurmHostfile(plan.placement), "n1\nn1\nn1\nn1\nn2\nn2\n");
  // Local ids 0..3 own two cores of two PUs each: {0,1,8,9}, {2,3,10,11}, ...
  EXPECT_EQ(SrunCpuBind(plan.placement), "mask_cpu:0x303,0xc0c,0x3030,0xc0c0");
  EngineSettings s;
  s.shim = "/x/gpulaunch-shim";
  EXPECT_EQ(BuildSrunArgv(plan, s), (std::vector<std::string>{"srun", "--mpi=pmix", "-n", "6", "--distribution=arbitrary",
                                                               "--cpu-bind=mask_cpu:0x303,0xc0c,0x3030,0xc0c0",
                                                               "/x/gpulaunch-shim", "--", "./job"}));
  Placement uneven = plan.placement;
  uneven.ranks[4].cpus = {5};  // host n2's local 0 differs from n1's: no common mask list
  EXPECT_EQ(SrunCpuBind(uneven), "none");
}

TEST(Plan, TableShowsEveryRank) {
  const std::string table = RenderPlanTable(Plan(3));
  EXPECT_NE(table.find("plan: 3 ranks on 1 host (n1)"), std::string::npos) << table;
  EXPECT_NE(table.find("mlx5_0:1"), std::string::npos);
}

}  // namespace
}  // namespace gpulaunch
