#!/usr/bin/env bash
# Installs from the build tree into a scratch prefix (gpurt with its CMake
# package, the gpulaunch binaries, the sbatch template), builds a separate
# project against it with find_package(gpurt), and runs that on 2 ranks with
# the installed gpulaunch.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$1; SRC=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" --component Unspecified > /dev/null
test -f "$WORK/prefix/include/gpulaunch/runtime/gpurt.h"
test -f "$WORK/prefix/lib/cmake/gpurt/gpurtConfig.cmake" || test -f "$WORK/prefix/lib/x86_64-linux-gnu/cmake/gpurt/gpurtConfig.cmake"
test -x "$WORK/prefix/bin/gpulaunch" && test -x "$WORK/prefix/bin/gpulaunch-shim" && test -x "$WORK/prefix/bin/gpulaunch-probe"
test -f "$WORK/prefix/share/gpulaunch/gpulaunch.sbatch"
cmake -S "$SRC/tests/install/consumer" -B "$WORK/build" -G Ninja -DCMAKE_PREFIX_PATH="$WORK/prefix" > /dev/null
cmake --build "$WORK/build" > /dev/null
out=$("$WORK/prefix/bin/gpulaunch" -n 2 --oversubscribe --allow-run-as-root "$WORK/build/consumer")
echo "$out"
[[ "$out" == "consumer: 28 4 on 2 ranks, plan "* ]]
echo "install: 1 passed, 0 failed"
