#!/usr/bin/env bash
# Installs what is missing, builds, and runs 16 ranks of the bundled example
# through gpulaunch on this machine (oversubscribed where it has fewer slots).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
flags=(-n 16)
slots=$(nproc)
[ "$slots" -ge 16 ] || flags+=(--oversubscribe)
[ "$(id -u)" -ne 0 ] || flags+=(--allow-run-as-root)
echo "+ build/bin/gpulaunch ${flags[*]} build/bin/rank_report"
exec build/bin/gpulaunch "${flags[@]}" build/bin/rank_report
