#include "launcher/slurm_policy_files.h"

#include "common/strings.h"
#include "launcher/base/process.h"
#include "slurm/policy_slurm_side.h"

namespace gpulaunch {
namespace {

// The running cluster's configuration, or nothing when no slurmctld answers
// within a few seconds (no Slurm here, or not reachable): the caller then
// lists every setting the policy needs.
std::optional<SiteConf> AskRunningSlurmctld() {
  const CapturedRun config = RunCaptured({"scontrol", "show", "config"}, EnvironmentWith({}), 10000);
  if (!config.Succeeded()) return std::nullopt;
  const CapturedRun partitions = RunCaptured({"scontrol", "-o", "show", "partition"}, EnvironmentWith({}), 10000);
  const CapturedRun nodes = RunCaptured({"scontrol", "-o", "show", "node"}, EnvironmentWith({}), 10000);
  auto site = ParseRunningSlurmConfig(config.out, partitions.Succeeded() ? partitions.out : "",
                                      nodes.Succeeded() ? nodes.out : "");
  if (!site.ok()) return std::nullopt;
  return *site;
}

// Where Slurm's behaviour differs from the policy file's words, said once
// per team rather than hidden.
std::string SlurmDifferences(const PolicyFile& p) {
  std::string s;
  for (const PolicyTeam& t : p.teams) {
    if (t.guarantee < t.nominal) {
      s += "note: team " + t.name + ": its guarantee " + std::to_string(t.guarantee) +
           " orders gpulaunch's own scheduler only; Slurm, like it, reclaims borrowed GPUs for any of the team's "
           "jobs within its nominal " + std::to_string(t.nominal) + ", and picks the victims itself\n";
    }
  }
  const int grace = SlurmGraceTime(p.grace_s);
  s += "note: grace_s " + std::to_string(p.grace_s) + ": gl-borrowed's GraceTime is " + std::to_string(grace) +
       " s, because slurmctld kills a preempted job at its time-limit pass (every " +
       std::to_string(kSlurmTimeLimitPassSeconds) + " s), up to " + std::to_string(kSlurmTimeLimitPassSeconds) +
       " s after GraceTime: an owner's GPUs come back within " +
       std::to_string(grace + kSlurmTimeLimitPassSeconds) + " s" +
       (grace > 0 ? "; owner jobs that arrive together and each need a victim may wait for a second such round, "
                    "up to " + std::to_string(2 * (grace + kSlurmTimeLimitPassSeconds)) +
                        " s (Slurm picks their victims once the first has started; grace_s <= " +
                        std::to_string(kSlurmTimeLimitPassSeconds) + " makes GraceTime 0, and reclaim takes seconds)"
                  : "") +
       "\n";
  return s;
}

}  // namespace

StatusOr<PolicyFiles> MakePolicyFiles(const PolicyFile& policy, const std::optional<std::string>& slurm_conf) {
  std::optional<SiteConf> site;
  if (slurm_conf) {
    GL_ASSIGN_OR_RETURN(std::string text, ReadTextFile(*slurm_conf, "slurm.conf"));
    GL_ASSIGN_OR_RETURN(SiteConf parsed, ParseSlurmConf(text, *slurm_conf));
    site = std::move(parsed);
  } else {
    site = AskRunningSlurmctld();
  }
  const std::vector<SiteChange> changes = PolicySiteChanges(site ? &*site : nullptr);
  std::string origin = site ? site->origin : "";
  std::string changes_text =
      site ? SiteChangesText(changes, origin)
           : "(no site configuration was read: give --slurm-conf FILE, or run where scontrol reaches slurmctld;\n"
             " these are every global setting the policy needs)\n" +
                 SiteChangesText(changes, "");
  if (site) {
    for (const std::string& include : site->includes) {
      changes_text += "note: " + include + ": not followed; check that the included file does not set these keys\n";
    }
  }
  const TierBilling billing = TierBillingFor(site ? &*site : nullptr);
  PolicyFiles out;
  out.files = {{"site-changes.txt", changes_text},
               {"apply.sh", SlurmPolicyApplyScript(policy, billing)},
               {"job_submit.lua", SlurmPolicyJobSubmitLua(policy)},
               {"slurm-policy.conf", SlurmPolicyConf(policy, billing)}};
  out.summary = (site ? "site configuration: " + origin + "\n" : std::string()) +
                (changes.empty() ? "" : "the site's slurm.conf must change before apply.sh (site-changes.txt):\n") +
                (changes.empty() ? std::string() : changes_text) + "tiers: " + billing.basis + "\n" +
                SlurmDifferences(policy);
  return out;
}

}  // namespace gpulaunch
