#!/usr/bin/env bash
# The transformer training example under gpulaunch (real mpirun ranks): the
# per-step loss log and the final weights are byte-identical for one process
# and for dp = 2, 4, pp = 2, tp = 2 and hybrids, under the 1F1B, GPipe and
# interleaved schedules, with Adam and with SGD. Usage: BIN_DIR
set -uo pipefail
BIN=$(cd "${1:?usage: transformer_train_test.sh BIN_DIR}" && pwd) || exit 2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
. "$(dirname "$0")/test_lib.sh"
train() {  # N NAME ARGS...: writes $WORK/NAME.loss and $WORK/NAME.weights
  local n=$1 name=$2; shift 2
  timeout 180 "$BIN/gpulaunch" -n "$n" --oversubscribe ${LAUNCH_OPTS:-} "$BIN/transformer_train" --steps 3 --batch 8 --microbatches 4 \
    --loss-log "$WORK/$name.loss" --weights-out "$WORK/$name.weights" "$@" > "$WORK/$name.log" 2>&1
}
for opt in adam sgd; do
  train 1 "$opt-one" --optimizer "$opt" --lr 0.01
  check "$opt, one process: exit 0" "$?" 0
  check "$opt: 3 loss lines" "$(grep -c '^step [0-2] loss ' "$WORK/$opt-one.loss")" 3
  check "$opt: the loss goes down" \
    "$(awk '{ l[NR] = $4 } END { print (l[3] < l[1]) ? "yes" : "no" }' "$WORK/$opt-one.loss")" yes
done
same() {  # NAME REFERENCE
  cmp -s "$WORK/$1.loss" "$WORK/$2.loss" && cmp -s "$WORK/$1.weights" "$WORK/$2.weights" && echo same
}
idx=0
for case in "2 --layout dp=2" "4 --layout dp=4" "2 --layout pp=2" "2 --layout tp=2" "4 --layout tp=2,pp=2" \
            "4 --layout dp=2,pp=2" "2 --layout pp=2 --schedule gpipe" "2 --layout pp=2 --schedule interleaved --chunks 2"; do
  read -r n args <<< "$case"
  idx=$((idx + 1))
  # shellcheck disable=SC2086
  train "$n" "case$idx" --optimizer adam --lr 0.01 $args
  check "adam -n $n $args: same loss log and weights as one process" "$(same "case$idx" adam-one)" same
done
train 2 sgd-dp2 --optimizer sgd --lr 0.01 --layout dp=2
check "sgd dp=2: same loss log and weights as one process" "$(same sgd-dp2 sgd-one)" same
check "weights: the whole tiny model (232,832 float32)" "$(stat -c %s "$WORK/adam-one.weights")" 931328

timeout 60 "$BIN/gpulaunch" -n 2 "$BIN/transformer_train" --layout dp=2 --microbatches 3 > "$WORK/bad.log" 2>&1
check "micro-batches that dp does not divide: exit 2" "$?" 2
check "... saying why" "$(grep -v '^gpulaunch: ' "$WORK/bad.log" | grep -c 'must divide the batch and be a multiple of dp')" 1
# A failure at step 2 on every rank of this host, --on-failure=restart:1 and
# a checkpoint every step: the relaunch resumes after step 1 and ends with
# the bytes of the uninterrupted run (tp=2 ranks save different shards).
LAUNCH_OPTS="--on-failure=restart:1 --no-summary" train 2 resumed --layout tp=2 --optimizer adam --lr 0.01 --checkpoint-dir "$WORK/ckpt" --crash-host "$(hostname)" \
  --crash-at-step 2
check "restart after a planted failure: exit 0" "$?" 0
check "... resumed after step 1" "$(grep -c 'resuming after step 1 from' "$WORK/resumed.log")" 1
check "... the same loss log and weights as the uninterrupted run" "$(same resumed adam-one)" same
finish "transformer_train"
