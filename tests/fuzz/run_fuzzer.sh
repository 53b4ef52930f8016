#!/usr/bin/env bash
# Runs one libFuzzer target for a fixed time from a seed corpus that it does
# not modify. Usage: run_fuzzer.sh FUZZER SEED_DIR SECONDS
set -euo pipefail
fuzzer=${1:?usage: run_fuzzer.sh FUZZER SEED_DIR SECONDS} seeds=${2:?} seconds=${3:?}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/corpus" "$scratch/crashes"
# -max_len 4096: the parsers read lines and short files; longer inputs only slow the search.
# -timeout 120: a hang detector, not a speed test. One input may legitimately
# take seconds under ASan on a loaded 2-core machine (65,536 host names, three
# parses); 10 s failed there once at random. A loop that never ends still fails.
# -rss_limit_mb / -malloc_limit_mb: an input that makes a parser hold more
# than 2 GiB in all, or ask for 512 MiB at once, is a finding (issue 22:
# memory grows with what is used, never with what the text promises).
status=0
"$fuzzer" -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=120 -print_final_stats=1 \
  -artifact_prefix="$scratch/crashes/" "$scratch/corpus" "$seeds" > "$scratch/log" 2>&1 || status=$?
tail -n 40 "$scratch/log"
for crash in "$scratch"/crashes/*; do
  [ -e "$crash" ] || continue
  echo "input that failed ($crash), as hex:"
  od -A d -t x1 "$crash" | head -n 20
done
exit "$status"
