#!/usr/bin/env bash
# linkcheck against its anchor, UCX's own ucx_perftest, on the same pair
# (loopback here, both forced to tcp), in one run: tag latency (8 bytes) and
# tag bandwidth (4 MiB), each tool's median, and the ratio linkcheck/perftest.
# Usage: benchmarks/linkcheck_vs_perftest.sh BIN_DIR [PORT]
set -euo pipefail
BIN=${1:?usage: linkcheck_vs_perftest.sh BIN_DIR [PORT]}
PORT=${2:-13390}
export UCX_TLS=tcp
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

perftest() {  # test, message size, iterations -> the "final" line's fields
  ucx_perftest -p "$PORT" -t "$1" -s "$2" -n "$3" > "$work/server.txt" 2>&1 &
  local server=$!
  sleep 0.5
  ucx_perftest -p "$PORT" -t "$1" -s "$2" -n "$3" 127.0.0.1 > "$work/client.txt" 2>&1
  wait "$server" || true
  grep -E '^ *Final:' "$work/client.txt" || tail -3 "$work/client.txt"
}
# Final: iterations, latency 50%ile/avg/overall (us, one-way), bandwidth avg/overall (MB/s), msg rate
lat_line=$(perftest tag_lat 8 20000)
bw_line=$(perftest tag_bw 4194304 200)
perf_lat=$(awk '{print $3}' <<< "$lat_line")       # median one-way latency, us
perf_bw=$(awk '{print $6}' <<< "$bw_line")         # average bandwidth, MB/s

# Both halves share a secret; the server allows what the client measures (docs/security.md).
GPULAUNCH_LINKCHECK_SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
export GPULAUNCH_LINKCHECK_SECRET
measure=(--port "$PORT" --tls tcp --sizes 4 --iterations 20000)
"$BIN/gpulaunch" linkcheck --server --once "${measure[@]}" 2> "$work/lc-server.txt" &
server=$!
sleep 0.3
"$BIN/gpulaunch" linkcheck --client 127.0.0.1 "${measure[@]}" --format json > "$work/lc.json" 2> /dev/null
wait "$server" || true
lc_lat=$(python3 -c "import json;print(json.load(open('$work/lc.json'))['links'][0]['latency']['one_way_median_us'])")
lc_bw=$(python3 -c "import json;print(json.load(open('$work/lc.json'))['links'][0]['bandwidth'][0]['mib_per_s'])")
printf 'one-way latency (8 B): ucx_perftest %s us, linkcheck %s us, ratio %.2f\n' "$perf_lat" "$lc_lat" \
  "$(python3 -c "print($lc_lat / $perf_lat)")"
printf 'bandwidth (4 MiB):     ucx_perftest %s MB/s, linkcheck %.1f MiB/s (%.1f MB/s), ratio %.2f\n' "$perf_bw" \
  "$lc_bw" "$(python3 -c "print($lc_bw * 1.048576)")" "$(python3 -c "print($lc_bw * 1.048576 / $perf_bw)")"
