#!/usr/bin/env bash
# The transformer inference example under gpulaunch (real mpirun ranks): the
# output file is byte-identical for one process and for pipeline, tensor,
# data and hybrid layouts, with seeded or trained weights; bad input exits 2
# and leaves no output behind.
# Usage: BIN_DIR
set -uo pipefail
BIN=$(cd "${1:?usage: transformer_infer_test.sh BIN_DIR}" && pwd) || exit 2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
. "$(dirname "$0")/test_lib.sh"
# 8 sequences of 16 tokens from a file (one per line).
for s in $(seq 1 8); do seq $((s * 7)) $((s * 7 + 15)) | tr '\n' ' '; echo; done > "$WORK/tokens.txt"
infer() {  # N OUTPUT ARGS...: gpulaunch -n N transformer_infer on the token file
  local n=$1 out=$2; shift 2
  timeout 120 "$BIN/gpulaunch" -n "$n" --oversubscribe "$BIN/transformer_infer" --input "$WORK/tokens.txt" \
    --output "$out" --microbatches 4 "$@"
}
infer 1 "$WORK/one.bin" > "$WORK/one.log" 2>&1
check "one process: exit 0" "$?" 0
check "one process: 8 x 257 float32 logits" "$(stat -c %s "$WORK/one.bin" 2>/dev/null)" 8224
for case in "2 --parallel pipeline --stages 2" "4 --parallel pipeline --stages 4" "2 --parallel tensor --gpus-per-stage 2" \
            "4 --parallel tensor --gpus-per-stage 4" "2 --parallel data" "4 --parallel hybrid --stages 2 --gpus-per-stage 2" \
            "4 --layout tp=2,pp=2,order=pp-tp-dp" "4 --layout dp=2,pp=2"; do
  read -r n args <<< "$case"
  # shellcheck disable=SC2086
  infer "$n" "$WORK/out.bin" $args > "$WORK/run-$n-${args// /_}.log" 2>&1
  check "-n $n $args: same bytes as one process" "$(cmp -s "$WORK/one.bin" "$WORK/out.bin" && echo same)" same
  rm -f "$WORK/out.bin"
done
# Embedding and head are cheaper than a block here, so the ends take more layers.
check "4 pipeline stages from the balanced splitter" \
  "$(grep -c 'stages \[0,3) \[3,5) \[5,7) \[7,10)' "$WORK/run-4---parallel_pipeline_--stages_4.log")" 1

# Weights from a file (what transformer_train writes): the same bytes under
# any layout, and not the seed's.
timeout 120 "$BIN/gpulaunch" -n 1 "$BIN/transformer_train" --steps 2 --weights-out "$WORK/trained.bin" > /dev/null 2>&1
infer 1 "$WORK/w1.bin" --weights "$WORK/trained.bin" > /dev/null 2>&1
infer 4 "$WORK/w4.bin" --weights "$WORK/trained.bin" --parallel hybrid --stages 2 --gpus-per-stage 2 > /dev/null 2>&1
check "trained weights: -n 4 hybrid gives the same bytes as -n 1" "$(cmp -s "$WORK/w1.bin" "$WORK/w4.bin" && echo same)" same
check "trained weights change the output" "$(cmp -s "$WORK/w1.bin" "$WORK/one.bin" || echo changed)" changed
head -c 1000 "$WORK/trained.bin" > "$WORK/short-weights.bin"
infer 1 "$WORK/bad.bin" --weights "$WORK/short-weights.bin" > "$WORK/bad.log" 2>&1
check "a weights file of the wrong size: exit 2" "$?" 2
check "... naming both sizes" "$(grep -v '^gpulaunch: ' "$WORK/bad.log" | grep -c 'short-weights.bin: 1000 bytes, but this model (vocab 257, hidden 64, blocks 4, seq 16) has 931328')" 1
check "... and gpulaunch's root cause repeats it under the rank that failed" \
  "$(sed -n '/root cause/,$p' "$WORK/bad.log" | grep -c -e 'rank 0 on .* exited with code 2' -e '|  .*short-weights.bin: 1000 bytes')" 2

# The CUDA kernels: the same bytes on a GPU; a clear refusal without one.
infer 2 "$WORK/cuda.bin" --parallel tensor --gpus-per-stage 2 --device cuda > "$WORK/cuda.log" 2>&1
cuda_rc=$?
if nvidia-smi -L > /dev/null 2>&1; then
  check "--device cuda: same bytes as the CPU" "$(cmp -s "$WORK/one.bin" "$WORK/cuda.bin" && echo same)" same
else
  check "--device cuda without a GPU: exit 2" "$cuda_rc" 2
  check "... saying so" "$(grep -v '^gpulaunch: ' "$WORK/cuda.log" | grep -cE 'no CUDA GPU is usable|built without nvcc')" 1
fi

# Bad input: a short line, a tp that does not divide the heads. Exit 2, no file.
printf '1 2 3\n' > "$WORK/short.txt"
timeout 60 "$BIN/gpulaunch" -n 1 "$BIN/transformer_infer" --input "$WORK/short.txt" --output "$WORK/bad.bin" \
  > "$WORK/bad.log" 2>&1
check "a short input line: exit 2" "$?" 2
check "... naming file:line and the fix" "$(grep -v '^gpulaunch: ' "$WORK/bad.log" | grep -c 'short.txt:1: 3 tokens, but the model.s sequence length is 16 (--seq)')" 1
infer 3 "$WORK/bad.bin" --parallel tensor --gpus-per-stage 3 > "$WORK/bad.log" 2>&1
check "tp=3 with 4 heads: exit 2" "$?" 2
check "... saying tp must divide the heads" "$(grep -v '^gpulaunch: ' "$WORK/bad.log" | grep -c 'tp=3 does not divide 4 heads')" 1
check "no output file left behind" "$(ls "$WORK" | grep -c bad.bin)" 0
finish "transformer_infer"
