#!/usr/bin/env bash
# The runtime under a real Slurm (srun --mpi=pmix, .ci/rig/slurm-up.sh):
# Init reads the contract from PMIx/Slurm, the MPI suite passes, and a
# deterministic reduction gives the same hash as under gpulaunch.
# Needs GL_SLURM_CONF; exits 77 (skipped) without it. Usage: BIN_DIR
set -uo pipefail
BIN=${1:?usage: slurm_runtime_test.sh BIN_DIR}
if [ -z "${GL_SLURM_CONF:-}" ] || ! command -v srun > /dev/null; then
  echo "slurm: no Slurm rig (run .ci/rig/slurm-up.sh and set GL_SLURM_CONF); skipped"
  exit 77
fi
export SLURM_CONF=$GL_SLURM_CONF
passed=0; failed=0
check() { if [ "$2" = "$3" ]; then echo "ok   - $1"; passed=$((passed + 1)); else echo "FAIL - $1 (got '$2', want '$3')"; failed=$((failed + 1)); fi; }

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

echo "slurm: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
