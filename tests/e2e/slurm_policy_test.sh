#!/usr/bin/env bash
# The pool's policy on the real 4-node Slurm cluster with accounting
# (.ci/rig/slurm-cluster-up.sh: MariaDB + slurmdbd, 16 fake GPUs): what
# `gpulaunch slurm-config --policy` writes is applied as a site admin would,
# and Slurm itself enforces it on sleep jobs of two Unix users this test
# creates (and removes, with every account, QOS, partition and reservation it
# made, and the cluster's slurm.conf as it was). Each check reads Slurm's own
# answer (squeue, sacct, sacctmgr, scontrol). Exits 77 (skipped, with the
# reason) without the cluster or without accounting. Usage: BIN_DIR
set -uo pipefail
BIN=$(cd "${1:?usage: slurm_policy_test.sh BIN_DIR}" && pwd) || exit 2
# shellcheck source=slurm_accounting_lib.sh
. "$(dirname "$0")/slurm_accounting_lib.sh"
need_cluster_with_accounting "slurm policy"
WORK=$(mktemp -d)
chmod 755 "$WORK"
TA=pta$$ TB=ptb$$ TC=ptc$$  # the teams (Slurm accounts; TC only for a while)
UA=gla$$ UB=glb$$            # one user each
. "$(dirname "$0")/test_lib.sh"
on1() { ip netns exec "${NSP}n1" env SLURM_CONF="$GL_SLURM_CLUSTER_CONF" "$@"; }
as() { local u=$1; shift; ip netns exec "${NSP}n1" runuser -u "$u" -- env SLURM_CONF="$GL_SLURM_CLUSTER_CONF" "$@"; }
submit() {  # USER SBATCH-ARGS...: the job id, or nothing when refused (the refusal in $WORK/refused)
  local u=$1; shift
  as "$u" sbatch --parsable -D /tmp -o /dev/null -e /dev/null "$@" --wrap 'sleep 600' 2> "$WORK/refused"
}
state_of() { on1 squeue -h -j "$1" -o '%T %P %r' 2>/dev/null; }
wait_for() {  # SECONDS JOB PATTERN: polls squeue until the job's "state partition reason" matches
  local end=$(( $(date +%s) + $1 ))
  while [ "$(date +%s)" -le "$end" ]; do
    state_of "$2" | grep -qE "$3" && return 0
    sleep 0.3
  done
  return 1
}
cp "$GL_SLURM_CLUSTER_CONF" "$WORK/slurm.conf.orig"
cleanup() {
  on1 scancel -u "$UA" 2> /dev/null; on1 scancel -u "$UB" 2> /dev/null
  sleep 1
  for r in $(on1 scontrol -o show reservation 2> /dev/null | grep -o "ReservationName=gl-[a-z0-9]*$$" | cut -d= -f2); do
    on1 scontrol delete ReservationName="$r"
  done
  for p in "gl-$TA" "gl-$TB" "gl-$TC" gl-borrowed; do on1 scontrol delete PartitionName="$p" 2> /dev/null; done
  cp "$WORK/slurm.conf.orig" "$GL_SLURM_CLUSTER_CONF"
  rm -f "$S/job_submit.lua"
  on1 scontrol reconfigure > /dev/null 2>&1
  on1 sacctmgr -i delete user "$UA" "$UB" > /dev/null 2>&1
  on1 sacctmgr -i delete user "$UA" where account="pto$$" > /dev/null 2>&1
  on1 sacctmgr -i delete account "$TA" "$TB" "$TC" "pto$$" > /dev/null 2>&1
  on1 sacctmgr -i delete qos "gl-$TA" "gl-$TB" "gl-$TC" > /dev/null 2>&1
  userdel "$UA" 2> /dev/null; userdel "$UB" 2> /dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
useradd -M -s /usr/sbin/nologin "$UA" && useradd -M -s /usr/sbin/nologin "$UB" || { echo "useradd failed"; exit 1; }

# Team A: nominal 8, borrow up to 4 more. Team B: nominal 8, no borrowing.
# grace_s 10: GraceTime 0, so a borrowed job is requeued at once.
policy() {  # RESERVATION-JSON
  cat > "$WORK/policy.json" <<JSON
{"format": "gpulaunch-policy/v1", "grace_s": 10,
 "teams": [{"name": "$TA", "guarantee": 8, "nominal": 8, "borrow_limit": 4, "users": ["$UA"]},
           {"name": "$TB", "guarantee": 8, "nominal": 8, "borrow_limit": 0, "users": ["$UB"]}],
 "reservations": [$1]}
JSON
}
policy "{\"name\": \"later$$\", \"team\": \"$TB\", \"nodes\": 1, \"start\": \"2030-01-01T10:00:00\", \"minutes\": 60}"
"$BIN/gpulaunch" slurm-config --synthetic "leaf:2 node:2" --out "$WORK/out" --policy "$WORK/policy.json" \
  --slurm-conf "$GL_SLURM_CLUSTER_CONF" > "$WORK/config.out" 2>&1
check "slurm-config --policy --slurm-conf: exit 0, apply.sh, job_submit.lua, slurm-policy.conf, site-changes.txt" \
  "$?:$(ls "$WORK/out" | grep -cxE 'apply.sh|job_submit.lua|slurm-policy.conf|site-changes.txt')" "0:4" ||
  cat "$WORK/config.out"
# The rig's slurm.conf has accounting, GPU TRES and partition_prio: it lacks
# only MAX_TRES billing and the lua plugin, and no key it sets is set again.
check "... the site must add PriorityFlags=MAX_TRES and JobSubmitPlugins=lua, nothing else" \
  "$(grep -E '^(add|.*: change) ' "$WORK/out/site-changes.txt" | tr '\n' ' ')" \
  "add PriorityFlags=MAX_TRES add JobSubmitPlugins=lua " ||
  cat "$WORK/out/site-changes.txt"
check "... slurm-policy.conf sets no global key" "$(grep -vE '^(#|PartitionName=)' "$WORK/out/slurm-policy.conf" | wc -l)" 0

on1 sh "$WORK/out/apply.sh" > "$WORK/apply0.out" 2>&1
check "apply.sh before the site's change: exit 1, saying what is missing, nothing changed" \
  "$?:$(grep -c 'JobSubmitPlugins = (unset): needs lua' "$WORK/apply0.out"):$(on1 sacctmgr -n -P show account where name="$TA" | wc -l)" \
  "1:1:0" || cat "$WORK/apply0.out"

# The admin's part: the two lines and the script beside slurm.conf.
printf 'PriorityFlags=MAX_TRES\nJobSubmitPlugins=lua\n' >> "$GL_SLURM_CLUSTER_CONF"
cp "$WORK/out/job_submit.lua" "$S/job_submit.lua"
on1 scontrol reconfigure
on1 sh "$WORK/out/apply.sh" > "$WORK/apply1.out" 2>&1
check "apply.sh: exit 0, creating 2 QOS, 2 accounts, 2 users, 3 partitions, 1 reservation" \
  "$?:$(grep -c 'apply.sh: created' "$WORK/apply1.out")" "0:10" || cat "$WORK/apply1.out"
snapshot() {
  on1 scontrol -o show partition | grep "^PartitionName=gl-"
  on1 scontrol -o show reservation | grep -o "ReservationName=gl-later$$ .*"
  on1 sacctmgr -n -P show qos format=Name,GrpTRES | grep "^gl-"
  on1 sacctmgr -n -P show assoc format=Account,User,GrpTRES,DefaultQOS,QOS | grep -E "^($TA|$TB)\|"
}
snapshot > "$WORK/state1"
on1 sh "$WORK/out/apply.sh" > "$WORK/apply2.out" 2>&1
check "a second apply.sh: exit 0, every line 'unchanged' (bar the note on PriorityFlags)" \
  "$?:$(grep -v 'apply.sh: note: PriorityFlags is not shown' "$WORK/apply2.out" | grep -vc 'apply.sh: unchanged')" "0:0" ||
  cat "$WORK/apply2.out"
snapshot > "$WORK/state2"
check "... and Slurm's partitions, reservation, QOS and associations are as before" \
  "$(cmp -s "$WORK/state1" "$WORK/state2" && echo same)" same || diff "$WORK/state1" "$WORK/state2"
check "... gl-$TA: never preempted, its QOS holds the team to 8 GPUs, a job billed as its share of a node" \
  "$(on1 scontrol -o show partition "gl-$TA" | grep -c "AllowAccounts=$TA .*QoS=gl-$TA .*PriorityTier=1 .*PreemptMode=OFF .*TRESBillingWeights=CPU=2,GRES/gpu=1"):$(on1 sacctmgr -n -P show qos where name="gl-$TA" format=GrpTRES)" \
  "1:billing=8,gres/gpu=8"
check "... account $TA: 12 GPUs in all (nominal 8 + borrow 4)" \
  "$(on1 sacctmgr -n -P show assoc where account="$TA" format=User,GrpTRES | grep '^|')" "|gres/gpu=12"
# Slurm keeps the partitions across a restart once slurm-policy.conf is in
# slurm.conf (after apply.sh: the QOS it names exist).
echo "Include $WORK/out/slurm-policy.conf" >> "$GL_SLURM_CLUSTER_CONF"
on1 scontrol reconfigure
check "slurm-policy.conf included: slurmctld still answers, apply.sh still all unchanged" \
  "$(on1 scontrol ping | grep -c UP):$(on1 sh "$WORK/out/apply.sh" 2>&1 | grep -v 'apply.sh: note:' | grep -vc 'apply.sh: unchanged')" "1:0"

# 1. A team alone fills the pool up to its limits: 8 GPUs in its own
#    partition, 4 borrowed, and a fourth job of 4 waits on the account's
#    limit while 4 GPUs sit idle.
# (sort orders the states: borrowed before the team's own partition.)
a1=$(submit "$UA" -N1 --gres=gpu:4); a2=$(submit "$UA" -N1 --gres=gpu:4)
a3=$(submit "$UA" -N1 --gres=gpu:4); a4=$(submit "$UA" -N1 --gres=gpu:4)
wait_for 30 "$a3" '^RUNNING' && wait_for 30 "$a4" '^PENDING .* AssocGrpGRES'
check "team A's jobs without a partition: 2 in gl-$TA, 1 in gl-borrowed, the 4th waits on AssocGrpGRES" \
  "$(for j in $a1 $a2 $a3 $a4; do state_of "$j"; done | LC_ALL=C sort | tr '\n' ';')" \
  "PENDING gl-$TA,gl-borrowed AssocGrpGRES;RUNNING gl-borrowed None;RUNNING gl-$TA None;RUNNING gl-$TA None;" ||
  on1 squeue
on1 scancel "$a4"

# 2. The guarantee against what a user of team A can type, swept: every
#    account (its own, the other team's, in any case: Slurm folds account
#    names), partition (the team's, the other team's, the site's, mixes, in
#    any case) and QOS spelling, submitted held (-H: nothing runs). Accepted
#    must be exactly the documented set: its own account or none, its own
#    tiers or none, its association's QOS (normal) or none; and an accepted
#    job must be recorded in account A and A's tiers.
up() { printf '%s' "$1" | tr '[:lower:]' '[:upper:]'; }
cap() { printf '%s%s' "$(up "${1:0:1}")" "${1:1}"; }
accounts=("" "$TA" "$(up "$TA")" "$(cap "$TA")" "$TB" "$(up "$TB")")
partitions=("" "gl-$TA" "GL-$(up "$TA")" "gl-borrowed" "GL-BORROWED" "gl-$TB" "Gl-$TB" urgent URGENT debug
            "gl-$TA,gl-borrowed" "gl-borrowed,gl-$TA" "gl-$TA,urgent" "gl-borrowed,debug" "gl-$TA,gl-$TB" "gl-$TA,Gl-$TA")
qoses=("" normal NORMAL "gl-$TA" "GL-$(up "$TA")" "gl-$TB")
wanted_account() { [ -z "$1" ] || [ "$(printf '%s' "$1" | tr '[:upper:]' '[:lower:]')" = "$TA" ]; }
wanted_partition() { case "$1" in "" | "gl-$TA" | gl-borrowed | "gl-$TA,gl-borrowed" | "gl-borrowed,gl-$TA") return 0 ;; esac; return 1; }
wanted_qos() { case "$1" in "" | normal | NORMAL) return 0 ;; esac; return 1; }
: > "$WORK/sweep"
for acct in "${accounts[@]}"; do
  for part in "${partitions[@]}"; do
    for qos in "${qoses[@]}"; do
      args=(-N1 --gres=gpu:1 -H)
      [ -n "$acct" ] && args+=(-A "$acct")
      [ -n "$part" ] && args+=(-p "$part")
      [ -n "$qos" ] && args+=(--qos "$qos")
      want=refused
      wanted_account "$acct" && wanted_partition "$part" && wanted_qos "$qos" && want=accepted
      j=$(submit "$UA" "${args[@]}")
      got=refused
      if [ -n "$j" ]; then
        rec=$(on1 squeue -h -j "$j" -o '%a %P %q')
        on1 scancel "$j"
        got=accepted
        case "$rec" in "$TA gl-$TA,gl-borrowed normal" | "$TA gl-$TA normal" | "$TA gl-borrowed normal" | \
                       "$TA gl-borrowed,gl-$TA normal") ;; *) got="accepted as $rec" ;; esac
      fi
      echo "-A '$acct' -p '$part' --qos '$qos': $got" >> "$WORK/sweep"
      [ "$got" = "$want" ] || echo "  sbatch -A '$acct' -p '$part' --qos '$qos': $got, documented: $want"
    done
  done
done
tried=$(( ${#accounts[@]} * ${#partitions[@]} * ${#qoses[@]} ))
check "team A's user, $tried spellings of account x partition x QOS: accepted exactly the documented 60, in A's tiers" \
  "$(grep -c ': accepted$' "$WORK/sweep"):$(grep -c ': refused$' "$WORK/sweep")" "60:$((tried - 60))"
check "... a refusal says why: the team's tiers, and Slurm's 'Invalid partition name specified'" \
  "$(submit "$UA" -N1 --gres=gpu:1 -H -A "$(up "$TA")" -p urgent; cat "$WORK/refused")" \
  "sbatch: error: gpulaunch policy: team $TA's jobs run in gl-$TA or gl-borrowed, not in urgent
sbatch: error: Batch job submission failed: Invalid partition name specified"
p1=$(submit "$UA" -N1 --gres=gpu:4 -p "gl-$TA")
wait_for 20 "$p1" "^PENDING gl-$TA QOSGrpBilling"
check "... its own partition alone, above nominal: waits on QOSGrpBilling (the partition QOS; billing is checked first)" \
  "$(state_of "$p1")" "PENDING gl-$TA QOSGrpBilling"
as "$UA" scontrol update JobId="$p1" Partition=urgent > "$WORK/move.out" 2>&1
check "... moving it to partition urgent is refused, saying so" \
  "$?:$(state_of "$p1" | cut -d' ' -f2):$(cat "$WORK/move.out")" "1:gl-$TA:Invalid partition name specified for job $p1"
on1 scancel "$p1"

# 3. The owner's jobs start after reclaim within the documented bound
#    (GraceTime 0 + slurmctld's 30 s pass): team B asks for its 8 GPUs while
#    A holds 12; B's second job needs A's borrowed GPUs.
t0=$(date +%s.%N)
b1=$(submit "$UB" -N1 --gres=gpu:4); b2=$(submit "$UB" -N1 --gres=gpu:4)
wait_for 40 "$b2" '^RUNNING'
t1=$(date +%s.%N)
reclaim=$(echo "$t1 - $t0" | bc)
echo "  team B's 8 GPUs running $reclaim s after submission"
check "team B (within nominal): both jobs run in gl-$TB, within 30 s" \
  "$(state_of "$b1" | cut -d' ' -f1-2):$(state_of "$b2" | cut -d' ' -f1-2):$(echo "$reclaim <= 30" | bc)" \
  "RUNNING gl-$TB:RUNNING gl-$TB:1"
check "... A's borrowed job was requeued; its jobs in gl-$TA kept running" \
  "$(on1 scontrol -o show job "$a3" | grep -oE 'Restarts=[0-9]+'):$(state_of "$a1" | cut -d' ' -f1):$(state_of "$a2" | cut -d' ' -f1)" \
  "Restarts=1:RUNNING:RUNNING"
check "... sacct records its preemption" \
  "$(on1 sacct -n -X -D -j "$a3" -o State | grep -c PREEMPTED)" 1
# 4. A team at its limits waits with the right reason: B at nominal 8 with no
#    borrowing waits on its account limit.
b3=$(submit "$UB" -N1 --gres=gpu:1)
wait_for 20 "$b3" 'AssocGrpGRES'
check "team B at its 8 (borrow limit 0): a 9th GPU waits on AssocGrpGRES" "$(state_of "$b3" | cut -d' ' -f3)" AssocGrpGRES
check "... scontrol show assoc_mgr: account $TB uses 8 of its 8 GPUs" \
  "$(on1 scontrol show assoc_mgr accounts="$TB" flags=assoc | grep -m1 -o 'GrpTRES=[^ ]*' | grep -oE 'gres/gpu=8\(8\)')" \
  "gres/gpu=8(8)" || on1 scontrol show assoc_mgr accounts="$TB" flags=assoc | grep -m2 -E 'ClusterName|GrpTRES='
on1 scancel -u "$UA"; on1 scancel -u "$UB"
sleep 2

# 4b. A tier is a share of the nodes, not only of their GPUs: team A's
#    CPU-only jobs (-c 1, no GPU) would fill every node's 2 cores and keep
#    B's GPUs idle. A CPU counts as 2 GPUs here (4 GPUs / 2 CPUs a node), so
#    A's tier holds 4 of them (8 = its nominal); the rest run borrowed, and
#    B's GPU jobs within its nominal preempt them.
cpu_jobs=()
for _ in 1 2 3 4 5 6 7 8; do cpu_jobs+=("$(submit "$UA" -N1 -c 1)"); done
wait_for 30 "${cpu_jobs[7]}" '^RUNNING'
check "team A's 8 CPU-only jobs: 4 in gl-$TA (billing 2 each, 8 in all), 4 borrowed" \
  "$(for j in "${cpu_jobs[@]}"; do state_of "$j" | cut -d' ' -f1-2; done | LC_ALL=C sort | uniq -c | awk '{print $1, $2, $3}' | tr '\n' ';')" \
  "4 RUNNING gl-borrowed;4 RUNNING gl-$TA;" || on1 squeue
check "... each billed as half a node's cores: 2" \
  "$(on1 scontrol show job "${cpu_jobs[0]}" | grep -o 'billing=[0-9]*' | head -n 1)" "billing=2"
t0=$(date +%s.%N)
b1=$(submit "$UB" -N1 --gres=gpu:4); b2=$(submit "$UB" -N1 --gres=gpu:4)
wait_for 40 "$b2" '^RUNNING' && wait_for 10 "$b1" '^RUNNING'
reclaim=$(echo "$(date +%s.%N) - $t0" | bc)
echo "  team B's 8 GPUs running $reclaim s after submission, past A's CPU-only jobs"
check "team B (within nominal) gets its 8 GPUs though A's jobs held every core: both run in gl-$TB within 30 s" \
  "$(state_of "$b1" | cut -d' ' -f1-2):$(state_of "$b2" | cut -d' ' -f1-2):$(echo "$reclaim <= 30" | bc)" \
  "RUNNING gl-$TB:RUNNING gl-$TB:1" || on1 squeue
check "... A's 4 jobs in gl-$TA still run" \
  "$(for j in "${cpu_jobs[@]}"; do state_of "$j" | cut -d' ' -f1-2; done | grep -c "^RUNNING gl-$TA\$")" 4
on1 scancel -u "$UA"; on1 scancel -u "$UB"
sleep 2

# 4c. Memory-heavy jobs: here memory is not consumable (CR_Core), so a job
#    asking a node's whole memory holds none of it and bills its cores
#    alone; A's four such jobs (one core each) keep nothing from B, whose
#    8 GPUs start at once beside them. (Where memory is consumable, the
#    tiers weigh it too: policy_slurm_side_test.)
mem_jobs=()
for _ in 1 2 3 4; do mem_jobs+=("$(submit "$UA" -N1 -c 1 --mem=4000)"); done
wait_for 30 "${mem_jobs[3]}" '^RUNNING'
check "team A's 4 jobs of a node's whole memory (4000 MB): all run in gl-$TA, each billed 2 (its core), memory not billed"   "$(for j in "${mem_jobs[@]}"; do state_of "$j" | cut -d' ' -f1-2; done | LC_ALL=C sort | uniq -c | awk '{print $1, $2, $3}'):$(on1 scontrol show job "${mem_jobs[0]}" | grep -o 'billing=[0-9]*' | head -n 1)" \
  "4 RUNNING gl-$TA:billing=2" || on1 squeue
b1=$(submit "$UB" -N1 --gres=gpu:4); b2=$(submit "$UB" -N1 --gres=gpu:4)
wait_for 20 "$b2" '^RUNNING' && wait_for 10 "$b1" '^RUNNING'
check "... team B's 8 GPUs run beside them, no one preempted" \
  "$(state_of "$b1" | cut -d' ' -f1-2):$(state_of "$b2" | cut -d' ' -f1-2):$(for j in "${mem_jobs[@]}"; do state_of "$j" | cut -d' ' -f1; done | grep -c '^RUNNING$')" \
  "RUNNING gl-$TB:RUNNING gl-$TB:4" || on1 squeue
on1 scancel -u "$UA"; on1 scancel -u "$UB"
sleep 2

# 5. A reservation admits only its team during its window: the policy gains
#    one that starts now; apply.sh creates it and leaves the rest unchanged.
policy "{\"name\": \"now$$\", \"team\": \"$TB\", \"nodes\": 1, \"start\": \"now\", \"minutes\": 10}"
"$BIN/gpulaunch" slurm-config --synthetic "leaf:2 node:2" --out "$WORK/out" --policy "$WORK/policy.json" \
  --slurm-conf "$GL_SLURM_CLUSTER_CONF" > /dev/null 2>&1
on1 sh "$WORK/out/apply.sh" > "$WORK/apply3.out" 2>&1
check "apply.sh with a new reservation: creates it, the rest unchanged" \
  "$?:$(grep -c 'created reservation' "$WORK/apply3.out"):$(grep -vE 'apply.sh: (unchanged|note:)' "$WORK/apply3.out" | grep -vc created)" \
  "0:1:0" || cat "$WORK/apply3.out"
node=$(on1 scontrol -o show reservation "gl-now$$" | grep -o ' Nodes=[^ ]*' | cut -d= -f2)
ja=$(submit "$UA" -N1 --gres=gpu:1 --reservation="gl-now$$")
check "team A's job naming B's reservation is refused" "${ja:-refused}" refused
jb=$(submit "$UB" -N1 --gres=gpu:1 --reservation="gl-now$$")
wait_for 20 "$jb" '^RUNNING'
check "team B's job runs in it, on its node $node" \
  "$(state_of "$jb" | cut -d' ' -f1):$(on1 squeue -h -j "$jb" -o %N)" "RUNNING:$node"
jw=$(submit "$UA" -N1 --gres=gpu:1 -w "$node")
wait_for 20 "$jw" 'ReqNodeNotAvail|Reserved'
check "team A's job asking for that node waits (reserved)" \
  "$(state_of "$jw" | cut -d' ' -f1):$(state_of "$jw" | grep -cE 'ReqNodeNotAvail|Reserved')" "PENDING:1" ||
  state_of "$jw"
# MAGNETIC: team B's jobs use the reservation without naming it. Its node
# has 3 GPUs left (jb holds one); the other nodes are filled first with jobs
# of the teams' own tiers (no borrowed job a reclaim could free instead).
fa=$(submit "$UA" -N2 --gres=gpu:4 -x "$node" -p "gl-$TA")
fb=$(submit "$UB" -N1 --gres=gpu:4 -x "$node" -p "gl-$TB")
wait_for 20 "$fa" '^RUNNING' && wait_for 20 "$fb" '^RUNNING'
jm=$(submit "$UB" -N1 --gres=gpu:2)
wait_for 20 "$jm" '^RUNNING'
check "team B's job naming no reservation runs in it (MAGNETIC), on $node" \
  "$(state_of "$jm" | cut -d' ' -f1):$(on1 squeue -h -j "$jm" -o '%v %N')" "RUNNING:gl-now$$ $node" ||
  on1 scontrol -o show reservation "gl-now$$"


# 6. A team the policy no longer names: its partition and QOS go, its
#    account stays (users, history); the other teams' objects are unchanged.
on1 scancel -u "$UA"; on1 scancel -u "$UB"
sleep 1
sed "s/\"teams\": \[/\"teams\": [{\"name\": \"$TC\", \"guarantee\": 0, \"nominal\": 4, \"borrow_limit\": 0, \"users\": []},/" \
  "$WORK/policy.json" > "$WORK/policy3.json"
"$BIN/gpulaunch" slurm-config --synthetic "leaf:2 node:2" --out "$WORK/out3" --policy "$WORK/policy3.json" \
  --slurm-conf "$GL_SLURM_CLUSTER_CONF" > /dev/null 2>&1
on1 sh "$WORK/out3/apply.sh" > "$WORK/apply4.out" 2>&1
check "a third team: apply.sh creates its QOS, account and partition" \
  "$?:$(grep -cE "created (QOS gl-$TC|account $TC|partition gl-$TC)" "$WORK/apply4.out")" "0:3" || cat "$WORK/apply4.out"
on1 sh "$WORK/out/apply.sh" > "$WORK/apply5.out" 2>&1
check "the policy without it again: its partition and QOS deleted, its account kept, nothing else changed" \
  "$?:$(grep -cE "deleted (partition|QOS) gl-$TC" "$WORK/apply5.out"):$(on1 scontrol -o show partition "gl-$TC" 2> /dev/null | grep -c "^PartitionName="):$(on1 sacctmgr -n -P show account where name="$TC" format=Account):$(grep -vE "unchanged|deleted|account $TC is kept|updated partition gl-borrowed|apply.sh: note:" "$WORK/apply5.out" | wc -l)" \
  "0:2:0:$TC:0" || cat "$WORK/apply5.out"

# 7. A reservation whose window has passed is not created again in the past,
#    and one that has begun is created for what is left of it. apply.sh runs
#    with a clock moved to those times (a `date` ahead of PATH that shifts
#    `date +%s` only), its reservation deleted first as Slurm does at the end.
policy "{\"name\": \"later$$\", \"team\": \"$TB\", \"nodes\": 1, \"start\": \"2030-01-01T10:00:00\", \"minutes\": 60}"
"$BIN/gpulaunch" slurm-config --synthetic "leaf:2 node:2" --out "$WORK/out4" --policy "$WORK/policy.json" \
  --slurm-conf "$GL_SLURM_CLUSTER_CONF" > /dev/null 2>&1
on1 scontrol delete ReservationName="gl-later$$"
mkdir "$WORK/clock"
cat > "$WORK/clock/date" <<SH
#!/bin/sh
if [ "\$*" = "+%s" ]; then echo \$(( \$(/bin/date +%s) + \$(cat "$WORK/clock/offset") )); else exec /bin/date "\$@"; fi
SH
chmod 755 "$WORK/clock/date"
echo $(( $(date -d 2030-01-01T11:00:00 +%s) - $(date +%s) )) > "$WORK/clock/offset"
on1 env PATH="$WORK/clock:$PATH" sh "$WORK/out4/apply.sh" > "$WORK/apply6.out" 2>&1
check "apply.sh after the reservation's window: skipped, saying so, not created" \
  "$?:$(grep -c "skipped reservation gl-later$$: its window (2030-01-01T10:00:00, 60 min) has passed" "$WORK/apply6.out"):$(on1 scontrol -o show reservation "gl-later$$" 2> /dev/null | grep -c ReservationName)" \
  "0:1:0" || cat "$WORK/apply6.out"
echo $(( $(date -d 2030-01-01T10:40:00 +%s) - $(date +%s) )) > "$WORK/clock/offset"
on1 env PATH="$WORK/clock:$PATH" sh "$WORK/out4/apply.sh" > "$WORK/apply7.out" 2>&1
check "apply.sh 40 min into the window: created from now for the 20 min left" \
  "$?:$(grep -c "began at 2030-01-01T10:00:00: created from now for the 20 min left" "$WORK/apply7.out"):$(on1 scontrol -o show reservation "gl-later$$" | grep -o 'Duration=[^ ]*')" \
  "0:1:Duration=00:20:00" || cat "$WORK/apply7.out"
policy "{\"name\": \"past$$\", \"team\": \"$TB\", \"nodes\": 1, \"start\": \"2020-01-01T10:00:00\", \"minutes\": 60}"
"$BIN/gpulaunch" slurm-config --synthetic "leaf:2 node:2" --out "$WORK/out5" --policy "$WORK/policy.json" \
  --slurm-conf "$GL_SLURM_CLUSTER_CONF" > "$WORK/config5.out" 2>&1
check "slurm-config refuses a reservation that starts in the past: exit 2, nothing written" \
  "$?:$(grep -c "reservation past$$ starts at 2020-01-01T10:00:00, which has passed" "$WORK/config5.out"):$(ls "$WORK/out5" 2> /dev/null | wc -l)" \
  "2:1:0" || cat "$WORK/config5.out"

# 8. A's user also in an account of the site's (outside the policy): its job
#    in urgent is fine, but moving that job into A's account (in any
#    spelling) is refused while it stays in urgent, and allowed into A's tier.
TO=pto$$
on1 sacctmgr -i add account "$TO" > /dev/null && on1 sacctmgr -i add user "$UA" account="$TO" > /dev/null
o1=$(submit "$UA" -N1 --gres=gpu:1 -H -A "$TO" -p urgent)
as "$UA" scontrol update JobId="$o1" Account="$(up "$TA")" > "$WORK/move2.out" 2>&1
rc=$?  # before check's arguments, whose $(up) would reset it
check "a site account's job in urgent: moving it into account $(up "$TA") is refused" \
  "$rc:$(on1 squeue -h -j "$o1" -o '%a %P')" "1:$TO urgent" || cat "$WORK/move2.out"
as "$UA" scontrol update JobId="$o1" Account="$(up "$TA")" Partition="gl-$TA" > "$WORK/move3.out" 2>&1
rc=$?
check "... and into account $TA together with partition gl-$TA is allowed" \
  "$rc:$(on1 squeue -h -j "$o1" -o '%a %P')" "0:$TA gl-$TA" || cat "$WORK/move3.out"
on1 scancel "$o1"
on1 sacctmgr -i delete user "$UA" where account="$TO" > /dev/null; on1 sacctmgr -i delete account "$TO" > /dev/null

finish "slurm policy"
