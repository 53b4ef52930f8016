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
# daemons run out of pipes and the launch hangs). Prints the time taken and gpulaunch's peak memory
# (docs/benchmarks.md); asserts neither. Needs GL_RIG and GL_NSP; exits 77
# (skipped) when the rig is not up. Usage: scale_multihost_test.sh BIN_DIR
set -uo pipefail
BIN=$(cd "${1:?usage: scale_multihost_test.sh BIN_DIR}" && pwd) || exit 2
RANKS=${GL_SCALE_RANKS:-2048}
. "$(dirname "$0")/test_lib.sh"
need_netns_rig multihost_scale
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
per=$((RANKS / 4))
hosts="node1:$per,node2:$per,node3:$per,node4:$per"

on_node1() {
  OMPI_MCA_plm_rsh_agent=ssh OMPI_MCA_plm_rsh_args="-F $GL_RIG/ssh/ssh_config" \
    ip netns exec "${NSP}n1" unshare --uts sh -c 'hostname node1; exec "$@"' sh "$@"
}

if ! on_node1 "$BIN/gpulaunch" --allow-run-as-root --dry-run -H "$hosts" -n "$RANKS" /bin/true > "$WORK/plan" 2>&1; then
  echo "FAIL - the --dry-run plan of $RANKS ranks:"; tail -5 "$WORK/plan"; exit 1
fi
# Runs the launch; prints its exit code, seconds and peak memory (KB; wait4
# reports the larger of gpulaunch's and mpirun's, its waited-for child).
read -r rc took peak_kb < <(python3 - "$WORK/out" "$BIN/gpulaunch" --allow-run-as-root \
  --summary "$WORK/summary.json" -H "$hosts" -n "$RANKS" /bin/true <<'PY'
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
)
echo "multihost_scale: $RANKS ranks of /bin/true on 4 hosts: exit $rc after $took s; peak memory of gpulaunch and mpirun (the larger): $peak_kb KB"
if [ "$rc" != 0 ]; then
  echo "FAIL - the launch exited $rc, want 0:"; tail -20 "$WORK/out"; exit 1
fi
python3 - "$WORK/plan" "$WORK/summary.json" "$RANKS" <<'PY'
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
    if r.get("host") != host_of.get(r["rank"]) or r.get("state") != "exited" or r.get("exit_code") != 0:
        problems.append("rank %d: host %s (plan: %s), %s, exit %s" % (r["rank"], r.get("host"),
                        host_of.get(r["rank"]), r.get("state"), r.get("exit_code")))
missing = [r for r in range(ranks) if seen.get(r) != 1]
if missing:
    problems.append("%d ranks missing or repeated in the summary, e.g. %s" % (len(missing), missing[:5]))
for p in problems[:10]:
    print("FAIL - " + p)
if problems:
    sys.exit(1)
print("ok   - %d ranks, each once, on its planned host (%d per host), exited 0, plan hash %s..."
      % (ranks, ranks // 4, plan_hash[:12]))
PY
