#!/usr/bin/env bash
# Records what the real tools make of the hostlists and hostfiles in
# hostlist-cases.txt and hostfile-cases.txt, into slurm-hostnames.tsv and
# mpirun-hostfiles.tsv. The tests (tests/common/oracle_test.cc) compare
# gpulaunch's reading with these files, so they run without Slurm or Open MPI.
# Needs scontrol and mpirun; run it again when those tools change version.
# Usage: tests/data/oracles/record.sh   (writes next to itself)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# scontrol show hostnames needs a configuration but no running daemon.
cat > "$WORK/slurm.conf" <<CONF
ClusterName=oracle
SlurmctldHost=localhost
NodeName=localhost CPUs=1 State=UNKNOWN
PartitionName=p Nodes=localhost Default=YES
CONF
slurm_version=$(SLURM_CONF=$WORK/slurm.conf scontrol --version)
{
  echo "# $slurm_version: scontrol show hostnames EXPRESSION, recorded by record.sh"
  echo "# expression<TAB>hosts (space-separated) or 'invalid'"
  while IFS= read -r expr || [ -n "$expr" ]; do
    case "$expr" in '#'*|'') continue ;; esac
    out=$(SLURM_CONF=$WORK/slurm.conf scontrol show hostnames "$expr" 2>&1 < /dev/null || true)
    if grep -q 'Invalid hostlist\|error' <<<"$out"; then
      printf '%s\tinvalid\n' "$expr"
    else
      printf '%s\t%s\n' "$expr" "$(tr '\n' ' ' <<<"$out" | sed 's/ $//')"
    fi
  done < "$HERE/hostlist-cases.txt"
} > "$HERE/slurm-hostnames.tsv"

# mpirun --display-allocation prints the node under this machine's own name;
# every case names localhost, so the name is not recorded, only the counts.
ompi_version=$(mpirun --version | head -1)
{
  echo "# $ompi_version: mpirun --display-allocation --hostfile FILE -n 1 true, recorded by record.sh"
  echo "# hostfile text (\\n, \\r, \\t escaped)<TAB>'slots=N max_slots=M' or 'refused: <first line of the message>'"
  while IFS= read -r text || [ -n "$text" ]; do
    case "$text" in '#'*|'') continue ;; esac
    printf '%b' "$text" > "$WORK/hostfile"
    out=$(timeout 60 mpirun --allow-run-as-root --display-allocation --hostfile "$WORK/hostfile" -n 1 true 2>&1 < /dev/null || true)
    alloc=$(sed -n 's/.*flags=[^ ]* \(slots=[0-9]* max_slots=[0-9]*\).*/\1/p' <<<"$out" | head -1)
    if [ -n "$alloc" ] && ! grep -q 'parse error\|bad parameter\|multiple definitions\|illegal character' <<<"$out"; then
      printf '%s\t%s\n' "$text" "$alloc"
    else
      why=$(grep -v '^-*$' <<<"$out" | grep -v '^\s*$' | head -1)
      printf '%s\trefused: %s\n' "$text" "$why"
    fi
  done < "$HERE/hostfile-cases.txt"
} > "$HERE/mpirun-hostfiles.tsv"
echo "recorded $(grep -vc '^#' "$HERE/slurm-hostnames.tsv") hostlists ($slurm_version) and" \
     "$(grep -vc '^#' "$HERE/mpirun-hostfiles.tsv") hostfiles ($ompi_version)"
