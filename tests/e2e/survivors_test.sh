#!/usr/bin/env bash
# Nothing of a job outlives it (docs/launch.md, "What gpulaunch stops"):
# every rank of tests/e2e/survivors/helpers_job.sh starts a child that
# ignores SIGTERM, a setsid double-forked daemon, a daemon(3)-style process
# with its streams closed, a three-deep tree, a helper holding stdout and one
# that keeps re-forking, and a re-forking one that cleared its environment
# (env -i, setsid, a double fork); the jobs end normally, by a failing rank,
# by Ctrl-C to gpulaunch, by kill -9 of gpulaunch, by kill -9 of a rank's
# shim, by the kill grace (ranks that ignore SIGTERM), and under Slurm by
# scancel, kill -9 of gpulaunch in the batch step and scancel --batch
# --signal=KILL. After each end, no process carrying the job's
# GPULAUNCH_JOB_ID in its environment, or its marker in argv, may remain on
# any host (one scan of /proc covers the namespace hosts, which share this
# machine's processes) within kill grace + 2 s of the event (a hard end under
# Slurm: within SLURM_HARD_BOUND_S, Slurm's own delivery included). Then the
# same jobs with the shim's subreaper step taken out
# (GPULAUNCH_TEST_NO_SUBREAPER), and the SIGKILLed shim without its cgroup
# (GPULAUNCH_RANK_CGROUP=off), must leave survivors: the checks can fail. On
# one host always; on the namespace rig (GL_RIG) and the Slurm cluster
# (GL_SLURM_CLUSTER_CONF) when up.
# Usage: survivors_test.sh BIN_DIR
set -uo pipefail
BIN=$(cd "${1:?usage: survivors_test.sh BIN_DIR}" && pwd) || exit 2
SRC=$(cd "$(dirname "$0")/../.." && pwd)
JOB=$SRC/tests/e2e/survivors/helpers_job.sh
NSP=${GL_NSP:-glr}
GRACE=2
SLURM_HARD_BOUND_S=20
WORK=$(mktemp -d)
chmod 755 "$WORK"
trap 'cleanup_leftovers; rm -rf "$WORK"' EXIT
. "$(dirname "$0")/test_lib.sh"
ROOT_ARGS=()
[ "$(id -u)" -eq 0 ] && ROOT_ARGS=(--allow-run-as-root)

# The pids whose environment carries GPULAUNCH_JOB_ID=ID, or whose argv the
# marker gl-survivor-ID-r (helpers_job.sh).
carriers() {
  { grep -lsa "GPULAUNCH_JOB_ID=$1" /proc/[0-9]*/environ; grep -lsa "gl-survivor-$1-r" /proc/[0-9]*/cmdline; } 2> /dev/null |
    sed 's|/proc/\([0-9]*\)/.*|\1|' | sort -u | grep -v "^$$\$"
}
ids_seen=()
cleanup_leftovers() {  # a failed case must not leave its survivors to the next test (re-forkers: until none)
  local id p round
  for round in $(seq 20); do
    local any=0
    for id in "${ids_seen[@]}"; do for p in $(carriers "$id"); do kill -9 "$p" 2> /dev/null; any=1; done; done
    [ "$any" -eq 0 ] && return
    sleep 0.1
  done
}
# Waits up to GRACE + 2 s from the event (an epoch in ms) for the job's
# processes to be gone (tests/e2e/survivors/wait_gone.py); prints how many
# ranks still had some then ("none" or their numbers), and the ms it took.
# (Run in a process substitution: the caller records the id in ids_seen.)
survivors_after() {
  python3 "$SRC/tests/e2e/survivors/wait_gone.py" "$1" $(((GRACE + 2) * 1000)) "$3" --start "$2"
}
job_id() { cat "$1"/job-id.0 2> /dev/null; }
wait_started() {  # until every rank started its helpers (30 s at most)
  for _ in $(seq 300); do [ "$(ls "$1"/started.* 2> /dev/null | wc -l)" -ge "$2" ] && return 0; sleep 0.1; done
  return 1
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# One case: RUNNER gpulaunch ARGS... with the job ending as END, stopped as
# HOW (none | int | kill9 | shim9: kill -9 of rank 0's shim); checks that
# nothing is left (the late ranks are in DIR/late; EXPECT_LATE, when set,
# is what they must be instead of none).
run_case() {
  local where=$1 ranks=$2 end=$3 how=$4; shift 4
  local dir="$WORK/$where-$end-$how"
  mkdir -p "$dir"; chmod 777 "$dir"
  "$@" --kill-grace "$GRACE" --summary "$dir/summary.json" "$JOB" "$dir" "$end" > "$dir/out" 2> "$dir/err" &
  local pid=$! event
  wait_started "$dir" "$ranks" || echo "note: $where $end $how: not every rank reported its helpers"
  local gl
  gl=$(pgrep -n -f -- "--summary $dir/summary.json" || echo "$pid")
  local id; id=$(job_id "$dir")
  ids_seen+=("$id")
  local late took rc
  case $how in
    int|kill9|shim9)  # the event is the signal: the clock runs from it, while gpulaunch still ends
      sleep 0.3
      # A gpulaunch killed with -9 cannot remove its job folder: the test does (mpirun's rankfile is in it).
      local engine jobdir="" shim
      engine=$(pgrep -P "$gl" -x mpirun | head -n 1)
      [ -n "$engine" ] && jobdir=$(tr '\0' '\n' < "/proc/$engine/cmdline" | grep -m 1 '/gpulaunch\.[^/]*/rankfile$')
      shim=$(pgrep -P "${engine:-0}" -x gpulaunch-shim | head -n 1)
      # Whether the shim runs in a cgroup of its own (launcher/shim/rank_cgroup.h).
      if grep -q '^0::/.*gpulaunch-shim\.[0-9]*$' "/proc/${shim:-0}/cgroup" 2> /dev/null; then
        echo "$(awk '$0 ~ / - cgroup2 / {print $5; exit}' /proc/self/mountinfo)$(sed -n 's/^0:://p' "/proc/$shim/cgroup")" > "$dir/contained"
      fi
      event=$(now_ms)
      case $how in int) kill -INT "$gl" ;; kill9) kill -9 "$gl" ;; shim9) kill -9 "$shim" ;; esac
      read -r took late < <(survivors_after "$id" "$event" "$ranks")
      wait "$pid" 2> /dev/null
      rc=$?
      [ "$how" = kill9 ] && [ -n "$jobdir" ] && rm -rf "$(dirname "$jobdir")" ;;
    *)  # the event is the job's end (its own, or --timeout's): gpulaunch's exit
      wait "$pid" 2> /dev/null
      rc=$?
      event=$(now_ms)
      read -r took late < <(survivors_after "$id" "$event" "$ranks") ;;
  esac
  check "$where, every helper, ended by $end/$how: the job had an id" "$([ -n "$id" ] && echo yes)" yes
  echo "$late" > "$dir/late"
  echo "$rc" > "$dir/rc"
  if [ -n "${EXPECT_LATE:-}" ]; then
    check "... the ranks with processes left after $((GRACE + 2)) s" "$late" "$EXPECT_LATE"
    cleanup_leftovers
    return
  fi
  check "... no process of the job left within $((GRACE + 2)) s (${took} ms)" "$late" none
  [ "$late" = none ] || carriers "$id" | xargs -r ps -o pid,ppid,stat,cmd -p
}

# Whether a rank's shim can make a cgroup of its own here (root, with a
# cgroup v2 hierarchy: launcher/base/rank_cgroup.h); the summary says so.
CGROUPS=no HELPER_TRACKING=subreaper
if [ "$(id -u)" -eq 0 ] && grep -q ' - cgroup2 ' /proc/self/mountinfo; then CGROUPS=yes HELPER_TRACKING=subreaper+cgroup; fi

# --- one host
ONE=("$BIN/gpulaunch" "${ROOT_ARGS[@]}" -n 2 --oversubscribe)
run_case onehost 2 exit0 none "${ONE[@]}"
check "... exit 0" "$(cat "$WORK/onehost-exit0-none/rc")" 0
check "... the summary lists what each rank's shim stopped" \
  "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['helper_tracking'], all(len(r.get('helpers_stopped', [])) >= 6 for r in d['ranks']))" "$WORK/onehost-exit0-none/summary.json")" \
  "$HELPER_TRACKING True"
check "... and the note says so" "$(grep -c 'process(es) running when it ended; its shim stopped them' "$WORK/onehost-exit0-none/err")" 2
check "... with no word of mpirun hanging" "$(grep -c 'did not exit' "$WORK/onehost-exit0-none/err")" 0
run_case onehost 2 fail none "${ONE[@]}"
check "... the failing rank's code 3" "$(cat "$WORK/onehost-fail-none/rc")" 3
run_case onehost 2 wait int "${ONE[@]}"
check "... Ctrl-C: 130" "$(cat "$WORK/onehost-wait-int/rc")" 130
run_case onehost 2 wait kill9 "${ONE[@]}"
run_case onehost 2 deaf timeout "${ONE[@]}" --timeout 3
check "... the kill grace: the timeout's 124" "$(cat "$WORK/onehost-deaf-timeout/rc")" 124
# A rank's shim SIGKILLed: its orphans reparent to init, out of every
# process tree; the rank's cgroup holds them (root, with cgroup v2 here).
if [ "$CGROUPS" = yes ]; then
  run_case onehost 2 wait shim9 "${ONE[@]}"
  cgroup_folder=$(cat "$WORK/onehost-wait-shim9/contained" 2> /dev/null)
  check "... the shim ran in a cgroup of its own" "$([ -n "$cgroup_folder" ] && echo yes)" yes
  for _ in $(seq 50); do [ -d "$cgroup_folder" ] || break; sleep 0.1; done
  check "... and its watcher removed it" "$([ -n "$cgroup_folder" ] && [ ! -d "$cgroup_folder" ] && echo yes)" yes
  EXPECT_LATE=0 run_case nocgroup 2 wait shim9 env GPULAUNCH_RANK_CGROUP=off "${ONE[@]}"
  check "without the cgroup, the SIGKILLed shim's helpers survive (the test sees them)" \
    "$(cat "$WORK/nocgroup-wait-shim9/late")" 0
else
  echo "survivors: no cgroup v2 this user may write here; the SIGKILLed-shim case was skipped"
fi

# The subreaper step taken out: the escaped helpers must survive (the check above can fail).
dir="$WORK/no-subreaper"; mkdir -p "$dir"; chmod 777 "$dir"
GPULAUNCH_TEST_NO_SUBREAPER=1 "${ONE[@]}" --kill-grace "$GRACE" --no-summary "$JOB" "$dir" exit0 > /dev/null 2>&1
id=$(job_id "$dir")
ids_seen+=("$id")
read -r took late < <(survivors_after "$id" "$(now_ms)" 2)
check "without the subreaper, helpers survive (the test sees them)" "$late" "0 1"
cleanup_leftovers

# --- the 4 namespace hosts
if [ -n "${GL_RIG:-}" ] && [ -f "$GL_RIG/ssh/ssh_config" ] && ip netns list 2> /dev/null | grep -q "^${NSP}n1"; then
  on_node1() {
    OMPI_MCA_plm_rsh_agent=ssh OMPI_MCA_plm_rsh_args="-F $GL_RIG/ssh/ssh_config" \
      ip netns exec "${NSP}n1" unshare --uts sh -c 'hostname node1; exec "$@"' sh "$@"
  }
  FOUR=(on_node1 "$BIN/gpulaunch" "${ROOT_ARGS[@]}" -H node1:1,node2:1,node3:1,node4:1)
  run_case 4hosts 4 exit0 none "${FOUR[@]}"
  check "... exit 0" "$(cat "$WORK/4hosts-exit0-none/rc")" 0
  run_case 4hosts 4 fail none "${FOUR[@]}"
  check "... the failing rank's code 3" "$(cat "$WORK/4hosts-fail-none/rc")" 3
  run_case 4hosts 4 wait int "${FOUR[@]}"
  run_case 4hosts 4 wait kill9 "${FOUR[@]}"
else
  echo "survivors: the namespace rig is not up; the 4-host cases were skipped"
fi

# --- the Slurm cluster (proctrack/linuxproc, which loses what reparents to init)
if [ -n "${GL_SLURM_CLUSTER_CONF:-}" ] && ip netns list 2> /dev/null | grep -q "^${NSP}n1"; then
  on1() { ip netns exec "${NSP}n1" env SLURM_CONF="$GL_SLURM_CLUSTER_CONF" OMPI_MCA_btl=self,tcp "$@"; }
  check "the cluster tracks processes with proctrack/linuxproc" \
    "$(on1 scontrol show config | grep -c 'ProctrackType.*proctrack/linuxproc')" 1
  # check warns about linuxproc only where a rank's cgroup cannot be made (rank_cgroup.h).
  check "check in an allocation: no linuxproc warning where a rank's cgroup can be made" \
    "$(on1 srun -N1 -n1 "$BIN/gpulaunch" check 2>&1 > /dev/null | grep -c 'proctrack/linuxproc and')" 0
  check "... and the warning, with the reason, where it cannot" \
    "$(on1 srun -N1 -n1 --export=ALL,GPULAUNCH_RANK_CGROUP=off "$BIN/gpulaunch" check 2>&1 > /dev/null |
         grep -c 'proctrack/linuxproc and a rank.s shim cannot make a cgroup of its own here (GPULAUNCH_RANK_CGROUP=off)')" 1
  # exit0: the job's own end; scancel: SIGTERM, and SIGKILL KillWait later;
  # kill9: kill -9 of gpulaunch, the batch step's main process (srun then
  # dies, and Slurm kills the rank step at once); batchkill: scancel --batch
  # --signal=KILL. Job folders go to the case's own TMPDIR: a gpulaunch
  # killed with -9 cannot remove its own.
  for end in exit0 scancel kill9 batchkill; do
    dir="$WORK/slurm-$end"; mkdir -p "$dir/tmp"; chmod -R 777 "$dir"
    mode=wait; [ "$end" = exit0 ] && mode=exit0
    jobid=$(on1 sbatch --parsable -N2 -n4 --overcommit -o "$dir/out" --export="ALL,TMPDIR=$dir/tmp" \
              --wrap "exec $BIN/gpulaunch --kill-grace $GRACE --summary $dir/summary.json $JOB $dir $mode" 2> "$dir/sbatch.err")
    wait_started "$dir" 4 || echo "note: slurm $end: not every rank reported its helpers"
    id=$(job_id "$dir")
    ids_seen+=("$id")
    ended() { on1 scontrol show job -o "$jobid" 2> /dev/null | grep -qE 'JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT)'; }
    if [ "$end" = scancel ]; then
      # Each rank's clock runs from the stop reaching it (its main process
      # notes when): Slurm's own delivery, slurmctld to each slurmd, took 2 to
      # 4 s on this machine, and reached the batch host 1.7 s after the other.
      on1 scancel "$jobid"
      read -r took late < <(python3 "$SRC/tests/e2e/survivors/wait_gone.py" "$id" $(((GRACE + 2) * 1000)) 4 "$dir")
      check "slurm, every helper, ended by scancel: each rank's processes gone within $((GRACE + 2)) s of its stop (${took} ms)" \
        "$late" none
      for _ in $(seq 600); do ended && break; sleep 0.2; done
      # Slurm SIGKILLs the batch step KillWait (5 s) after its SIGTERM: the
      # summary, written at the first SIGTERM, names the cause whatever came next.
      check "slurm, scancel: the summary names the stop" \
        "$(python3 -c "import json,sys; print('stopped by SIGTERM sent to gpulaunch (under Slurm' in json.load(open(sys.argv[1]))['root_cause']['text'])" \
             "$dir/summary.json" 2>&1)" True
      continue
    elif [ "$end" = kill9 ] || [ "$end" = batchkill ]; then
      # The clock runs from the SIGKILL; Slurm's delivery to the rank step is
      # within the bound (SLURM_HARD_BOUND_S).
      gl=""
      for p in $(pgrep -f -- "--summary $dir/summary.json"); do
        [ "$(cat "/proc/$p/comm" 2> /dev/null)" = gpulaunch ] && gl=$p
      done
      event=$(now_ms)
      if [ "$end" = kill9 ]; then kill -9 "${gl:-0}"; else on1 scancel --batch --signal=KILL "$jobid"; fi
      read -r took late < <(python3 "$SRC/tests/e2e/survivors/wait_gone.py" "$id" $((SLURM_HARD_BOUND_S * 1000)) 4 --start "$event")
      check "slurm, every helper, ended by $end: the job had an id and a gpulaunch" "$([ -n "$id" ] && [ -n "$gl" ] && echo yes)" yes
      check "... no process of the job left on any node within $SLURM_HARD_BOUND_S s (${took} ms)" "$late" none
      [ "$late" = none ] || carriers "$id" | xargs -r ps -o pid,ppid,stat,cmd -p
      for _ in $(seq 600); do ended && break; sleep 0.2; done
      continue
    else  # from the job's end, as Slurm reports it
      for _ in $(seq 600); do ended && break; sleep 0.2; done
      event=$(now_ms)
      read -r took late < <(survivors_after "$id" "$event" 4)
    fi
    check "slurm, every helper, ended by $end: the job had an id" "$([ -n "$id" ] && echo yes)" yes
    check "... no process of the job left within $((GRACE + 2)) s (${took} ms)" "$late" none
    [ "$late" = none ] || carriers "$id" | xargs -r ps -o pid,ppid,stat,cmd -p
  done
else
  echo "survivors: the Slurm cluster is not up; its cases were skipped"
fi
finish "survivors"
