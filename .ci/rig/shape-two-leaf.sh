#!/usr/bin/env bash
# Turns the running netns rig (netns-up.sh, 4 hosts) into a two-tier network:
# node1 and node2 on one leaf bridge, node3 and node4 on another, the leaves
# joined by one veth link (the uplink) that every cross-leaf byte shares.
# With rates given, tc tbf shapes the uplink (both directions) and each
# host's port (both directions). netem is not available on these kernels;
# tbf is. Undo: shape-two-leaf.sh --flat (one bridge again, no shaping).
# Usage: RIG=... [NSP=glr] .ci/rig/shape-two-leaf.sh [--uplink RATE] [--port RATE] | --flat
#   RATE as tc takes it: 500mbit, 2gbit, ...
set -euo pipefail
NSP=${NSP:-glr}
N=${N:-4}
uplink="" port="" flat=0
while [ $# -gt 0 ]; do
  case "$1" in
    --uplink) uplink=${2:?--uplink needs a rate, e.g. 500mbit}; shift 2 ;;
    --port) port=${2:?--port needs a rate, e.g. 2gbit}; shift 2 ;;
    --flat) flat=1; shift ;;
    *) echo "shape-two-leaf.sh: unknown argument '$1'; use --uplink RATE, --port RATE or --flat" >&2; exit 2 ;;
  esac
done
br() { ip netns exec "${NSP}br" "$@"; }
host() { local i=$1; shift; ip netns exec "${NSP}n$i" "$@"; }
# A token bucket on a device's egress: burst of 64 KiB (about a tbf
# default for gigabit rates), 50 ms of queue.
shape() {
  local where=$1 dev=$2 rate=$3
  $where tc qdisc replace dev "$dev" root tbf rate "$rate" burst 64kb latency 50ms
}
unshape() { local where=$1 dev=$2; $where tc qdisc del dev "$dev" root 2>/dev/null || true; }

# Back to one bridge, nothing shaped.
br ip link del up0 2>/dev/null || true
br ip link del br1 2>/dev/null || true
for i in $(seq 1 "$N"); do
  br ip link set "${NSP}v$i" master br0
  unshape br "${NSP}v$i"
  unshape "host $i" eth0
done
[ "$flat" = 1 ] && { echo "rig: one bridge, no shaping"; exit 0; }

br ip link add br1 type bridge
br ip link set br1 up
for i in $(seq $((N / 2 + 1)) "$N"); do br ip link set "${NSP}v$i" master br1; done
br ip link add up0 type veth peer name up1
br ip link set up0 master br0 up
br ip link set up1 master br1 up
if [ -n "$uplink" ]; then
  shape br up0 "$uplink"
  shape br up1 "$uplink"
fi
if [ -n "$port" ]; then
  for i in $(seq 1 "$N"); do
    shape br "${NSP}v$i" "$port"   # into the host
    shape "host $i" eth0 "$port"   # out of the host
  done
fi
echo "rig: leaves node1-node$((N / 2)) | node$((N / 2 + 1))-node$N, uplink ${uplink:-unshaped}, ports ${port:-unshaped}"
