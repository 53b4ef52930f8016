#!/usr/bin/env bash
# gpulaunch sim --replay on the real 4-node Slurm cluster with accounting:
# a 12-job trace (tests/data/traces/replay/small-12.csv, 1-8 GPUs, 5-15 s,
# arriving over 13 s) is submitted at its arrival times, sacct's record read
# back, and the simulation of the same jobs compared. Asserts the report's
# structure and a loose bound (the goals are the benchmark's: docs/slurm.md),
# that --save keeps an export --sacct reads to the same report, that
# --against compares it with the bundled run of the same trace, and that a
# file that is not an export is refused naming the command that makes one.
# Then the same under the pool's policy (slurm-config --policy applied to
# the cluster, two team accounts this test creates and removes, with root's
# associations): quota-8.csv's jobs are submitted with their team's account,
# one borrows, and the simulation queues as Slurm's tiers. The first replay
# waits for the cluster to go idle (two backfill intervals), the second does
# not (--wait-idle 0: the backfill timer's phase from sdiag). Exits 77
# (skipped, with the reason) without the cluster or accounting.
# Usage: BIN_DIR
set -uo pipefail
BIN=$(cd "${1:?usage: slurm_replay_test.sh BIN_DIR}" && pwd) || exit 2
DATA=$(cd "$(dirname "$0")/../data" && pwd)
# shellcheck source=slurm_accounting_lib.sh
. "$(dirname "$0")/slurm_accounting_lib.sh"
need_cluster_with_accounting "slurm replay"
WORK=$(mktemp -d)
chmod 755 "$WORK"
TA=rqa$$ TB=rqb$$  # the teams (Slurm accounts)
cleanup() {
  remove_pool_policy "$WORK/policy" "$TA $TB" root
  rm -rf "$WORK"
}
trap cleanup EXIT
. "$(dirname "$0")/test_lib.sh"
on1() { ip netns exec "${NSP}n1" env SLURM_CONF="$GL_SLURM_CLUSTER_CONF" "$@"; }
replay=(sim --replay --cluster "leaf:2 node:2 gpu:4" --start-latency 1)

on1 timeout 300 "$BIN/gpulaunch" "${replay[@]}" --trace "$DATA/traces/replay/small-12.csv" --save "$WORK/export" \
  > "$WORK/live.out" 2> "$WORK/live.err"
check "sim --replay --trace: exit 0" "$?" 0 || cat "$WORK/live.err"
sed 's/^/    | /' "$WORK/live.out"
check "... all 12 jobs ran on Slurm and in the simulation" \
  "$(grep -c '^jobs: 12 observed, 12 started in both runs$' "$WORK/live.out")" 1
mean=$(sed -n 's/^start difference: mean |d| \([0-9.]*\) s.*/\1/p' "$WORK/live.out")
jct=$(sed -n 's/^average JCT: .*(+\{0,1\}\(-\{0,1\}[0-9.]*\) %)$/\1/p' "$WORK/live.out")  # bc takes no '+'
# Loose: a loaded 2-core machine delays Slurm's passes; the benchmark holds
# the goals (3 s, 5 %).
check "... mean |start difference| under 10 s (got ${mean:-none} s)" "$(echo "${mean:-99} < 10" | bc)" 1
check "... average JCT error within 30 % (got ${jct:-none} %)" "$(echo "${jct:-99} <= 30 && ${jct:-99} >= -30" | bc)" 1
check "... the jobs that differ most are listed" "$(grep -c '^  job [0-9]* ([0-9]*): observed ' "$WORK/live.out")" 5
check "--save: the sacct export, a header and 12 jobs" \
  "$(head -1 "$WORK/export"):$(tail -n +2 "$WORK/export" | grep -c .)" \
  "JobIDRaw|Submit|Start|End|State|AllocTRES|Timelimit|Account|Flags:12"
# The live run read when Slurm's backfill last ran (sdiag); offline, say it.
last_bf() { sed -n 's/.*, last backfill at \(-\{0,1\}[0-9.e+]*\) s,.*/--backfill-last=\1/p' "$1"; }
# shellcheck disable=SC2046 # one option, or none
"$BIN/gpulaunch" "${replay[@]}" --sacct "$WORK/export" $(last_bf "$WORK/live.out") > "$WORK/offline.out" 2>&1
check "--sacct on that export: exit 0, the same comparison" \
  "$?:$(diff <(tail -n +2 "$WORK/live.out") <(tail -n +2 "$WORK/offline.out") > /dev/null && echo same)" "0:same"
# --against: this run and the bundled one of the same trace (another day,
# other job ids): Slurm against itself, job for job.
"$BIN/gpulaunch" sim --replay --sacct "$WORK/export" --against "$DATA/slurm/replay-small-12.sacct" \
  > "$WORK/against.out" 2>&1
check "--against the bundled run of the same trace: exit 0, 12 jobs compared as two runs" \
  "$?:$(grep -c '^jobs: 12 observed, 12 started in both runs$' "$WORK/against.out"):$(grep -c '^average JCT: first run ' \
  "$WORK/against.out")" "0:1:1" || cat "$WORK/against.out"
echo "10|COMPLETED" > "$WORK/bad"
"$BIN/gpulaunch" "${replay[@]}" --sacct "$WORK/bad" > "$WORK/bad.out" 2>&1
check "a file that is no export: exit 2, naming the sacct command" \
  "$?:$(grep -c "$WORK/bad:1: the export has no JobIDRaw column; make one with: sacct -P -X -D" "$WORK/bad.out")" "2:1" ||
  cat "$WORK/bad.out"
check "no replayed job is left in the queue" "$(on1 squeue -h -n "$(seq -s, -f 'gl-replay-%g' 0 11)" | wc -l)" 0

# Under the pool's policy: teams of nominal 8, borrow limit 8.
cat > "$WORK/policy.json" <<JSON
{"format": "gpulaunch-policy/v1", "grace_s": 10,
 "teams": [{"name": "$TA", "guarantee": 8, "nominal": 8, "borrow_limit": 8, "users": []},
           {"name": "$TB", "guarantee": 8, "nominal": 8, "borrow_limit": 8, "users": []}]}
JSON
if ! apply_pool_policy "$WORK/policy.json" "$WORK/policy" > "$WORK/apply.out" 2>&1; then
  check "the policy applies" "$(cat "$WORK/apply.out")" ""
else
  on1 sacctmgr -i add user root account="$TA,$TB" > /dev/null
  quota="$TA:8/8/8,$TB:8/8/8"
  on1 timeout 400 "$BIN/gpulaunch" "${replay[@]}" --quota "$quota" --wait-idle 0 \
    --trace "$DATA/traces/replay/quota-8.csv" --save "$WORK/qexport" > "$WORK/qlive.out" 2> "$WORK/qlive.err"
  check "sim --replay --quota --wait-idle 0 --trace: exit 0" "$?" 0 || cat "$WORK/qlive.err"
  check "... submitted at once, the backfill timer's phase from the last cycle sdiag recorded (the first replay's)" \
    "$(grep -c 'waiting for the cluster' "$WORK/qlive.err"):$(grep -c ', last backfill at -\{0,1\}[0-9.e+]* s,' "$WORK/qlive.out")" "0:1"
  sed 's/^/    | /' "$WORK/qlive.out"
  # The rig's nodes have 2 CPUs and 4 GPUs: a CPU bills 2 in a team's tier.
  check "... all 8 jobs ran, under the quotas, the cluster's requeue hold (cred_expire, default 120 s), GraceTime 0 (its mean delay) and tier billing read" \
    "$(grep -c '^jobs: 8 observed, 8 started in both runs$' "$WORK/qlive.out"):$(grep -c "reclaim delay 2 s,.*requeue hold 120 s, quotas $quota, a tier bills max(GPUs, CPUs x 2))" "$WORK/qlive.out")" "1:1"
  check "... each job under its team's account (sacct)" \
    "$(tail -n +2 "$WORK/qexport" | awk -F'|' '{print $8}' | sort | uniq -c | awk '{print $1 $2}' | tr '\n' ' ')" \
    "4$TA 4$TB "
  ids=$(tail -n +2 "$WORK/qexport" | cut -d'|' -f1 | sort -u | paste -sd,)
  check "... team $TA's second job borrowed (ran in gl-borrowed)" \
    "$(on1 sacct -n -X -P -j "$ids" -o JobName,Partition | grep -c '^gl-replay-1|gl-borrowed$')" 1
  mean=$(sed -n 's/^start difference: mean |d| \([0-9.]*\) s.*/\1/p' "$WORK/qlive.out")
  check "... mean |start difference| under 10 s (got ${mean:-none} s)" "$(echo "${mean:-99} < 10" | bc)" 1
  # shellcheck disable=SC2046 # one option, or none
  "$BIN/gpulaunch" "${replay[@]}" --quota "$quota" --cpu-billing 2 --reclaim-delay 2 --sacct "$WORK/qexport" \
    $(last_bf "$WORK/qlive.out") > "$WORK/qoffline.out" 2>&1
  check "--sacct --quota on that export: the same comparison" \
    "$?:$(diff <(tail -n +2 "$WORK/qlive.out") <(tail -n +2 "$WORK/qoffline.out") > /dev/null && echo same)" "0:same"
  "$BIN/gpulaunch" "${replay[@]}" --quota "other:8/8/8,$TB:8/8/8" --sacct "$WORK/qexport" > "$WORK/qbad.out" 2>&1
  check "an export whose account is no team of --quota: exit 2, naming the line" \
    "$?:$(grep -c "$WORK/qexport:[0-9]*: job [0-9]*'s account '$TA' is no team of --quota" "$WORK/qbad.out")" "2:1" ||
    cat "$WORK/qbad.out"
fi

finish "slurm replay"
