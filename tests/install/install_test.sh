#!/usr/bin/env bash
# Installs gpurt from the build tree into a scratch prefix, builds a separate
# project against it with find_package(gpurt), and runs that on 2 ranks.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$1; SRC=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" --component Unspecified > /dev/null
test -f "$WORK/prefix/include/gpulaunch/runtime/gpurt.h"
test -f "$WORK/prefix/lib/cmake/gpurt/gpurtConfig.cmake" || test -f "$WORK/prefix/lib/x86_64-linux-gnu/cmake/gpurt/gpurtConfig.cmake"
cmake -S "$SRC/tests/install/consumer" -B "$WORK/build" -G Ninja -DCMAKE_PREFIX_PATH="$WORK/prefix" > /dev/null
cmake --build "$WORK/build" > /dev/null
out=$("$BUILD/bin/gpulaunch" -n 2 --oversubscribe --allow-run-as-root "$WORK/build/consumer")
echo "$out"
[[ "$out" == "consumer: 28 4 on 2 ranks, plan "* ]]
echo "install: 1 passed, 0 failed"
