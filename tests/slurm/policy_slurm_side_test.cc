#include "slurm/policy_slurm_side.h"

#include <gtest/gtest.h>

#include "common/strings.h"

namespace gpulaunch {
namespace {

constexpr char kPolicy[] = R"({"format": "gpulaunch-policy/v1", "grace_s": 120,
 "teams": [{"name": "ml", "guarantee": 8, "nominal": 16, "borrow_limit": 8, "users": ["alice", "bob"]},
           {"name": "infra", "guarantee": 4, "nominal": 8, "lend_limit": 4}],
 "reservations": [{"name": "demo", "team": "ml", "nodes": 2, "start": "2026-12-01T10:00:00", "minutes": 90}]})";

PolicyFile Policy() {
  auto p = ParsePolicyFile(kPolicy, "policy.json");
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

TEST(SiteConf, ReadsKeysPartitionsAndIncludesWithWhereEachIs) {
  auto site = ParseSlurmConf(
      "# site\nClusterName=prod\npreempttype=preempt/qos   # comment\nNodeName=n[1-4] Gres=gpu:8\n"
      "PartitionName=batch Nodes=ALL Default=YES PriorityTier=3\nInclude /etc/slurm/extra.conf\n"
      "PreemptType=preempt/partition_prio\n",
      "slurm.conf");
  ASSERT_TRUE(site.ok()) << site.status().message();
  ASSERT_NE(site->Find("PreemptType"), nullptr);
  // Set twice: the last value counts, as in slurmctld.
  EXPECT_EQ(site->Find("PreemptType")->value, "preempt/partition_prio");
  EXPECT_EQ(site->Find("PreemptType")->where, "slurm.conf:7");
  EXPECT_EQ(site->Find("NodeName"), nullptr);
  ASSERT_NE(site->FindPartition("batch"), nullptr);
  EXPECT_EQ(site->FindPartition("batch")->fields.at("prioritytier"), "3");
  ASSERT_EQ(site->includes.size(), 1u);
  EXPECT_EQ(site->includes[0], "slurm.conf:6: Include /etc/slurm/extra.conf");
  EXPECT_EQ(ParseSlurmConf("ClusterName=a\njunk line\n", "s.conf").status().message(),
            "s.conf:2: not a slurm.conf line (Key=Value): junk line");
}

TEST(SiteConf, ReadsARunningSlurmctld) {
  auto site = ParseRunningSlurmConfig(
      "Configuration data as of 2026-12-05T10:00:00\nAccountingStorageTRES   = cpu,mem,gres/gpu\n"
      "JobSubmitPlugins        = (null)\nPreemptMode             = CANCEL\n",
      "PartitionName=debug AllowAccounts=ALL PriorityTier=1 PreemptMode=CANCEL\n");
  ASSERT_TRUE(site.ok()) << site.status().message();
  EXPECT_EQ(site->Find("accountingstoragetres")->value, "cpu,mem,gres/gpu");
  EXPECT_EQ(site->Find("JobSubmitPlugins"), nullptr);  // (null): not set
  ASSERT_NE(site->FindPartition("debug"), nullptr);
  EXPECT_FALSE(ParseRunningSlurmConfig("slurm_load_ctl_conf error\n", "").ok());
}

TEST(PolicySlurmSide, AsksTheSiteOnlyForWhatItLacksKeepingItsOwnValues) {
  auto site = ParseSlurmConf(
      "AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageEnforce=associations\n"
      "AccountingStorageTRES=license/matlab\nGresTypes=gpu\nPreemptType=preempt/partition_prio\n"
      "PreemptMode=CANCEL\nJobSubmitPlugins=job_submit/require_timelimit\nPriorityFlags=CALCULATE_RUNNING\n",
      "/etc/slurm/slurm.conf");
  ASSERT_TRUE(site.ok());
  const std::vector<SiteChange> changes = PolicySiteChanges(&*site);
  std::vector<std::string> keys;
  for (const SiteChange& c : changes) keys.push_back(c.key + "=" + c.wanted + " @" + c.where);
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "AccountingStorageEnforce=associations,limits,qos @/etc/slurm/slurm.conf:2",
                      "AccountingStorageTRES=license/matlab,gres/gpu @/etc/slurm/slurm.conf:3",
                      "PriorityFlags=CALCULATE_RUNNING,MAX_TRES @/etc/slurm/slurm.conf:8",
                      "JobSubmitPlugins=job_submit/require_timelimit,lua @/etc/slurm/slurm.conf:7"}));
  const std::string text = SiteChangesText(changes, site->origin);
  EXPECT_NE(text.find("/etc/slurm/slurm.conf:3: change AccountingStorageTRES=license/matlab to "
                      "AccountingStorageTRES=license/matlab,gres/gpu\n    (GPU limits"),
            std::string::npos)
      << text;
}

TEST(PolicySlurmSide, ASiteWithoutPreemptionOrAccountingIsToldEveryKey) {
  auto site = ParseSlurmConf("ClusterName=c\n", "slurm.conf");
  ASSERT_TRUE(site.ok());
  std::string keys;
  for (const SiteChange& c : PolicySiteChanges(&*site)) keys += c.key + "=" + c.wanted + (c.now.empty() ? "" : "!") + " ";
  EXPECT_EQ(keys,
            "AccountingStorageType=accounting_storage/slurmdbd AccountingStorageEnforce=associations,limits,qos "
            "AccountingStorageTRES=gres/gpu GresTypes=gpu PreemptType=preempt/partition_prio PreemptMode=REQUEUE "
            "PriorityFlags=MAX_TRES JobSubmitPlugins=lua ");
  // PreemptMode=OFF set explicitly is a change of the site's line.
  auto off = ParseSlurmConf("PreemptMode=OFF\n", "slurm.conf");
  ASSERT_TRUE(off.ok());
  bool saw = false;
  for (const SiteChange& c : PolicySiteChanges(&*off)) {
    if (c.key != "PreemptMode") continue;
    saw = true;
    EXPECT_EQ(c.where, "slurm.conf:1");
    EXPECT_EQ(c.now, "OFF");
  }
  EXPECT_TRUE(saw);
  // A site that has everything: nothing to change.
  auto full = ParseSlurmConf(
      "AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageEnforce=limits,qos,associations,safe\n"
      "AccountingStorageTRES=gres/gpu\nGresTypes=gpu,mps\nPreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\n"
      "JobSubmitPlugins=lua\nPriorityFlags=MAX_TRES\n",
      "slurm.conf");
  ASSERT_TRUE(full.ok());
  EXPECT_TRUE(PolicySiteChanges(&*full).empty());
  EXPECT_EQ(SiteChangesText({}, "slurm.conf"), "none: slurm.conf has every global setting the policy needs\n");
}

TEST(SiteConf, ReadsEachNodesShapeAsSlurmCountsIt) {
  auto site = ParseSlurmConf(
      "NodeName=DEFAULT Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 RealMemory=512000\n"
      "NodeName=g[1-8] Gres=gpu:a100:4(S:0),gpu:a100:4(S:1),mps:400\n"
      "NodeName=c[1-4] CPUs=128 RealMemory=256000\nNodeName=s1 Gres=gpu\n",
      "slurm.conf");
  ASSERT_TRUE(site.ok()) << site.status().message();
  ASSERT_EQ(site->nodes.size(), 3u);
  EXPECT_EQ(site->nodes[0].names, "g[1-8]");
  EXPECT_EQ(site->nodes[0].cpus, 64);  // 2 x 16 x 2, from DEFAULT
  EXPECT_EQ(site->nodes[0].gpus, 8);   // two typed entries; mps is not a GPU
  EXPECT_EQ(site->nodes[0].memory_mb, 512000);
  EXPECT_EQ(site->nodes[1].cpus, 128);
  EXPECT_EQ(site->nodes[1].gpus, 0);
  EXPECT_EQ(site->nodes[2].gpus, 1);
  EXPECT_EQ(site->nodes[2].where, "slurm.conf:4");
  // Absurd counts are held to a million, not overflowed.
  auto absurd = ParseSlurmConf(
      "NodeName=x Sockets=99999999999 CoresPerSocket=99999999 ThreadsPerCore=9999999 Gres=gpu:9999999999,gpu:99999999\n",
      "slurm.conf");
  ASSERT_TRUE(absurd.ok());
  EXPECT_EQ(absurd->nodes[0].cpus, 1000000);
  EXPECT_EQ(absurd->nodes[0].gpus, 1000000);
  auto running = ParseRunningSlurmConfig("ClusterName = c\n", "",
                                         "NodeName=node1 Arch=x86_64 CoresPerSocket=2 CPUAlloc=0 CPUTot=2 "
                                         "Gres=gpu:4(S:0) RealMemory=4000 Sockets=1 ThreadsPerCore=1\n");
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(running->nodes.size(), 1u);
  EXPECT_EQ(running->nodes[0].cpus, 2);
  EXPECT_EQ(running->nodes[0].gpus, 4);
  EXPECT_EQ(running->nodes[0].memory_mb, 4000);
}

// A tier counts a job as the largest share of a node it takes, in GPUs: the
// weights are the site's largest GPUs per CPU (and per GB where memory is
// consumable), so all of any node's cores count at least as its GPUs.
TEST(PolicySlurmSide, TiersCountCoresAndMemoryAsTheirShareOfANodesGpus) {
  auto site = ParseSlurmConf(
      "SelectTypeParameters=CR_Core_Memory\nNodeName=g[1-2] CPUs=64 RealMemory=1048576 Gres=gpu:8\n"
      "NodeName=h1 CPUs=16 RealMemory=262144 Gres=gpu:4\nNodeName=c1 CPUs=2\n",
      "slurm.conf");
  ASSERT_TRUE(site.ok());
  const TierBilling b = TierBillingFor(&*site);
  EXPECT_DOUBLE_EQ(b.cpu, 0.25);        // h1: 4 GPUs / 16 CPUs (g: 8 / 64)
  EXPECT_DOUBLE_EQ(b.mem_gb, 4.0 / 256);  // h1 again; c1 has no GPU
  EXPECT_EQ(b.Weights(), "CPU=0.25,Mem=0.015625G,GRES/gpu=1");
  EXPECT_EQ(b.GrpTres(16), "billing=16,gres/gpu=16");
  EXPECT_NE(SlurmPolicyConf(Policy(), b).find("QoS=gl-ml State=UP TRESBillingWeights=CPU=0.25,Mem=0.015625G,GRES/gpu=1\n"),
            std::string::npos);
  EXPECT_NE(SlurmPolicyApplyScript(Policy(), b).find("ensure_qos gl-ml billing=16,gres/gpu=16\n"), std::string::npos);
  // Memory not consumable (CR_Core): not counted. A third of a GPU a CPU:
  // rounded up, never under a node's share.
  auto core = ParseSlurmConf("SelectTypeParameters=CR_Core\nNodeName=n1 CPUs=3 RealMemory=4000 Gres=gpu:1\n", "s.conf");
  ASSERT_TRUE(core.ok());
  const TierBilling c = TierBillingFor(&*core);
  EXPECT_EQ(c.mem_gb, 0);
  EXPECT_EQ(c.Weights(), "CPU=0.333334,GRES/gpu=1");
  EXPECT_NE(c.basis.find("memory is not counted (SelectTypeParameters=CR_Core"), std::string::npos) << c.basis;
  // Nothing known of the nodes: GPUs only, said.
  EXPECT_EQ(TierBillingFor(nullptr).Weights(), "");
  EXPECT_EQ(TierBillingFor(nullptr).GrpTres(8), "gres/gpu=8");
}

TEST(PolicySlurmSide, TiersAreSlurmPartitionsHeldToTheQuotas) {
  const PolicyFile p = Policy();
  const std::string conf = SlurmPolicyConf(p, TierBilling{});
  // No global key: those are the site's (site-changes.txt).
  for (const std::string& line : Split(conf, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    EXPECT_TRUE(StartsWith(line, "PartitionName=gl-")) << line;
  }
  EXPECT_NE(conf.find("PartitionName=gl-ml Nodes=ALL PriorityTier=1 PreemptMode=OFF AllowAccounts=ml QoS=gl-ml "
                      "State=UP\n"),
            std::string::npos)
      << conf;
  // grace_s 120: GraceTime 90, since slurmctld's 30 s pass comes on top.
  EXPECT_NE(conf.find("PartitionName=gl-borrowed Nodes=ALL PriorityTier=0 PreemptMode=REQUEUE GraceTime=90 "
                      "AllowAccounts=ml,infra State=UP\n"),
            std::string::npos);
  EXPECT_EQ(SlurmGraceTime(10), 0);
  EXPECT_EQ(SlurmGraceTime(300), 270);
  EXPECT_EQ(SlurmMeanReclaimDelay(300), 285);
  EXPECT_EQ(SlurmMeanReclaimDelay(20), 2);
  EXPECT_EQ(SlurmMeanReclaimDelayForGraceTime(10), 25);
}

TEST(PolicySlurmSide, ApplyCreatesOrUpdatesEachPieceAndChecksTheClusterFirst) {
  const std::string apply = SlurmPolicyApplyScript(Policy(), TierBilling{});
  for (const char* line :
       {"ensure_qos gl-ml gres/gpu=16\n", "ensure_account ml gres/gpu=24\n", "ensure_account infra gres/gpu=8\n",
        "ensure_user bob ml\n",
        "ensure_partition gl-infra PriorityTier=1 PreemptMode=OFF AllowAccounts=infra QoS=gl-infra State=UP\n",
        "ensure_reservation gl-demo 2026-12-01T10:00:00 90 2 ml\n", "need AccountingStorageTRES gres/gpu\n"}) {
    EXPECT_NE(apply.find(line), std::string::npos) << line << "\n" << apply;
  }
  // The checks come before the first change; the QOS before the partitions
  // that name them (slurmctld refuses a partition with an unknown QOS).
  EXPECT_LT(apply.find("exit 1\nfi\n"), apply.find("ensure_qos gl-ml"));
  EXPECT_LT(apply.find("ensure_qos gl-infra"), apply.find("ensure_partition gl-ml"));
  // The policy's lines hold only names, numbers and Slurm's own syntax.
  const size_t calls = apply.find("need AccountingStorageType");
  for (const std::string& line : Split(apply.substr(calls), '\n')) {
    if (!StartsWith(line, "ensure_")) continue;
    EXPECT_EQ(line.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 _=/,.:-"),
              std::string::npos)
        << line;
  }
}

TEST(PolicySlurmSide, JobSubmitLuaKnowsEachTeamsPartition) {
  const std::string lua = SlurmPolicyJobSubmitLua(Policy());
  EXPECT_NE(lua.find("  [\"ml\"] = \"gl-ml\",\n  [\"infra\"] = \"gl-infra\",\n"), std::string::npos) << lua;
  EXPECT_NE(lua.find("job_desc.partition = own .. \",gl-borrowed\""), std::string::npos);
  EXPECT_NE(lua.find("function slurm_job_modify("), std::string::npos);
  // Slurm folds account names: the lookup folds them too, on submission and
  // on a move (sbatch -A ML, scontrol update Account=ML).
  EXPECT_NE(lua.find("return string.lower(account)"), std::string::npos);
  EXPECT_NE(lua.find("team_of(job_desc.account) or team_of(job_desc.default_account)"), std::string::npos);
  EXPECT_NE(lua.find("team_of(job_desc.account) or team_of(job_rec.account)"), std::string::npos);
}

}  // namespace
}  // namespace gpulaunch
