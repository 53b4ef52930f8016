#!/usr/bin/env bash
# The README's first command: installs what is missing (the base packages
# only), builds the tools, the runtime and the examples (no tests, no
# benchmarks), and shows the product on this machine:
#   1. 16 ranks of the bundled example placed (--display-map) and reporting;
#   2. a 2-stage pipeline inference through gpulaunch, compared byte for byte
#      with the one-process run (`identical: yes`);
#   3. what to try next.
# Environment: BUILD_DIR (default build), WERROR=ON to fail on warnings.
# Exit status: the first failing step's (1 when the outputs differ).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
scripts/install-deps.sh
scripts/build.sh --product
BIN=$BUILD_DIR/bin

flags=()
[ "$(nproc)" -ge 16 ] || flags+=(--oversubscribe)   # more ranks than cores here
[ "$(id -u)" -ne 0 ] || flags+=(--allow-run-as-root)
# The demo's files (outputs, gpulaunch's summaries) stay out of the checkout.
work=$(mktemp -d "${TMPDIR:-/tmp}/gpulaunch-example.XXXXXX")
trap 'rm -rf "$work"' EXIT
show() { echo "+ $*"; "$@"; }

echo
echo "== 1. gpulaunch -n 16: the placement, then every rank reports"
# Ranks print in whatever order they finish: sorted by rank for reading.
show "$BIN/gpulaunch" -n 16 "${flags[@]}" --display-map --summary "$work/summary-16.json" \
  "$BIN/rank_report" > "$work/ranks.txt"
awk '/^rank [0-9]+\//{exit} {print}' "$work/ranks.txt"
grep '^rank [0-9]*/' "$work/ranks.txt" | sort -k2,2n
grep '^rank_report:' "$work/ranks.txt"

echo
echo "== 2. a transformer cut into 2 pipeline stages gives the one-process bytes"
show "$BIN/gpulaunch" -n 1 "${flags[@]}" --summary "$work/summary-1.json" \
  "$BIN/transformer_infer" --output "$work/one-process.bin"
show "$BIN/gpulaunch" -n 2 "${flags[@]}" --summary "$work/summary-2.json" \
  "$BIN/transformer_infer" --parallel pipeline --stages 2 --output "$work/two-stages.bin"
one=$(sha256sum < "$work/one-process.bin" | cut -d' ' -f1)
two=$(sha256sum < "$work/two-stages.bin" | cut -d' ' -f1)
echo "one process:       sha256 $one"
echo "2-stage pipeline:  sha256 $two"
if cmp -s "$work/one-process.bin" "$work/two-stages.bin"; then
  echo "identical: yes"
else
  echo "identical: NO ($(cmp "$work/one-process.bin" "$work/two-stages.bin" 2>&1 || true))"
  exit 1
fi

cat <<EOF

== What next
  $BIN/gpulaunch plan -n 32 --layout tp=8,pp=2 --synthetic 'leaf:2 node:4 gpu:8 nic:4' --explain
      where 32 ranks would go on 8 GPU servers under 2 switches, and why (docs/plan.md)
  $BIN/gpulaunch check
      pre-flight checks of every host before a job (docs/check.md)
  $BIN/gpulaunch sim --trace tests/data/traces/tiresias/60_job.csv --cluster 'leaf:2 node:2 gpu:4'
      the multi-tenant scheduler on a real job trace, against two baselines (docs/sim.md)
  scripts/test.sh, then benchmarks/run-suite --quick
      every test, then the benchmark suite (ratios against mpirun, MPI_Allreduce, ...) (docs/benchmarks.md)
EOF
