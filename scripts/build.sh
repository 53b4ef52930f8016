#!/usr/bin/env bash
# Configures and builds into build/ (binaries in build/bin).
# Environment: BUILD_DIR (default build), WERROR=ON to fail on warnings.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPULAUNCH_WERROR="${WERROR:-OFF}" > /dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
