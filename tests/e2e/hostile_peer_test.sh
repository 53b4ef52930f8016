#!/usr/bin/env bash
# A hostile second user against real jobs (docs/security.md): an
# unprivileged Unix user made for this test replays every attack of
# tests/e2e/hostile/attack_control.py against a running job's control
# channel, on one host (its Unix socket) and, when the namespace rig is up,
# against a two-host job's TCP listener from the launch host and from the
# other host. Each case asserts that the job ends as it would without the
# attacker (exit code, no root cause in the summary), that the victim process
# the attacker names lives, that gpulaunch's memory stays under 100 MB, that
# no argv anywhere carries the job's secret, and that the attacker was never
# welcomed as a rank. Needs root (to make the user); exits 77 otherwise.
# Usage: hostile_peer_test.sh BIN_DIR
set -uo pipefail
BIN=$(cd "${1:?usage: hostile_peer_test.sh BIN_DIR}" && pwd) || exit 2
SRC=$(cd "$(dirname "$0")/../.." && pwd)
GL=$BIN/gpulaunch
if [ "$(id -u)" -ne 0 ] || ! command -v useradd > /dev/null || ! command -v python3 > /dev/null; then
  echo "hostile_peer: needs root, useradd and python3 (it makes a second user); skipped"
  exit 77
fi
NSP=${GL_NSP:-glr}
WORK=$(mktemp -d)
chmod 755 "$WORK"
ATTACKER=glhostile$$
victim=
cleanup() {
  [ -n "$victim" ] && kill "$victim" 2> /dev/null
  getent passwd "$ATTACKER" > /dev/null && userdel "$ATTACKER"
  rm -rf "$WORK"
}
trap cleanup EXIT
useradd -M -s /usr/sbin/nologin "$ATTACKER" || { echo "hostile_peer: useradd failed"; exit 1; }
cp "$SRC/tests/e2e/hostile/attack_control.py" "$WORK/attack.py"
cp "$SRC/tests/e2e/hostile/attack_flood.py" "$WORK/flood.py"
chmod 755 "$WORK/attack.py" "$WORK/flood.py"
. "$(dirname "$0")/test_lib.sh"

# A process of root's that the attacker would like killed.
setsid sleep 1000 < /dev/null > /dev/null 2>&1 &
victim=$!

# The job's secret is 64 hex digits; no process's argv may carry one.
argv_with_secret() {
  local n=0
  for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f" 2> /dev/null | grep -Eq '(^|[^0-9a-f])[0-9a-f]{64}([^0-9a-f]|$)' && n=$((n + 1))
  done
  echo "$n"
}
# gpulaunch's peak memory (VmHWM, kB) while it still runs.
peak_kb() { awk '/^VmHWM/ {print $2}' "/proc/$1/status" 2> /dev/null || echo 0; }

# --- 1. One host: the control socket is a Unix socket in a 0700 folder.
"$GL" -n 2 --allow-run-as-root --oversubscribe --summary "$WORK/clean.json" sh -c 'sleep 1' > /dev/null 2>&1
clean_rc=$?
check "one host, no attacker: exit 0" "$clean_rc" 0
touch "$WORK/marker"
"$GL" -n 2 --allow-run-as-root --oversubscribe --summary "$WORK/attacked.json" sh -c 'sleep 12' \
  > "$WORK/job.out" 2> "$WORK/job.err" &
job=$!
socket=
for _ in $(seq 100); do
  socket=$(find "${TMPDIR:-/tmp}" -maxdepth 2 -path '*/gpulaunch.*/control' -newer "$WORK/marker" -type s 2> /dev/null | head -n 1)
  [ -n "$socket" ] && break
  sleep 0.1
done
check "one host: gpulaunch listens on a Unix socket" "$([ -S "$socket" ] && echo yes)" yes
check "... in a folder only its owner can enter" "$(stat -c %a "$(dirname "$socket")")" 700
# Listening TCP sockets among a process's descriptors (state 0A in /proc/PID/net/tcp).
tcp_listeners() {
  local n=0 i
  for i in $(ls -l "/proc/$1/fd" 2> /dev/null | sed -n 's/.*socket:\[\([0-9]*\)\]/\1/p'); do
    awk -v inode="$i" '$4 == "0A" && $10 == inode' "/proc/$1/net/tcp" | grep -q . && n=$((n + 1))
  done
  echo "$n"
}
check "... and on no TCP port of its own" "$(tcp_listeners "$job")" 0
runuser -u "$ATTACKER" -- python3 "$WORK/attack.py" unix "$socket" "$victim" > "$WORK/attack-unix.out" 2>&1
check "... the attacker cannot even connect" \
  "$(grep -c 'cannot connect (PermissionError' "$WORK/attack-unix.out")" "$(grep -c '^ATTACK .*: ' "$WORK/attack-unix.out" | awk '{print $1 - 1}')"
check "... and was never welcomed" "$(grep -c '^welcomed 0$' "$WORK/attack-unix.out")" 1
shim=$(pgrep -P "$(pgrep -n -x mpirun)" -f gpulaunch-shim 2> /dev/null | head -n 1)
if [ -n "$shim" ]; then
  check "... nor read a rank's environment (the secret's place)" \
    "$(runuser -u "$ATTACKER" -- cat "/proc/$shim/environ" > /dev/null 2>&1; echo $?)" 1
fi
check "... no argv carries the job's secret" "$(argv_with_secret)" 0
peak=$(peak_kb "$job")
wait "$job"
check_same_end "one host, attacked" "$?" "$clean_rc" "$WORK/attacked.json" "$WORK/clean.json" "$WORK/job.err"
check "... the victim lives" "$(kill -0 "$victim" 2> /dev/null && echo alive)" alive
check "... gpulaunch stayed under 100 MB" "$([ "${peak:-0}" -lt 102400 ] && echo yes)" yes

# --- 1b. One host whose job folder's path cannot hold a Unix socket (a
#     space in TMPDIR): an abstract Unix socket, never TCP, and another user
#     cannot get in.
mkdir -p "$WORK/x y"
TMPDIR="$WORK/x y" "$GL" -n 2 --allow-run-as-root --oversubscribe --summary "$WORK/space.json" sh -c 'sleep 6' \
  > /dev/null 2> "$WORK/space.err" &
job=$!
abstract=
for _ in $(seq 100); do
  gl=$(pgrep -n -f -- "--summary $WORK/space.json")
  for i in $(ls -l "/proc/$gl/fd" 2> /dev/null | sed -n 's/.*socket:\[\([0-9]*\)\]/\1/p'); do
    abstract=$(awk -v inode="$i" '$7 == inode && $8 ~ /^@gpulaunch-/ {print $8}' /proc/net/unix)
    [ -n "$abstract" ] && break
  done
  [ -n "$abstract" ] && break
  sleep 0.1
done
check "TMPDIR with a space: gpulaunch listens on an abstract Unix socket" "${abstract:0:11}" "@gpulaunch-"
check "... and on no TCP port" "$(tcp_listeners "$gl")" 0
runuser -u "$ATTACKER" -- python3 -c '
import socket, sys
ok = 0
for _ in range(300):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect("\0" + sys.argv[1][1:]); s.settimeout(2); ok += s.recv(100) != b""
    except OSError:
        pass
print("greeted", ok)' "$abstract" > "$WORK/abstract.out" 2>&1
check "... 300 connections of another user: none greeted" "$(cat "$WORK/abstract.out")" "greeted 0"
wait "$job"
check "... the job's exit code is its own" "$?" 0
check "... the summary counts the refused connections" \
  "$(python3 -c "import json; print(json.load(open('$WORK/space.json'))['rejected_connections']['count'] >= 300)")" True

# --- 2. Two hosts on the namespace rig: TCP, bound to the advertised address.
if [ -n "${GL_RIG:-}" ] && [ -f "$GL_RIG/ssh/ssh_config" ] && ip netns list 2> /dev/null | grep -q "^${NSP}n1"; then
  on_node1() {
    OMPI_MCA_plm_rsh_agent=ssh OMPI_MCA_plm_rsh_args="-F $GL_RIG/ssh/ssh_config" \
      ip netns exec "${NSP}n1" unshare --uts sh -c 'hostname node1; exec "$@"' sh "$@"
  }
  on_node1 "$GL" --allow-run-as-root -H node1:2,node2:2 --summary "$WORK/clean2.json" sh -c 'sleep 1' > /dev/null 2>&1
  clean2_rc=$?
  check "two hosts, no attacker: exit 0" "$clean2_rc" 0
  on_node1 "$GL" --allow-run-as-root -H node1:2,node2:2 --summary "$WORK/attacked2.json" sh -c 'sleep 20' \
    > "$WORK/job2.out" 2> "$WORK/job2.err" &
  job=$!
  listen=
  for _ in $(seq 100); do
    # The background job is a subshell; gpulaunch is the process at the end of its exec chain.
    gl=$(pgrep -n -f -- "--summary $WORK/attacked2.json")
    inodes=$(ls -l "/proc/$gl/fd" 2> /dev/null | sed -n 's/.*socket:\[\([0-9]*\)\]/\1/p')
    # state 0A: LISTEN; the local address as /proc/net/tcp writes it (hex, little-endian).
    for i in $inodes; do
      listen=$(awk -v inode="$i" '$4 == "0A" && $10 == inode {print $2}' "/proc/$gl/net/tcp" 2> /dev/null)
      [ -n "$listen" ] && break
    done
    [ -n "$listen" ] && break
    sleep 0.1
  done
  check "two hosts: gpulaunch listens on node1's address, not 0.0.0.0" "${listen%%:*}" 0100C80A
  port=$((16#${listen#*:}))
  for from in 1 2; do
    ip netns exec "${NSP}n$from" runuser -u "$ATTACKER" -- python3 "$WORK/attack.py" tcp 10.200.0.1 "$port" "$victim" \
      > "$WORK/attack-tcp$from.out" 2>&1
    check "two hosts, attacker on node$from: reached the server" "$(grep -c 'greeted=True' "$WORK/attack-tcp$from.out")" 7
    check "... every attack closed without a welcome" "$(grep -c 'closed=True welcomed=False' "$WORK/attack-tcp$from.out")" 7
    check "... welcomed 0 times" "$(grep -c '^welcomed 0$' "$WORK/attack-tcp$from.out")" 1
  done
  check "... no argv carries the job's secret" "$(argv_with_secret)" 0
  peak=$(peak_kb "$gl")
  wait "$job"
  check_same_end "two hosts, attacked" "$?" "$clean2_rc" "$WORK/attacked2.json" "$WORK/clean2.json" "$WORK/job2.err"
  check "... every rank ended with code 0" \
    "$(python3 -c "import json; r=json.load(open('$WORK/attacked2.json'))['ranks']; print(sum(1 for x in r if x.get('exit_code') == 0), len(r))")" "4 4"
  check "... the victim lives" "$(kill -0 "$victim" 2> /dev/null && echo alive)" alive
  check "... gpulaunch stayed under 100 MB" "$([ "${peak:-0}" -lt 102400 ] && echo yes)" yes

  # --- 3. A flood at start-up: 4 hosts, the second user holds 300 (from
  #     node2) and 2,000 (from node1) connections to the listener from the
  #     moment it appears, reopening any the server closes. The job ends
  #     with its own exit code, and the summary names the strangers.
  hosts4=node1:1,node2:1,node3:1,node4:1
  start=$(date +%s%N)
  on_node1 "$GL" --allow-run-as-root -H "$hosts4" --summary "$WORK/clean4.json" sh -c 'exit 3' > /dev/null 2>&1
  clean4_rc=$?
  clean4_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  check "4 hosts, no flood: the job's own exit code 3" "$clean4_rc" 3
  for flood in "2 300" "1 2000"; do
    from=${flood% *} count=${flood#* }
    start=$(date +%s%N)
    on_node1 "$GL" --allow-run-as-root -H "$hosts4" --summary "$WORK/flood$count.json" sh -c 'exit 3' \
      > /dev/null 2> "$WORK/flood$count.err" &
    job=$!
    port=
    for _ in $(seq 200); do
      gl=$(pgrep -n -f -- "--summary $WORK/flood$count.json")
      for i in $(ls -l "/proc/$gl/fd" 2> /dev/null | sed -n 's/.*socket:\[\([0-9]*\)\]/\1/p'); do
        port=$(awk -v inode="$i" '$4 == "0A" && $10 == inode {split($2, a, ":"); print a[2]}' "/proc/$gl/net/tcp" 2> /dev/null)
        [ -n "$port" ] && break
      done
      [ -n "$port" ] && break
      sleep 0.02
    done
    ip netns exec "${NSP}n$from" runuser -u "$ATTACKER" -- python3 "$WORK/flood.py" 10.200.0.1 "$((16#${port:-0}))" \
      "$count" 25 > "$WORK/flood$count.out" 2>&1 &
    attacker=$!
    wait "$job"
    rc=$?
    took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
    kill "$attacker" 2> /dev/null
    wait "$attacker" 2> /dev/null
    echo "note: 4 hosts, $count held connections from node$from: ${took_ms} ms (no flood: ${clean4_ms} ms)"
    check "flood of $count from node$from: the job's own exit code" "$rc" "$clean4_rc"
    check "... the summary's exit code too" "$(summary_field "$WORK/flood$count.json" exit_code)" 3
    check "... and the refused connections, from node$from's address" \
      "$(python3 -c "import json; r=json.load(open('$WORK/flood$count.json')).get('rejected_connections', {}); print(r.get('from', {}).get('10.200.0.$from', 0) > 0)")" True
    check "... said on stderr" "$(grep -c '^gpulaunch: note: [0-9]* connection(s) to the job.s control channel' "$WORK/flood$count.err")" 1
  done
else
  echo "hostile_peer: the namespace rig is not up; the two-host cases were skipped"
fi
finish "hostile_peer"
