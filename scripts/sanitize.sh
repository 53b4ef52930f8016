#!/usr/bin/env bash
# The test suite's unit and runtime tests under AddressSanitizer and
# UndefinedBehaviorSanitizer, and every parser's libFuzzer target for a fixed
# budget, in a separate clang build (build-asan/). The end-to-end tests stay
# with the regular build: they time real launches, which sanitizers slow.
# Environment: BUILD_DIR (default build-asan), GL_FUZZ_SECONDS (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD_DIR=${BUILD_DIR:-build-asan}
CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DGPULAUNCH_SANITIZE=ON -DGPULAUNCH_FUZZ=ON -DGPULAUNCH_CUDA=OFF -DGPULAUNCH_BUILD_BENCHMARKS=OFF \
  -DGL_FUZZ_SECONDS="${GL_FUZZ_SECONDS:-10}" > /dev/null
targets=(common_test policies_test launcher_test discovery_test linkcheck_test slurm_test partitioner_test runtime_test
         transformer_model_test gl_fuzzers)
cmake --build "$BUILD_DIR" -j "$(nproc)" --target "${targets[@]}"
cd "$BUILD_DIR"
# halt_on_error: the first finding fails its test; leaks count as findings.
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1
export LSAN_OPTIONS=suppressions=$ROOT/tests/sanitizer/lsan.supp
# hwloc's plugins (pci, opencl, gl) are unloaded with their allocations still
# held, which LSan then cannot attribute: discovery runs on hwloc's built-in
# components here.
export HWLOC_PLUGINS_PATH=$ROOT/tests/sanitizer/no-hwloc-plugins
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --output-on-failure -j "$(nproc)" --timeout 600 -L 'unit|runtime|fuzz' -LE e2e \
  -E '^(install_find_package|runtime_mpi_.*|runtime_refuses_mixed_plans)$'
