#!/usr/bin/env bash
# Launch at scale over the network-namespace rig (.ci/rig/netns-up.sh):
# gpulaunch on node1 starts 2,048 ranks of /bin/true, 512 on each of
# node1..node4. Checks that the job exits 0 and that the summary holds every
# rank exactly once, on the host the plan (--dry-run) gave it, exited 0, under
# the plan's hash. Each rank fetched its own row of the plan from gpulaunch
# (no environment variable carries the whole plan), and a shim refuses to run
# its rank on another host than its row names, so a rank that exited 0 ran
# where the plan said. The rig's sshd gives its sessions a soft open-file
# limit of 1,024, and Open MPI's daemon on node2..node4 needs about 2,200 for
# its 512 ranks: it starts through the shim, which raises it (without, the
# daemons run out of pipes and the launch hangs).
#
# Then ranks that end at once beside ranks that run: 256 ranks, node1's 64
# run for 6 s and the rest exit at once. Open MPI 4.1's daemons report a
# rank that ended before they had started every rank of their host twice;
# mpirun, counting those ends twice, took the job for over while node1's
# ranks ran, killed them and exited 0 or 1 (5 runs in 6 on the rig, and the
# 2,048-rank launch above failed now and then under load the same way). The
# shims hold such ranks until every rank has started (rank_supervisor.h):
# two runs, each must end with every rank exited 0 on its own.
#
# Prints the time taken and gpulaunch's peak memory (docs/benchmarks.md);
# asserts neither. Needs GL_RIG and GL_NSP; exits 77 (skipped) when the rig
# is not up. Usage: scale_multihost_test.sh BIN_DIR
set -uo pipefail
BIN=$(cd "${1:?usage: scale_multihost_test.sh BIN_DIR}" && pwd) || exit 2
RANKS=${GL_SCALE_RANKS:-2048}
. "$(dirname "$0")/test_lib.sh"
need_netns_rig multihost_scale
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

on_node1() {
  OMPI_MCA_plm_rsh_agent=ssh OMPI_MCA_plm_rsh_args="-F $GL_RIG/ssh/ssh_config" \
    ip netns exec "${NSP}n1" unshare --uts sh -c 'hostname node1; exec "$@"' sh "$@"
}

# The plan of `gpulaunch -H HOSTS -n N PROGRAM...` into FILE (--dry-run).
plan_into() {
  local file=$1 hosts=$2 n=$3
  shift 3
  if ! on_node1 "$BIN/gpulaunch" --allow-run-as-root --dry-run -H "$hosts" -n "$n" "$@" > "$file" 2>&1; then
    echo "FAIL - the --dry-run plan of $n ranks:"; tail -5 "$file"; exit 1
  fi
}

# Runs the launch with its output in OUT; prints its exit code, seconds and
# peak memory (KB; wait4 reports the larger of gpulaunch's and mpirun's, its
# waited-for child).
launch() {
  local out=$1
  shift
  python3 - "$out" "$BIN/gpulaunch" --allow-run-as-root "$@" <<'PY'
import os, signal, subprocess, sys, time
out, argv = sys.argv[1], sys.argv[2:]
nsp, rig = os.environ.get("GL_NSP", "glr"), os.environ["GL_RIG"]
env = dict(os.environ, OMPI_MCA_plm_rsh_agent="ssh", OMPI_MCA_plm_rsh_args="-F %s/ssh/ssh_config" % rig)
wrapped = ["ip", "netns", "exec", nsp + "n1", "unshare", "--uts", "sh", "-c", 'hostname node1; exec "$@"', "sh"] + argv
# Debian's Open MPI 4.1.4 can hang at start-up when ranks exit at once
# (docs/benchmarks.md): mpirun asleep, nothing left to run. A launch that
# outlives the guard (it takes 15 to 60 s) is stopped (SIGINT, so gpulaunch
# cleans up; then SIGKILL to its session) and run again, twice at most.
GUARD = 150
for attempt in (1, 2, 3):
    started = time.monotonic()
    with open(out, "w") as f:
        proc = subprocess.Popen(wrapped, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        pid = 0
        while not pid and time.monotonic() - started < GUARD:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            time.sleep(0.1)
    if pid:
        break
    print("multihost_scale: the launch did not end within %d s (attempt %d); stopped" % (GUARD, attempt), file=sys.stderr)
    os.kill(proc.pid, signal.SIGINT)
    for _ in range(150):
        if os.wait4(proc.pid, os.WNOHANG)[0]:
            break
        time.sleep(0.1)
    else:
        os.killpg(proc.pid, signal.SIGKILL)  # the session this launch started, and only it
        os.wait4(proc.pid, 0)
    status = None
if status is None:
    print(124, "%.1f" % (time.monotonic() - started), 0)
else:
    print(os.waitstatus_to_exitcode(status), "%.1f" % (time.monotonic() - started), usage.ru_maxrss)
PY
}

# The summary against the plan: every rank once, on its planned host, exited
# 0 on its own (no stop signal had reached it), under the plan's hash.
check_summary() {
  python3 - "$@" <<'PY'
import json, sys
plan_path, summary_path, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
plan_hash, host_of = None, {}
for line in open(plan_path):
    words = line.split()
    if line.startswith("plan hash: "):
        plan_hash = words[2]
    elif len(words) >= 6 and words[0].isdigit() and not line.startswith("rank "):
        host_of[int(words[0])] = words[1]
summary = json.load(open(summary_path))
problems = []
if len(host_of) != ranks:
    problems.append("the plan lists %d ranks, want %d" % (len(host_of), ranks))
if summary.get("plan_hash") != plan_hash:
    problems.append("summary plan hash %s, the plan's %s" % (summary.get("plan_hash"), plan_hash))
if summary.get("exit_code") != 0:
    problems.append("summary exit code %s" % summary.get("exit_code"))
seen = {}
for r in summary.get("ranks", []):
    seen[r["rank"]] = seen.get(r["rank"], 0) + 1
    if (r.get("host") != host_of.get(r["rank"]) or r.get("state") != "exited" or r.get("exit_code") != 0
            or r.get("told_to_stop")):
        problems.append("rank %d: host %s (plan: %s), %s, exit %s%s" % (r["rank"], r.get("host"),
                        host_of.get(r["rank"]), r.get("state"), r.get("exit_code"),
                        ", told to stop" if r.get("told_to_stop") else ""))
missing = [r for r in range(ranks) if seen.get(r) != 1]
if missing:
    problems.append("%d ranks missing or repeated in the summary, e.g. %s" % (len(missing), missing[:5]))
for p in problems[:10]:
    print("FAIL - " + p)
if problems:
    sys.exit(1)
print("ok   - %d ranks, each once, on its planned host, exited 0, plan hash %s..." % (ranks, plan_hash[:12]))
PY
}

per=$((RANKS / 4))
hosts="node1:$per,node2:$per,node3:$per,node4:$per"
plan_into "$WORK/plan" "$hosts" "$RANKS" /bin/true
read -r rc took peak_kb < <(launch "$WORK/out" --summary "$WORK/summary.json" -H "$hosts" -n "$RANKS" /bin/true)
echo "multihost_scale: $RANKS ranks of /bin/true on 4 hosts: exit $rc after $took s; peak memory of gpulaunch and mpirun (the larger): $peak_kb KB"
if [ "$rc" != 0 ]; then
  echo "FAIL - the launch exited $rc, want 0:"; grep -v "PMIX ERROR" "$WORK/out" | tail -20; exit 1
fi
check_summary "$WORK/plan" "$WORK/summary.json" "$RANKS" || exit 1

# Ranks that end at once must not end the job under node1's, which run.
early="node1:64,node2:64,node3:64,node4:64"
script='if [ "$RANK" -lt 64 ]; then sleep 6; fi'
plan_into "$WORK/plan-early" "$early" 256 /bin/sh -c "$script"
for run in 1 2; do
  read -r rc took _ < <(launch "$WORK/out-early" --summary "$WORK/early.json" -H "$early" -n 256 /bin/sh -c "$script")
  echo "multihost_scale: 256 ranks, node1's 64 running 6 s, the rest ending at once (run $run): exit $rc after $took s"
  if [ "$rc" != 0 ]; then
    echo "FAIL - the launch exited $rc, want 0:"; grep -v "PMIX ERROR" "$WORK/out-early" | tail -20; exit 1
  fi
  check_summary "$WORK/plan-early" "$WORK/early.json" 256 || exit 1
done
