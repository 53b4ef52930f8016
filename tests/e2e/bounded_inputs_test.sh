#!/usr/bin/env bash
# Every option that takes a file enforces its limits while it reads, so a
# device or a pipe that never ends is refused at once (exit 2, file:line)
# under a memory limit, while a process substitution still works; and every
# file gpulaunch writes outside its job directory is written without
# following a link or reusing a file planted beside it (docs/security.md).
# Usage: bounded_inputs_test.sh BIN_DIR SRC_DIR
set -uo pipefail
BIN=$(cd "${1:?usage: bounded_inputs_test.sh BIN_DIR SRC_DIR}" && pwd) || exit 2
SRC=${2:?usage: bounded_inputs_test.sh BIN_DIR SRC_DIR}
GL=$BIN/gpulaunch
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
. "$(dirname "$0")/test_lib.sh"

# Runs gpulaunch under a 1 GiB address-space limit and 10 s: prints its exit
# code (124: still reading after 10 s).
bounded() { ( ulimit -v 1048576; timeout 10 "$GL" "$@" > "$WORK/out" 2> "$WORK/err" ); echo $?; }

XML=$SRC/tests/data/topologies/hwloc/mpibind/g4dnmetal.xml
for dev in /dev/zero /dev/urandom; do
  check "--hostfile $dev: exit 2" "$(bounded --dry-run --hostfile "$dev" -n 1 /bin/true)" 2
  check "... with file:line" "$(grep -c "^gpulaunch: $dev:[0-9]*: " "$WORK/err")" 1
  check "--topology-file $dev: exit 2" "$(bounded plan -n 1 --topology-file "$dev")" 2
  check "--cluster $dev: exit 2" "$(bounded plan -n 1 --cluster "$dev")" 2
  check "... with file:line" "$(grep -c "^gpulaunch: $dev:[0-9]*: a NUL byte, which no cluster file" "$WORK/err")" 1
  check "--network $dev: exit 2" "$(bounded plan -n 1 --synthetic 'node:2 gpu:1' --network "$dev")" 2
  check "slurm-config --policy $dev: exit 2" \
    "$(bounded slurm-config --out "$WORK/policy-out" --synthetic 'node:2 gpu:1' --policy "$dev")" 2
  check "... with file:line" "$(grep -c "^gpulaunch: $dev:[0-9]*: a NUL byte, which no policy file" "$WORK/err")" 1
  check "sim --trace $dev: exit 2" "$(bounded sim --trace "$dev" --cluster 'leaf:1 node:2 gpu:8')" 2
  check "... with file:line" "$(grep -c "$dev:[0-9]*: a NUL byte" "$WORK/err")" 1
done

# FIFOs: one no writer ever opens, one whose writer holds it open and sends
# nothing. Every file option gives up after 3 s of silence (kInputSilenceMs)
# with exit 2 and file:line, never hangs (timeout 20 would say 124). The
# cases run at once, each on its own FIFO.
fifo_case() {  # NAME KIND (none|silent) ARGS... with @F for the FIFO
  local name=$1 kind=$2 f=$WORK/fifo-$1-$2 writer= rc
  shift 2
  mkfifo "$f"
  [ "$kind" = silent ] && { sleep 30 > "$f" & writer=$!; }
  local args=() a
  for a in "$@"; do args+=("${a//@F/$f}"); done
  rc=$( ( ulimit -v 1048576; timeout 20 "$GL" "${args[@]}" > "$WORK/$name-$kind.out" 2> "$WORK/$name-$kind.err" ); echo $?)
  [ -n "$writer" ] && kill "$writer" 2> /dev/null
  echo "$rc" > "$WORK/$name-$kind.rc"
}
fifo_options=(
  "hostfile|--dry-run --hostfile @F -n 1 /bin/true"
  "topology-file|plan -n 1 --topology-file @F"
  "cluster|plan -n 1 --cluster @F"
  "network|plan -n 1 --synthetic node:2,gpu:1 --network @F"
  "policy|slurm-config --out $WORK/fifo-policy-out --synthetic node:2,gpu:1 --policy @F"
  "trace|sim --trace @F --cluster leaf:1,node:2,gpu:8"
)
for entry in "${fifo_options[@]}"; do
  name=${entry%%|*}
  # shellcheck disable=SC2086
  read -r -a words <<< "${entry#*|}"
  for i in "${!words[@]}"; do words[i]=${words[i]//,/ }; done
  for kind in none silent; do fifo_case "$name" "$kind" "${words[@]}" & done
done
wait
for entry in "${fifo_options[@]}"; do
  name=${entry%%|*}
  for kind in none silent; do
    check "--$name on a FIFO with $kind writer: exit 2" "$(cat "$WORK/$name-$kind.rc")" 2
    check "... naming the FIFO and saying nothing arrived" \
      "$(grep -c "$WORK/fifo-$name-$kind:[0-9]*: nothing arrived for 3 s" "$WORK/$name-$kind.err")" 1
  done
done

# Process substitution (a pipe) is a real use and keeps working.
check "--hostfile <(printf ...): exit 0" \
  "$(bounded --dry-run --hostfile <(printf 'localhost slots=2\n') -n 2 /bin/true)" 0
check "... the plan has the 2 ranks" "$(grep -c '^plan: 2 ranks' "$WORK/out")" 1
check "--topology-file <(cat FILE): exit 0" "$(bounded plan -n 2 --topology-file <(cat "$XML"))" 0

# Writers outside the job directory, in a folder others may write: a link or
# a file planted under every name a writer could use is never written
# through, and a planted file is never reused or left with its owner.
OUT=$WORK/shared
mkdir -m 1777 "$OUT"
echo "secret" > "$WORK/victim"; chmod 600 "$WORK/victim"
before=$(sha256sum "$WORK/victim")
for name in topology.conf gres.conf; do ln -s "$WORK/victim" "$OUT/$name"; ln -s "$WORK/victim" "$OUT/$name.tmp"; done
check "slurm-config into a folder of planted links: exit 0" \
  "$("$GL" slurm-config --out "$OUT" --synthetic 'leaf:1 node:2 gpu:1' > /dev/null 2>&1; echo $?)" 0
check "... the link's target is untouched" "$(sha256sum "$WORK/victim")" "$before"
check "... its mode too" "$(stat -c %a "$WORK/victim")" 600
check "... topology.conf is a new regular file" "$(stat -c %F "$OUT/topology.conf")" "regular file"
check "slurm-config --out a folder that does not exist yet: exit 0" \
  "$("$GL" slurm-config --out "$WORK/new/dir" --synthetic 'leaf:1 node:2 gpu:1' > /dev/null 2>&1; echo $?)" 0
ln -s "$WORK/victim" "$OUT/cluster.json"
check "--dump-cluster onto a link: exit 0" \
  "$("$GL" plan -n 1 --synthetic 'node:2 gpu:1' --dump-cluster "$OUT/cluster.json" > /dev/null 2>&1; echo $?)" 0
check "... the link's target is untouched" "$(sha256sum "$WORK/victim")" "$before"
check "... the cluster file replaced the link" "$(stat -c %F "$OUT/cluster.json")" "regular file"
ln -s "$WORK/victim" "$OUT/job.sbatch"
"$GL" submit --script "$OUT/job.sbatch" --dry-run -N 1 -n 1 -- /bin/true > /dev/null 2>&1
check "submit --script onto a link: the link's target is untouched" "$(sha256sum "$WORK/victim")" "$before"

# Output folders: a link planted in place of the folder, or of a folder on
# the way in a folder others may write, is refused, never followed; the
# folder it points to keeps its files.
mkdir -m 700 "$WORK/rootonly"
echo "precious" > "$WORK/rootonly/metrics.prom"
echo "precious" > "$WORK/rootonly/topology.conf"
guarded=$(cat "$WORK/rootonly"/* | sha256sum)
ln -s "$WORK/rootonly" "$OUT/gpulaunch-profile"
ln -s "$WORK/rootonly" "$OUT/config"
ln -s "$WORK/rootonly" "$OUT/via"
check "slurm-config --out a planted link: exit 2" \
  "$("$GL" slurm-config --out "$OUT/config" --synthetic 'leaf:1 node:2 gpu:1' > /dev/null 2> "$WORK/err"; echo $?)" 2
check "... saying it is a link" "$(grep -c "$OUT/config is a symbolic link" "$WORK/err")" 1
check "slurm-config --out below a planted link: exit 2" \
  "$("$GL" slurm-config --out "$OUT/via/sub" --synthetic 'leaf:1 node:2 gpu:1' > /dev/null 2> "$WORK/err"; echo $?)" 2
check "... saying it is a link in a folder others may write" \
  "$(grep -c "$OUT/via is a symbolic link in a folder others may write" "$WORK/err")" 1
( cd "$OUT" && "$GL" -n 1 --allow-run-as-root --oversubscribe --profile /bin/true > /dev/null 2> "$WORK/err" )
check "--profile into a planted gpulaunch-profile link: refused, said" \
  "$(grep -c "gpulaunch-profile is a symbolic link" "$WORK/err")" 1
check "... the folder it points to keeps its files" "$(cat "$WORK/rootonly"/* | sha256sum)" "$guarded"
check "... and gets no new one" "$(ls "$WORK/rootonly" | wc -l)" 2
finish "bounded_inputs"
