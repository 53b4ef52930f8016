#!/usr/bin/env bash
# A hostile second user against real MPICH Hydra jobs (docs/security.md,
# "Hydra"): Hydra's control port speaks an unauthenticated protocol, and
# MPICH 4.0 sent the launch's whole environment, the job's secret included, to
# anyone who connected and said "proxy 0"; a connection that hung up failed
# the job. On one host, and across two namespace hosts when the rig is up, it
# asserts: the port listens on the job's address only (never 0.0.0.0); no
# rank holds a listening socket; what the attacker receives never holds the
# secret; a local attacker (proxy 0, hang-ups, a flood of 300) changes
# neither the exit code nor the summary. Needs root (to make the user),
# mpiexec.hydra and python3; exits 77 otherwise.
# Usage: hostile_hydra_test.sh BIN_DIR
set -uo pipefail
BIN=$(cd "${1:?usage: hostile_hydra_test.sh BIN_DIR}" && pwd) || exit 2
SRC=$(cd "$(dirname "$0")/../.." && pwd)
GL=$BIN/gpulaunch
if [ "$(id -u)" -ne 0 ] || ! command -v useradd > /dev/null || ! command -v python3 > /dev/null ||
   ! command -v mpiexec.hydra > /dev/null; then
  echo "hostile_hydra: needs root, useradd, python3 and mpiexec.hydra; skipped"
  exit 77
fi
. "$(dirname "$0")/test_lib.sh"
NSP=${GL_NSP:-glr}
WORK=$(mktemp -d)
chmod 755 "$WORK"
ATTACKER=glhydra$$
cleanup() {
  getent passwd "$ATTACKER" > /dev/null && userdel "$ATTACKER"
  [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
useradd -M -s /usr/sbin/nologin "$ATTACKER" || { echo "hostile_hydra: useradd failed"; exit 1; }
cp "$SRC/tests/e2e/hostile/attack_hydra.py" "$WORK/attack.py"
# The rank: how many listening sockets it holds (state 0A in /proc/net/tcp),
# then a wait long enough for the attacks. Hydra relays the ranks' output
# in the pieces it reads, so two ranks' lines may share one: count matches.
cat > "$WORK/rank.py" <<'PY'
import os, sys, time
inodes = set()
for fd in os.listdir("/proc/self/fd"):
    try:
        t = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        continue
    if t.startswith("socket:["):
        inodes.add(t[8:-1])
listening = 0
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    for line in open(table).readlines()[1:]:
        f = line.split()
        if f[3] == "0A" and f[9] in inodes:
            listening += 1
print(f"rank listeners={listening} private={os.environ.get('JOB_PRIVATE_VALUE')}", flush=True)
time.sleep(float(sys.argv[1]))
PY
chmod 644 "$WORK/attack.py" "$WORK/rank.py"

# The newest process named $2 among the descendants of $1 (other tests may
# run Hydra at the same time).
descendant() {
  local p found=
  for p in $(pgrep -P "$1"); do
    [ "$(cat "/proc/$p/comm" 2> /dev/null)" = "$2" ] && found=$p
    [ -z "$found" ] && found=$(descendant "$p" "$2")
  done
  echo "$found"
}
# Waits for the Hydra job started by the background job $1 to listen; sets
# PORT_HOST and PORT (mpiexec.hydra's listening socket, from its /proc/net/tcp)
# and SECRET (read, as root, from mpiexec.hydra's environment).
find_hydra() {
  PORT_HOST= PORT= SECRET=
  local hydra inode entry
  for _ in $(seq 150); do
    hydra=$(descendant "$1" mpiexec.hydra)
    if [ -n "$hydra" ]; then
      for inode in $(ls -l "/proc/$hydra/fd" 2> /dev/null | sed -n 's/.*socket:\[\([0-9]*\)\]/\1/p'); do
        entry=$(awk -v inode="$inode" '$4 == "0A" && $10 == inode {print $2}' "/proc/$hydra/net/tcp" 2> /dev/null)
        [ -n "$entry" ] && break
      done
      SECRET=$(tr '\0' '\n' < "/proc/$hydra/environ" 2> /dev/null | sed -n 's/^GPULAUNCH_CONTROL_SECRET=//p')
      if [ -n "$entry" ] && [ -n "$SECRET" ]; then
        local a=${entry%%:*}
        PORT=$((16#${entry##*:}))
        PORT_HOST=$((16#${a:6:2})).$((16#${a:4:2})).$((16#${a:2:2})).$((16#${a:0:2}))
        # Wait for the proxies too: the attack is on a running job.
        [ -n "$(descendant "$hydra" hydra_pmi_proxy)$(descendant "$hydra" ssh)" ] && return 0
      fi
    fi
    sleep 0.1
  done
  return 1
}
# The local addresses that listen on port $1 (hex, as /proc/net/tcp writes them).
listen_addresses() { awk -v port="$(printf '%04X' "$1")" '$4 == "0A" && $2 ~ (":" port "$") {split($2, a, ":"); print a[1]}' "${2:-/proc/net/tcp}" | sort -u | tr '\n' ' '; }

# The three attacks on Hydra's port (attack_hydra.py: proxy0, hangup, flood)
# as the second user, one after the other, each printing to $WORK/NAME-MODE.out;
# after NAME, what to run them through (ip netns exec ..., say).
attack_hydra() {
  local name=$1 mode; shift
  for mode in proxy0 hangup flood; do
    "$@" runuser -u "$ATTACKER" -- python3 "$WORK/attack.py" "$PORT_HOST" "$PORT" "$mode" > "$WORK/$name-$mode.out" 2> /dev/null
  done
}

# JOB_PRIVATE_VALUE: a user's own variable (a token, say), which must not
# reach Hydra's port either.
export JOB_PRIVATE_VALUE=hf_token_of_the_user
run_one_host() {
  "$GL" --launcher hydra -n 2 --allow-run-as-root --oversubscribe --summary "$WORK/$1.json" python3 "$WORK/rank.py" "$2" \
    > "$WORK/$1.out" 2> "$WORK/$1.err"
}

# --- 1. One host.
run_one_host clean 1
clean_rc=$?
check "one host, no attacker: exit 0" "$clean_rc" 0
check "... no rank holds a listening socket (Hydra's is close-on-exec)" "$(grep -o 'rank listeners=0' "$WORK/clean.out" | wc -l)" 2
run_one_host attacked 8 &
job=$!
if find_hydra "$job"; then
  check "one host: Hydra's port is on 127.0.0.1 only" "$PORT_HOST $(listen_addresses "$PORT")" "127.0.0.1 0100007F "
  attack_hydra attack
  check "... the attacker connected (proxy 0)" "$(grep -c '^proxy0 connected=1 ' "$WORK/attack-proxy0.out")" 1
  check "... and received nothing" "$(grep -c 'received=0$' "$WORK/attack-proxy0.out")" 1
  check "... in particular not the secret" "$(grep -a -c "$SECRET" "$WORK/attack-proxy0.out")" 0
  check "... hung up 20 times" "$(grep -c '^hangup connected=20 ' "$WORK/attack-hangup.out")" 1
  check "... held 300 connections" "$(grep -c '^flood connected=300 ' "$WORK/attack-flood.out")" 1
else
  bad "one host: Hydra's proxy and port not found"
fi
wait "$job"
check_same_end "one host, attacked" "$?" "$clean_rc" "$WORK/attacked.json" "$WORK/clean.json" "$WORK/attacked.err"
check "... the ranks ran to their end" "$(grep -o 'rank listeners=0' "$WORK/attacked.out" | wc -l)" 2
check "... and saw the user's own variables" "$(grep -o 'private=hf_token_of_the_user' "$WORK/attacked.out" | wc -l)" 2

# The job's own user is out of scope (it can read the environment anyway),
# but what Hydra sends to a proxy 0 it takes for real must hold no secret.
run_one_host own 6 &
job=$!
if find_hydra "$job"; then
  python3 "$WORK/attack.py" "$PORT_HOST" "$PORT" proxy0 > "$WORK/attack-own.out" 2> /dev/null
  check "the job's own user as proxy 0: Hydra answers" "$(grep -a -c '^proxy0 connected=1 received=[1-9]' "$WORK/attack-own.out")" 1
  check "... without the secret, the slot table or the job's variables" \
    "$(grep -a -c -e "$SECRET" -e GPULAUNCH_ -e JOB_PRIVATE_VALUE "$WORK/attack-own.out")" 0
else
  bad "own user: Hydra's proxy and port not found"
fi
wait "$job"

# --- 2. Two namespace hosts: Hydra's proxies over ssh (the environment
#     through gpulaunch-hydra-ssh), its port on node1's address.
if [ -n "${GL_RIG:-}" ] && [ -f "$GL_RIG/ssh/ssh_config" ] && ip netns list 2> /dev/null | grep -q "^${NSP}n1"; then
  printf '#!/bin/sh\nexec ssh -F "%s" "$@"\n' "$GL_RIG/ssh/ssh_config" > "$WORK/ssh-rig"
  chmod 755 "$WORK/ssh-rig"
  on_node1() {
    HYDRA_LAUNCHER_EXEC="$WORK/ssh-rig" ip netns exec "${NSP}n1" unshare --uts sh -c 'hostname node1; exec "$@"' sh "$@"
  }
  run_two_hosts() {
    # shellcheck disable=SC2086
    on_node1 "$GL" ${GL_EXTRA:-} --launcher hydra -H node1:2,node2:2 --summary "$WORK/$1.json" python3 "$WORK/rank.py" "$2" \
      > "$WORK/$1.out" 2> "$WORK/$1.err"
  }
  run_two_hosts clean2 1
  clean2_rc=$?
  check "two hosts, no attacker: exit 0" "$clean2_rc" 0
  check "... every rank ran, none holds a listener" "$(grep -o 'rank listeners=0' "$WORK/clean2.out" | wc -l)" 4
  run_two_hosts attacked2 8 &
  job=$!
  if find_hydra "$job"; then
    check "two hosts: Hydra's port is on node1's address only" \
      "$PORT_HOST $(ip netns exec "${NSP}n1" cat /proc/net/tcp | listen_addresses "$PORT" /dev/stdin)" "10.200.0.1 0100C80A "
    attack_hydra attack2 ip netns exec "${NSP}n1"
    check "... a local attacker on node1 received nothing" "$(grep -c 'received=0$' "$WORK/attack2-proxy0.out")" 1
  else
    bad "two hosts: Hydra's proxy and port not found"
  fi
  wait "$job"
  check_same_end "two hosts, attacked on node1" "$?" "$clean2_rc" "$WORK/attacked2.json" "$WORK/clean2.json" "$WORK/attacked2.err"
  # From another host Hydra cannot tell a proxy from an attacker: the job may
  # fail (docs/security.md), but the secret is not what it hands out.
  GL_EXTRA="--timeout 60" run_two_hosts remote 6 &
  job=$!
  if find_hydra "$job"; then
    ip netns exec "${NSP}n2" runuser -u "$ATTACKER" -- python3 "$WORK/attack.py" "$PORT_HOST" "$PORT" proxy0 \
      > "$WORK/attack-remote.out" 2> /dev/null
    check "an attacker on node2 as proxy 0: connected" "$(grep -c '^proxy0 connected=1 ' "$WORK/attack-remote.out")" 1
    check "... and got no secret, no slot table" \
      "$(grep -a -c -e "$SECRET" -e GPULAUNCH_ -e JOB_PRIVATE_VALUE "$WORK/attack-remote.out")" 0
  else
    bad "remote attacker: Hydra's proxy and port not found"
  fi
  wait "$job"
  check "... the job still ended (any code) and wrote its summary" "$([ -s "$WORK/remote.json" ] && echo yes)" yes
else
  echo "hostile_hydra: the namespace rig is not up; the two-host cases were skipped"
fi
finish "hostile_hydra"
