#!/usr/bin/env bash
# gpulaunch and its runtime under a real Slurm (.ci/rig/slurm-up.sh): the
# runtime's MPI suite and reduction under srun --mpi=pmix; gpulaunch inside
# salloc launching through srun (the default there) and mpirun; the sbatch
# template; exit codes through Slurm; --launcher srun refused outside.
# Needs GL_SLURM_CONF; exits 77 (skipped) without it. Usage: BIN_DIR
set -uo pipefail
BIN=$(cd "${1:?usage: slurm_runtime_test.sh BIN_DIR}" && pwd) || exit 2
if [ -z "${GL_SLURM_CONF:-}" ] || ! command -v srun > /dev/null; then
  echo "slurm: no Slurm rig (run .ci/rig/slurm-up.sh and set GL_SLURM_CONF); skipped"
  exit 77
fi
export SLURM_CONF=$GL_SLURM_CONF
. "$(dirname "$0")/test_lib.sh"

timeout 120 srun --mpi=pmix -n 2 "$BIN/runtime_mpi_test" > /tmp/gl-srun-$$.log 2>&1
check "srun --mpi=pmix -n 2 runtime_mpi_test" "$?" 0
rm -f /tmp/gl-srun-$$.log

args=(--elements 20000 --seed 5)
want=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$BIN/gpulaunch" -n 1 "$BIN/reduction_check" "${args[@]}" 2>/dev/null)
got=$(timeout 120 srun --mpi=pmix -n 3 --overcommit "$BIN/reduction_check" "${args[@]}" 2>/dev/null)
check "srun -n 3 reduction hash equals gpulaunch -n 1" "$got" "$want"

# Inside an allocation gpulaunch takes its hosts from Slurm.
plan=$(timeout 60 salloc -n 2 "$BIN/gpulaunch" --dry-run /bin/true 2>/dev/null)
node=$(sinfo -h -o %N | head -1)
check "salloc: gpulaunch plans 2 ranks on the allocation's node" "$(echo "$plan" | head -1)" "plan: 2 ranks on 1 host ($node)"

# srun as the launch engine inside an allocation.
dry=$(timeout 60 salloc -n 2 "$BIN/gpulaunch" --dry-run "$BIN/env_dump" 2>/dev/null)
check "dry-run inside an allocation shows one srun step" \
  "$(echo "$dry" | grep -c -- "srun --mpi=pmix -n 2 --distribution=arbitrary --cpu-bind=mask_cpu:")" 1
hash=$(echo "$dry" | sed -n 's/^plan hash: //p')
out=$(timeout 60 salloc -n 2 "$BIN/gpulaunch" "$BIN/env_dump" 2>/dev/null)
check "srun engine: 2 ranks ran" "$(echo "$out" | grep -c '^rank=')" 2
check "srun engine: every rank on the plan's cores with its hash" \
  "$(echo "$out" | awk -v h="$hash" '/^rank=/ { for (i = 1; i <= NF; i++) { split($i, p, "="); kv[p[1]] = p[2] }
       if (kv["affinity"] != kv["cpuset"] || kv["hash"] != h || kv["host"] != "'"$node"'") bad++ } END { print bad + 0 }')" 0
timeout 60 salloc -n 2 "$BIN/gpulaunch" "$BIN/rank_report" --quiet --exit-rank 1 --exit-code 3 > /dev/null 2>&1
check "srun engine: a rank's exit code 3 comes back" "$?" 3
got=$(timeout 60 salloc -n 2 "$BIN/gpulaunch" "$BIN/reduction_check" "${args[@]}" 2>/dev/null)
check "srun engine: reduction hash equals gpulaunch -n 1" "$got" "$want"
timeout 60 salloc -n 2 "$BIN/gpulaunch" --launcher mpirun --allow-run-as-root "$BIN/rank_report" > /tmp/gl-mpirun-$$.log 2>&1
check "--launcher mpirun inside an allocation" "$(grep -c 'rank_report: 2 ranks, allreduce ok, 0 problem' /tmp/gl-mpirun-$$.log)" 1
rm -f /tmp/gl-mpirun-$$.log
"$BIN/gpulaunch" --launcher srun /bin/true > /dev/null 2>&1
check "--launcher srun outside an allocation: exit 2" "$?" 2

# The sbatch template users copy.
WORK=$(mktemp -d)
GPULAUNCH="$BIN/gpulaunch" timeout 120 sbatch --wait -o "$WORK/out" "$(dirname "$0")/../../slurm/gpulaunch.sbatch" \
  "$BIN/rank_report" > /dev/null 2>&1
check "sbatch of slurm/gpulaunch.sbatch runs the job" "$(grep -c 'rank_report: 2 ranks, allreduce ok, 0 problem' "$WORK/out")" 1
GPULAUNCH="$BIN/gpulaunch" timeout 120 sbatch --wait -o "$WORK/out2" "$(dirname "$0")/../../slurm/gpulaunch.sbatch" \
  "$BIN/rank_report" --quiet --exit-rank 0 --exit-code 4 > /dev/null 2>&1
check "a failing rank's exit code comes back through sbatch" "$?" 4
rm -rf "$WORK"

finish "slurm"
