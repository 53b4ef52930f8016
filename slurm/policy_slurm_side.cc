#include "slurm/policy_slurm_side.h"

#include <algorithm>

#include "common/strings.h"

namespace gpulaunch {
namespace {

// How the site's value of a key is judged.
enum class Judge {
  kHoldsAll,  // a comma list holding every one of `items` (the site's other items kept)
  kOneOf,     // exactly one of `items`
  kNotOff,    // anything but OFF (asks for REQUEUE)
};

// A key the policy needs and how to judge the site's value of it.
struct Need {
  const char* key;
  const char* unset_means;  // the value slurmctld takes when the key is absent
  Judge judge;
  std::vector<std::string> items;
  const char* why;
};

const std::vector<Need>& Needs() {
  static const std::vector<Need> needs = {
      {"AccountingStorageType", "accounting_storage/none", Judge::kOneOf, {"accounting_storage/slurmdbd"},
       "the teams' GPU limits (account and partition QOS) live in slurmdbd; also set AccountingStorageHost to "
       "slurmdbd's host"},
      {"AccountingStorageEnforce", "", Judge::kHoldsAll, {"associations", "limits", "qos"},
       "without limits Slurm records GrpTRES but does not hold jobs to it, and without qos a job may name a QOS "
       "its account was not given"},
      {"AccountingStorageTRES", "", Judge::kHoldsAll, {"gres/gpu"},
       "GPU limits (GrpTRES=gres/gpu=N) need GPUs tracked; sacctmgr refuses them otherwise (\"no TRES known by "
       "type gres/gpu\"); needs a slurmctld restart"},
      {"GresTypes", "", Judge::kHoldsAll, {"gpu"}, "the nodes' GPUs are gres/gpu"},
      {"PreemptType", "preempt/none", Judge::kOneOf, {"preempt/partition_prio"},
       "a job in a team's partition (PriorityTier 1) preempts borrowed jobs (gl-borrowed, PriorityTier 0); needs a "
       "slurmctld restart"},
      {"PreemptMode", "OFF", Judge::kNotOff, {},
       "preemption is off while the global mode is OFF (the policy's partitions set their own mode); a site "
       "partition without PreemptMode of its own then becomes preemptible by a partition of higher PriorityTier "
       "on the same nodes"},
      {"PriorityFlags", "", Judge::kHoldsAll, {"MAX_TRES"},
       "a job in a team's tier counts as the largest share of a node it takes (GPUs, cores or memory: the "
       "partition's TRESBillingWeights), not their sum; the site's other flags are kept"},
      {"JobSubmitPlugins", "", Judge::kHoldsAll, {"lua"},
       "job_submit.lua (installed beside slurm.conf) sends each team's jobs to its partitions and refuses others"},
  };
  return needs;
}


bool Satisfies(const Need& need, const std::string& value) {
  switch (need.judge) {
    case Judge::kNotOff: return !value.empty() && AsciiLower(value) != "off";
    case Judge::kOneOf:
      return std::any_of(need.items.begin(), need.items.end(),
                         [&](const std::string& v) { return AsciiLower(v) == AsciiLower(value); });
    case Judge::kHoldsAll:
      return std::all_of(need.items.begin(), need.items.end(), [&](const std::string& item) {
        // Plugins are named with or without their type ("lua", "job_submit/lua").
        return ListHolds(value, item) || ListHolds(value, "job_submit/" + item);
      });
  }
  return false;
}

// The value to ask for: the site's list with what is missing appended (its
// own items kept), or the one value wanted.
std::string Wanted(const Need& need, const std::string& value) {
  if (need.judge == Judge::kNotOff) return "REQUEUE";
  if (need.judge == Judge::kOneOf) return need.items.front();
  std::string out = value;
  for (const std::string& item : need.items) {
    if (ListHolds(value, item) || ListHolds(value, "job_submit/" + item)) continue;
    out += (out.empty() ? "" : ",") + item;
  }
  return out;
}

std::string Teams(const PolicyFile& p) {
  std::string s;
  for (const PolicyTeam& t : p.teams) s += (s.empty() ? "" : ",") + t.name;
  return s;
}

std::string TeamPartition(const PolicyTeam& t) { return "PartitionName=gl-" + t.name; }

std::string TeamPartitionFields(const PolicyTeam& t, const TierBilling& billing) {
  const std::string weights = billing.Weights();
  return "PriorityTier=1 PreemptMode=OFF AllowAccounts=" + t.name + " QoS=gl-" + t.name + " State=UP" +
         (weights.empty() ? "" : " TRESBillingWeights=" + weights);
}


std::string BorrowedPartitionFields(const PolicyFile& p) {
  return "PriorityTier=0 PreemptMode=REQUEUE GraceTime=" + std::to_string(SlurmGraceTime(p.grace_s)) +
         " AllowAccounts=" + Teams(p) + " State=UP";
}

// The helpers apply.sh runs: each compares what slurmdbd or slurmctld holds
// with what the policy wants, and creates, updates or leaves it, saying
// which. Arguments are names and numbers the policy parser checked.
constexpr char kApplyHelpers[] = R"SH(
say() { echo "apply.sh: $*"; }
config=$(scontrol show config) || { echo "apply.sh: scontrol show config failed: is slurmctld up, and SLURM_CONF right?" >&2; exit 1; }
key() { printf '%s\n' "$config" | sed -n "s/^$1 *= *//p" | head -n 1; }
missing=""
need() {  # KEY ITEM...: the running value must hold every ITEM
  v=$(key "$1"); k=$1; shift
  [ "$v" != "(null)" ] || v=""
  for item in "$@"; do
    case ",$v," in *",$item,"*|*",job_submit/$item,"*) ;; *) missing="$missing
  $k = ${v:-(unset)}: needs $item" ;; esac
  done
}
cluster=$(key ClusterName)
ensure_qos() {  # NAME GRPTRES
  cur=$(sacctmgr -n -P show qos where name="$1" format=Name,GrpTRES)
  if [ -z "$cur" ]; then
    sacctmgr -i add qos "$1" GrpTRES="$2" > /dev/null; say "created QOS $1 GrpTRES=$2"
  elif [ "$cur" != "$1|$2" ]; then
    sacctmgr -i modify qos where name="$1" set GrpTRES="$2" > /dev/null; say "updated QOS $1 GrpTRES=$2 (was ${cur#*|})"
  else say "unchanged QOS $1"; fi
}
ensure_account() {  # NAME GRPTRES
  cur=$(sacctmgr -n -P show assoc where account="$1" cluster="$cluster" format=User,GrpTRES | sed -n 's/^|//p' | head -n 1)
  if [ -z "$(sacctmgr -n -P show account where name="$1" format=Account)" ]; then
    sacctmgr -i add account "$1" Cluster="$cluster" Description="gpulaunch team $1" GrpTRES="$2" > /dev/null
    say "created account $1 GrpTRES=$2"
  elif [ "$cur" != "$2" ]; then
    sacctmgr -i modify account where name="$1" cluster="$cluster" set GrpTRES="$2" > /dev/null
    say "updated account $1 GrpTRES=$2 (was ${cur:-none})"
  else say "unchanged account $1"; fi
}
ensure_user() {  # USER ACCOUNT
  if [ -n "$(sacctmgr -n -P show assoc where user="$1" account="$2" cluster="$cluster" format=User)" ]; then
    say "unchanged user $1 in $2"
  elif [ -z "$(sacctmgr -n -P show user where name="$1" format=User)" ]; then
    sacctmgr -i add user "$1" Account="$2" DefaultAccount="$2" Cluster="$cluster" > /dev/null; say "created user $1 in $2"
  else
    sacctmgr -i add user "$1" Account="$2" Cluster="$cluster" > /dev/null
    say "added user $1 to $2; their default account stays $(sacctmgr -n -P show user where name="$1" format=DefaultAccount):" \
        "jobs that name no account run there, outside the policy (sacctmgr modify user $1 set DefaultAccount=$2)"
  fi
}
ensure_partition() {  # NAME FIELD=VALUE... (as scontrol -o shows them)
  name=$1; shift
  if cur=$(scontrol -o show partition "$name" 2> /dev/null); then
    diff=""
    for f in "$@"; do case " $cur " in *" $f "*) ;; *) diff="$diff $f" ;; esac; done
    if [ -z "$diff" ]; then say "unchanged partition $name"
    else
      # shellcheck disable=SC2086 # the fields are words the policy parser checked
      scontrol update PartitionName="$name" $diff; say "updated partition $name:$diff"
    fi
  else
    scontrol create PartitionName="$name" Nodes=ALL "$@"; say "created partition $name"
  fi
}
ensure_reservation() {  # NAME START MINUTES NODES ACCOUNT
  if cur=$(scontrol -o show reservation "$1" 2> /dev/null); then
    case "$cur" in
      *Flags=*MAGNETIC*) say "unchanged reservation $1 (it exists: scontrol update ReservationName=$1 changes it)" ;;
      *) scontrol update ReservationName="$1" Flags=MAGNETIC > /dev/null; say "updated reservation $1: Flags=MAGNETIC" ;;
    esac
  else
    # A window that has passed is not created again in the past; one that
    # has begun is created from now for what is left of it.
    start=$2 minutes=$3
    if [ "$start" != now ] && begin=$(date -d "$start" +%s 2> /dev/null); then
      now=$(date +%s) end=$((begin + minutes * 60))
      if [ "$end" -le "$now" ]; then
        say "skipped reservation $1: its window ($2, $3 min) has passed; remove it from the policy"
        return 0
      elif [ "$begin" -lt "$now" ]; then
        start=now minutes=$(( (end - now + 59) / 60 ))
        say "reservation $1 began at $2: created from now for the $minutes min left of its window"
      fi
    fi
    # MAGNETIC: the team's jobs use it without naming it.
    scontrol create reservation ReservationName="$1" StartTime="$start" Duration="$minutes" NodeCnt="$4" \
      Accounts="$5" Flags=MAGNETIC > /dev/null
    say "created reservation $1"
  fi
}
remove_stale_teams() {  # TEAM...: the team partitions (and their QOS) of teams the policy no longer names
  for name in $(scontrol -o show partition | sed -n 's/^PartitionName=\(gl-[^ ]*\) .*/\1/p'); do
    [ "$name" != gl-borrowed ] || continue
    case " $* " in *" ${name#gl-} "*) continue ;; esac
    # Only a partition as this script makes them: its own account and QOS.
    line=$(scontrol -o show partition "$name")
    case "$line" in *" AllowAccounts=${name#gl-} "*" QoS=$name "*) ;; *) continue ;; esac
    if [ -n "$(squeue -h -p "$name" -o %i)" ]; then
      say "kept partition $name of a team the policy no longer names: it has jobs; run again once they ended"
      continue
    fi
    scontrol delete PartitionName="$name"; say "deleted partition $name (the policy no longer names team ${name#gl-})"
    if [ -n "$(sacctmgr -n -P show qos where name="$name" format=Name)" ]; then
      sacctmgr -i delete qos "$name" > /dev/null; say "deleted QOS $name"
    fi
    say "account ${name#gl-} is kept (its users and job history): sacctmgr delete account ${name#gl-} removes it"
  done
}
)SH";

}  // namespace

int SlurmGraceTime(int grace_s) { return std::max(0, grace_s - kSlurmTimeLimitPassSeconds); }

int SlurmMeanReclaimDelayForGraceTime(int grace_time) {
  return grace_time <= 0 ? 2 : grace_time + kSlurmTimeLimitPassSeconds / 2;
}

int SlurmMeanReclaimDelay(int grace_s) { return SlurmMeanReclaimDelayForGraceTime(SlurmGraceTime(grace_s)); }

std::vector<SiteChange> PolicySiteChanges(const SiteConf* site) {
  std::vector<SiteChange> changes;
  for (const Need& need : Needs()) {
    const SiteConfValue* set = site ? site->Find(need.key) : nullptr;
    const std::string value = set ? set->value : need.unset_means;
    if (site && Satisfies(need, value)) continue;
    changes.push_back(SiteChange{need.key, set ? set->value : "", set ? set->where : "", Wanted(need, value), need.why});
  }
  return changes;
}

std::string SiteChangesText(const std::vector<SiteChange>& changes, const std::string& origin) {
  if (changes.empty()) return "none: " + origin + " has every global setting the policy needs\n";
  std::string s;
  for (const SiteChange& c : changes) {
    s += c.now.empty() ? "add " + c.key + "=" + c.wanted
                       : c.where + ": change " + c.key + "=" + c.now + " to " + c.key + "=" + c.wanted;
    s += "\n    (" + c.why + ")\n";
  }
  return s;
}

std::string SlurmPolicyConf(const PolicyFile& p, const TierBilling& billing) {
  std::string s =
      "# gpulaunch policy: per team a partition whose jobs are never preempted, held by its partition QOS to the\n"
      "# team's nominal GPUs, and gl-borrowed for what goes above nominal, requeued when a team's partition needs\n"
      "# the GPUs (after GraceTime + up to 30 s). Include this file only after apply.sh ran: slurmctld exits at\n"
      "# start when a partition names a QOS that slurmdbd does not have (apply.sh creates them).\n";
  for (const PolicyTeam& t : p.teams) s += TeamPartition(t) + " Nodes=ALL " + TeamPartitionFields(t, billing) + "\n";
  s += "PartitionName=gl-borrowed Nodes=ALL " + BorrowedPartitionFields(p) + "\n";
  return s;
}

std::string SlurmPolicyJobSubmitLua(const PolicyFile& p) {
  std::string teams;
  for (const PolicyTeam& t : p.teams) teams += "  [\"" + t.name + "\"] = \"gl-" + t.name + "\",\n";
  // Slurm folds account names to lower case (sbatch -A ML runs as account
  // ml), so the account is folded before the lookup; partition names are
  // compared exactly, as Slurm compares them, and anything but the team's
  // two is refused. 2000 is ESLURM_INVALID_PARTITION_NAME: scontrol update
  // prints it ("Invalid partition name specified"), where 22.05 shows no
  // log_user text from job_modify and slurm.ERROR says "Unspecified error".
  return "-- Written by gpulaunch slurm-config --policy. Install it as job_submit.lua beside slurm.conf, with\n"
         "-- JobSubmitPlugins=lua. A job of a policy team (its account, or its user's default account, in any\n"
         "-- spelling: Slurm folds account names to lower case) that names no partition gets its team's partition\n"
         "-- and gl-borrowed: Slurm starts it in the first where it fits, the team's own while the team is within\n"
         "-- its nominal GPUs. A job of a team that names any other partition is refused, on submission and when a\n"
         "-- job is moved (to another partition, or to a team's account), so no team's job runs where the pool\n"
         "-- cannot preempt it. Jobs of other accounts pass unchanged.\n"
         "local team_partition = {\n" +
         teams +
         "}\n"
         "\n"
         "local INVALID_PARTITION = 2000  -- ESLURM_INVALID_PARTITION_NAME\n"
         "\n"
         "local function team_of(account)\n"
         "  if account == nil or account == \"\" then return nil end\n"
         "  return string.lower(account)\n"
         "end\n"
         "\n"
         "-- The partitions a team's job may name: its own and gl-borrowed, compared exactly.\n"
         "local function refusal(team, own, partitions)\n"
         "  for p in string.gmatch(partitions, \"[^,]+\") do\n"
         "    if p ~= own and p ~= \"gl-borrowed\" then\n"
         "      return string.format(\"gpulaunch policy: team %s's jobs run in %s or gl-borrowed, not in %s\", team, own, p)\n"
         "    end\n"
         "  end\n"
         "  return nil\n"
         "end\n"
         "\n"
         "function slurm_job_submit(job_desc, part_list, submit_uid)\n"
         "  local team = team_of(job_desc.account) or team_of(job_desc.default_account)\n"
         "  local own = team and team_partition[team]\n"
         "  if own == nil then return slurm.SUCCESS end\n"
         "  if job_desc.partition == nil or job_desc.partition == \"\" then\n"
         "    job_desc.partition = own .. \",gl-borrowed\"\n"
         "    return slurm.SUCCESS\n"
         "  end\n"
         "  local why = refusal(team, own, job_desc.partition)\n"
         "  if why == nil then return slurm.SUCCESS end\n"
         "  slurm.log_user(\"%s\", why)\n"
         "  return INVALID_PARTITION\n"
         "end\n"
         "\n"
         "function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)\n"
         "  if job_desc.partition == nil and job_desc.account == nil then return slurm.SUCCESS end\n"
         "  local team = team_of(job_desc.account) or team_of(job_rec.account)\n"
         "  local own = team and team_partition[team]\n"
         "  if own == nil then return slurm.SUCCESS end\n"
         "  local why = refusal(team, own, job_desc.partition or job_rec.partition or \"\")\n"
         "  if why == nil then return slurm.SUCCESS end\n"
         "  slurm.log_info(\"%s (job %u, uid %u)\", why, job_rec.job_id, modify_uid)\n"
         "  return INVALID_PARTITION\n"
         "end\n"
         "\n"
         "return slurm.SUCCESS\n";
}

std::string SlurmPolicyApplyScript(const PolicyFile& p, const TierBilling& billing) {
  std::string s =
      "#!/bin/sh\n"
      "# Written by gpulaunch slurm-config --policy: the policy's accounts, partition QOS, partitions and\n"
      "# reservations on a running cluster with accounting (sacctmgr, scontrol; no restart). Idempotent: it\n"
      "# creates what is missing, updates what differs, and a second run changes nothing. It stops before any\n"
      "# change while slurmctld's configuration lacks what the policy needs (site-changes.txt says what).\n"
      "set -eu\n";
  s += kApplyHelpers;
  s += "need AccountingStorageType accounting_storage/slurmdbd\n"
       "need AccountingStorageEnforce limits qos\n"
       "need AccountingStorageTRES gres/gpu\n"
       "need PreemptType preempt/partition_prio\n"
       "need JobSubmitPlugins lua\n"
       "# slurmctld shows PriorityFlags only under priority/multifactor.\n"
       "if [ \"$(key PriorityType)\" = priority/multifactor ]; then need PriorityFlags MAX_TRES\n"
       "else say \"note: PriorityFlags is not shown under $(key PriorityType): slurm.conf must hold "
       "PriorityFlags=MAX_TRES (site-changes.txt)\"; fi\n"
       "if [ -n \"$missing\" ]; then\n"
       "  echo \"apply.sh: slurmctld's configuration lacks what the policy needs; nothing was changed:$missing\" >&2\n"
       "  echo \"apply.sh: see site-changes.txt beside this script; GPU tracking and PreemptType need a slurmctld "
       "restart\" >&2\n"
       "  exit 1\n"
       "fi\n";
  for (const PolicyTeam& t : p.teams) {
    s += "ensure_qos gl-" + t.name + " " + billing.GrpTres(t.nominal) + "\n";
    s += "ensure_account " + t.name + " gres/gpu=" + std::to_string(t.nominal + t.borrow_limit) + "\n";
    for (const std::string& u : t.users) s += "ensure_user " + u + " " + t.name + "\n";
  }
  for (const PolicyTeam& t : p.teams) {
    s += "ensure_partition gl-" + t.name + " " + TeamPartitionFields(t, billing) + "\n";
  }
  s += "ensure_partition gl-borrowed " + BorrowedPartitionFields(p) + "\n";
  for (const PolicyReservation& r : p.reservations) {
    s += "ensure_reservation gl-" + r.name + " " + r.start + " " + std::to_string(r.minutes) + " " +
         std::to_string(r.nodes) + " " + r.team + "\n";
  }
  s += "remove_stale_teams";
  for (const PolicyTeam& t : p.teams) s += " " + t.name;
  return s + "\n";
}

}  // namespace gpulaunch
