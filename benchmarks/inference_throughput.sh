#!/usr/bin/env bash
# Throughput of the transformer inference example at pp = 2 (two pipeline
# stages, two ranks) against its anchor pp = 1 (one rank), same model and
# batch, in the same run: 3 runs each, interleaved, medians compared. Also
# checks that every run wrote the same bytes.
# Usage: benchmarks/inference_throughput.sh [BIN_DIR]
set -euo pipefail
BIN=$(cd "${1:-$(dirname "$0")/../build/bin}" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MODEL=(--hidden 256 --heads 8 --blocks 8 --seq 64 --vocab 1024 --batch 32 --microbatches 8)
run() {  # N LAYOUT -> tokens/s
  "$BIN/gpulaunch" -n "$1" "$BIN/transformer_infer" "${MODEL[@]}" --layout "$2" --output "$WORK/out.$2.bin" |
    sed -n 's/.* \([0-9.]*\) tokens\/s.*/\1/p'
}
one=(); two=()
for _ in 1 2 3; do
  one+=("$(run 1 pp=1)")
  two+=("$(run 2 pp=2)")
done
cmp -s "$WORK/out.pp=1.bin" "$WORK/out.pp=2.bin" || { echo "outputs differ" >&2; exit 1; }
median() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
m1=$(median "${one[@]}"); m2=$(median "${two[@]}")
echo "inference throughput, tokens/s (median of 3): pp=1 $m1 (anchor), pp=2 $m2, ratio $(echo "$m2 / $m1" | bc -l | cut -c1-4)"
echo "runs: pp=1 ${one[*]}; pp=2 ${two[*]}; $(nproc) cores"
