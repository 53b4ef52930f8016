// The Slurm side of a gpulaunch policy file (slurm_policy.h), written by
// `gpulaunch slurm-config --policy FILE --out DIR`, so that Slurm itself
// enforces the quotas (docs/slurm.md says what each setting does and why):
//
//   per team T   partition gl-T (PriorityTier 1, never preempted,
//                AllowAccounts=T) whose partition QOS gl-T holds
//                GrpTRES=billing=<nominal>,gres/gpu=<nominal>: the team's
//                jobs there stay within its nominal GPUs, whatever QOS a
//                user asks for, and a job counts as the largest share of a
//                node it takes, in GPUs (TierBilling), so cores or memory
//                cannot keep other teams' GPUs idle;
//                account T with GrpTRES=gres/gpu=<nominal + borrow_limit>
//                over every partition; its users' associations.
//   gl-borrowed  PriorityTier 0, PreemptMode=REQUEUE, GraceTime from
//                grace_s (SlurmGraceTime), AllowAccounts=every team: the
//                jobs above a team's nominal, preempted when any tier-1 job
//                needs their GPUs.
//   job_submit.lua  a job of team T that names no partition gets
//                "gl-T,gl-borrowed" (Slurm starts it in the first where it
//                fits: gl-T while T is within nominal, else gl-borrowed); one
//                that names any other partition is refused, so no job of a
//                team runs where the pool cannot preempt it.
//
// Global keys of slurm.conf (accounting, preemption, the lua plugin) are the
// site's: PolicySiteChanges lists what the site's file must hold and what it
// holds now; nothing here sets them.
#pragma once

#include <string>
#include <vector>

#include "slurm/site_conf.h"
#include "slurm/slurm_policy.h"
#include "slurm/tier_billing.h"

namespace gpulaunch {

// slurmctld kills a preempted job at its periodic time-limit pass (every
// 30 s, compiled in), not at GraceTime: a victim dies between GraceTime and
// GraceTime + 30 s after the preemption. So GraceTime = grace_s - 30 (0 when
// grace_s <= 30) keeps reclaim within grace_s; the victim gets at least
// that long after its SIGTERM.
inline constexpr int kSlurmTimeLimitPassSeconds = 30;
int SlurmGraceTime(int grace_s);
// The mean seconds from a preemption to the owner's job starting, for the
// simulator's --reclaim-delay: GraceTime plus half a pass; with GraceTime 0
// the victim is requeued in the scheduling pass itself (measured 1.4-2.9 s
// on the CI cluster: 2).
int SlurmMeanReclaimDelay(int grace_s);
// The same from a partition's GraceTime (what a running cluster shows).
int SlurmMeanReclaimDelayForGraceTime(int grace_time);

// A global slurm.conf key the policy needs otherwise than the site has it.
struct SiteChange {
  std::string key;     // "AccountingStorageTRES"
  std::string now;     // the site's value; empty when the site does not set it
  std::string where;   // where the site sets it ("FILE:LINE"); empty when it does not
  std::string wanted;  // a value that serves both the site and the policy
  std::string why;
};

// What the site's configuration must change for the policy; `site` null:
// nothing known, so every key the policy needs is listed.
std::vector<SiteChange> PolicySiteChanges(const SiteConf* site);
// Lines for people: one change a paragraph, "none" when the list is empty.
std::string SiteChangesText(const std::vector<SiteChange>& changes, const std::string& origin);

std::string SlurmPolicyConf(const PolicyFile& policy, const TierBilling& billing);  // partition lines for slurm.conf
std::string SlurmPolicyJobSubmitLua(const PolicyFile& policy);                      // job_submit.lua
// apply.sh: idempotent sacctmgr + scontrol
std::string SlurmPolicyApplyScript(const PolicyFile& policy, const TierBilling& billing);

}  // namespace gpulaunch
