#!/usr/bin/env bash
# Placement proven on a shaped two-leaf network (issue 44), over the netns
# rig (.ci/rig/netns-up.sh) made two-tier by .ci/rig/shape-two-leaf.sh:
# node1+node2 | node3+node4, one tbf-shaped uplink, shaped host ports.
#   1. linkcheck measures every pair (within 10% of the configured rates
#      less the TCP/IP/Ethernet headers: 1448 payload bytes per 1514 on the
#      wire, 0.956), runs flows at once, infers the two leaves and the
#      uplink's rate (at most 15 % below it, never above), and saves the
#      link file.
#   2. With that file a launch of tp=4,dp=2 (8 ranks, 2 per host) from a
#      hostfile that interleaves the leaves puts each TP group under one leaf.
#   3. The same job under gpulaunch's plan and under the worst (Open MPI's
#      by-slot order of that hostfile): the uplink's tx_bytes of the first are
#      at most a third of the second's, and both give the same weights.
# Rates: GL_SHAPE_UPLINK_MBIT (default 20), GL_SHAPE_PORT_MBIT (80), issue 44's:
# UCX busy-polls, so 8 measuring processes on 2 cores get a quarter core each,
# and at 200 Mbit/s ports the flows inside a leaf were CPU-bound (0.66 of
# their alone rate), which no uplink explains.
# Needs GL_RIG and GL_NSP as multihost_test.sh; exits 77 when the rig is not up.
set -uo pipefail
BIN=$(cd "${1:?usage: shaped_network_test.sh BIN_DIR}" && pwd) || exit 2
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/test_lib.sh"
need_netns_rig shaped_network
UPLINK=${GL_SHAPE_UPLINK_MBIT:-20}
PORT=${GL_SHAPE_PORT_MBIT:-80}
WORK=$(mktemp -d)
shape() { RIG=$GL_RIG NSP=$NSP "$SRC/.ci/rig/shape-two-leaf.sh" "$@" >/dev/null; }
trap 'shape --flat; rm -rf "$WORK"' EXIT
on_node1() {
  XDG_STATE_HOME=$WORK/state OMPI_MCA_plm_rsh_agent=ssh OMPI_MCA_plm_rsh_args="-F $GL_RIG/ssh/ssh_config" \
    ip netns exec "${NSP}n1" unshare --uts sh -c 'hostname node1; exec "$@"' sh "$@"
}
uplink_bytes() {
  ip netns exec "${NSP}br" cat /sys/class/net/up0/statistics/tx_bytes /sys/class/net/up1/statistics/tx_bytes |
    awk '{ s += $1 } END { print s }'
}

shape --uplink "${UPLINK}mbit" --port "${PORT}mbit"

# 1. The links, measured and saved.
on_node1 "$BIN/gpulaunch" linkcheck -H node1,node2,node3,node4 --allow-run-as-root --tls tcp --iterations 50 \
  --sizes 1 --mib-per-size 4 --window 2 --concurrent >"$WORK/linkcheck.out" 2>&1
check "linkcheck over 4 hosts with --concurrent: exit 0" "$?" 0
links=$WORK/state/gpulaunch/links.json
verdict=$(python3 - "$links" "$UPLINK" "$PORT" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
uplink, port = float(sys.argv[2]) * 0.956, float(sys.argv[3]) * 0.956   # Mbit/s of payload
leaf = {"node1": "a", "node2": "a", "node3": "b", "node4": "b"}
out = []
for p in t["pairs"]:
    a, b = p["hosts"]
    want = port if leaf[a] == leaf[b] else uplink
    got = p["gbyte_per_s"] * 8e3
    if abs(got / want - 1) > 0.10:
        out.append("%s-%s %.1f Mbit/s, configured %.1f" % (a, b, got, want))
if len(t["pairs"]) != 6: out.append("%d pairs, not 6" % len(t["pairs"]))
if sorted(tuple(sorted(l["hosts"])) for l in t["leaves"]) != [("node1", "node2"), ("node3", "node4")]:
    out.append("leaves %s" % [l["hosts"] for l in t["leaves"]])
for l in t["leaves"]:   # what the flows moved: up to 15 % below the link's rate, never above (2 %: tbf's burst)
    if not -0.15 <= l["uplink_gbyte_per_s"] * 8e3 / uplink - 1 <= 0.02:
        out.append("uplink of %s %.1f Mbit/s, configured %.1f" % (l["name"], l["uplink_gbyte_per_s"] * 8e3, uplink))
if sorted(s["host"] for s in t["shared_memory"]) != ["node1", "node2", "node3", "node4"]:
    out.append("shared memory of %s" % [s["host"] for s in t["shared_memory"]])
print("; ".join(out) or "ok")
PY
)
check "link file: pairs within 10% of the shaped rates, the two leaves and their uplink, shared memory" "$verdict" ok
[ "$verdict" = ok ] || cat "$WORK/linkcheck.out"
# Round 2 (node1->node3 and node2->node4 up one uplink, node3->node1 and
# node4->node2 up the other): the slower of each two got at most 0.65 of
# what it got alone (an even share is 0.5). Round 1 sends one flow up each
# uplink: its flows lose less (not nothing: the reverse flow's data queues in
# front of each one's ACKs, measured 0.70-0.99), so its slowest is at least
# 0.15 above round 2's.
share() {
  grep "^at once, round $1: " "$WORK/linkcheck.out" | grep -o '[0-9.e-]* Gb/s of [0-9.e-]* Gb/s' |
    awk '{ r = $1 / $4; if (min == "" || r < min) min = r } END { printf "%.2f", min }'
}
shared=$(share 2) separate=$(share 1)
check "flows at once through one uplink share it (slowest of round 2 at most 0.65 of alone)" \
  "$(awk -v s="$shared" 'BEGIN { print (s != "" && s <= 0.65) ? "yes" : "no (" s ")" }')" yes
check "flows on separate uplinks lose less (slowest of round 1 at least 0.15 above round 2's)" \
  "$(awk -v a="$separate" -v b="$shared" 'BEGIN { print (a != "" && a >= b + 0.15) ? "yes" : "no (" a " against " b ")" }')" yes
grep -E '^(at once|leaves|warning)' "$WORK/linkcheck.out" | sed 's/^/     /'  

# 2. The plan: each TP group under one leaf, from a hostfile that interleaves them.
printf 'node1 slots=2\nnode3 slots=2\nnode2 slots=2\nnode4 slots=2\n' >"$WORK/hosts"
job=(-n 8 --layout tp=4,dp=2 --hostfile "$WORK/hosts" --allow-run-as-root --no-summary
     -x OMPI_MCA_mpi_yield_when_idle=1)
prog=("$BIN/transformer_train" --steps 2 --vocab 64 --hidden 64 --seq 128 --batch 16)
on_node1 "$BIN/gpulaunch" "${job[@]}" --dry-run "${prog[@]}" >"$WORK/plan.out" 2>&1
spans=$(awk '$1 ~ /^[0-7]$/ && $2 ~ /^node/ { leaf = ($2 == "node1" || $2 == "node2") ? "a" : "b"; g = int($1 / 4);
             seen[g] = seen[g] leaf } END { for (g = 0; g < 2; g++) { s = seen[g]; if (s !~ /^(a+|b+)$/) print "group " g ": " s } }' \
        "$WORK/plan.out")
check "gpulaunch's plan: every TP group under one leaf" "$spans" ""
check "the plan says the links were measured" "$(grep -c 'links between hosts: measured, all 6 pairs' "$WORK/plan.out")" 1

# 3. Bytes across the uplink: gpulaunch's plan against the forced by-slot order.
before=$(uplink_bytes)
on_node1 "$BIN/gpulaunch" "${job[@]}" "${prog[@]}" >"$WORK/chosen.out" 2>&1
check "the job under gpulaunch's plan: exit 0" "$?" 0
mid=$(uplink_bytes)
on_node1 "$BIN/gpulaunch" "${job[@]}" --policy by-slot "${prog[@]}" >"$WORK/forced.out" 2>&1
check "the job under the by-slot order: exit 0" "$?" 0
after=$(uplink_bytes)
chosen=$((mid - before)) forced=$((after - mid))
echo "     cross-leaf bytes: gpulaunch's plan $chosen, by-slot $forced"
check "cross-leaf bytes of gpulaunch's plan at most a third of the forced plan's" \
  "$([ "$chosen" -gt 0 ] && [ $((chosen * 3)) -le "$forced" ] && echo yes)" yes
check "both plans give the same weights" \
  "$(grep -ho 'weights sha256 [0-9a-f]*' "$WORK/chosen.out" "$WORK/forced.out" | sort -u | wc -l)" 1

finish "shaped_network"
