#!/usr/bin/env bash
# `gpulaunch linkcheck` runs gpulaunch-linkcheck (the one binary that loads
# UCX): gpulaunch itself must not link UCX, and a link measured through it on
# loopback (server and client on this host, forced to tcp) must report one.
# Usage: linkcheck_local_test.sh BIN_DIR
set -uo pipefail
BIN=$(cd "${1:?usage: linkcheck_local_test.sh BIN_DIR}" && pwd) || exit 2
WORK=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$WORK"' EXIT
. "$(dirname "$0")/test_lib.sh"

check "gpulaunch itself links no UCX library" "$(readelf -d "$BIN/gpulaunch" | grep -c 'libuc[pst]')" 0
check "gpulaunch-linkcheck does" "$(readelf -d "$BIN/gpulaunch-linkcheck" | grep -c 'libucp')" 1

# Without the run's secret the server does not start (a usage error).
env -u GPULAUNCH_LINKCHECK_SECRET "$BIN/gpulaunch" linkcheck --server --once --port 1 > /dev/null 2> "$WORK/nosecret.err"
check "linkcheck --server without GPULAUNCH_LINKCHECK_SECRET: exit 2" "$?" 2
check "... naming it" "$(grep -c GPULAUNCH_LINKCHECK_SECRET "$WORK/nosecret.err")" 1

# Both ends share a secret in the environment, never argv.
GPULAUNCH_LINKCHECK_SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
export GPULAUNCH_LINKCHECK_SECRET
# A port of our own: the server listens there until one client came (--once).
port=$((20000 + $$ % 20000))
"$BIN/gpulaunch" linkcheck --server --once --port "$port" --tls tcp > /dev/null 2> "$WORK/server.err" &
server=$!
for _ in $(seq 100); do  # until it listens (up to 10 s on a loaded machine)
  ss -ltnH "sport = :$port" 2>/dev/null | grep -q . && break
  sleep 0.1
done
"$BIN/gpulaunch" linkcheck --client 127.0.0.1 --port "$port" --tls tcp --sizes 4 --iterations 200 --format json \
  > "$WORK/link.json" 2> "$WORK/client.err"
check "linkcheck --client through gpulaunch: exit 0" "$?" 0 || cat "$WORK/client.err"
wait "$server"
check "... and the server ended after its one client with exit 0" "$?" 0
server=
check "... one link over tcp with a latency" \
  "$(python3 -c "import json; l = json.load(open('$WORK/link.json'))['links']; print(len(l), l[0]['latency']['one_way_median_us'] > 0)")" \
  "1 True"
finish "linkcheck_local"
