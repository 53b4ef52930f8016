#!/usr/bin/env bash
# Configures and builds (binaries in $BUILD_DIR/bin).
#   scripts/build.sh             everything: tools, runtime, examples, tests and benchmarks
#   scripts/build.sh --product   the tools, the runtime and the examples only: what
#                                scripts/install-deps.sh without --test can build
# Environment: BUILD_DIR (default build), WERROR=ON to fail on warnings.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
extras=ON
case "${1:-}" in
  --product) extras=OFF ;;
  "") ;;
  *) echo "build.sh: unknown argument '$1'; use --product or nothing" >&2; exit 2 ;;
esac
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPULAUNCH_WERROR="${WERROR:-OFF}" \
  -DGPULAUNCH_BUILD_TESTS="$extras" -DGPULAUNCH_BUILD_BENCHMARKS="$extras" > /dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
