#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine, touching no system state:
# a private munged (socket under $RIG), slurmctld and slurmd with config,
# state and logs under $RIG/slurm, non-default ports. Records pids in
# $RIG/pids (.ci/rig/rig-down.sh stops them). Writes $RIG/slurm/env
# to source: SLURM_CONF.
set -euo pipefail
# shellcheck source=slurm-common.sh
. "$(dirname "$0")/slurm-common.sh"
: "${RIG:?set RIG to a scratch directory}"
S=$RIG/slurm
mkdir -p "$RIG/munge" "$S"/{state,log,spool,tmp}
chmod 711 "$RIG/munge"
touch "$RIG/pids"
dd if=/dev/urandom of="$RIG/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$RIG/munge/munge.key"
munged --socket="$RIG/munge/munge.sock" --key-file="$RIG/munge/munge.key" --log-file="$RIG/munge/munged.log" \
  --pid-file="$RIG/munge/munged.pid" --seed-file="$RIG/munge/munged.seed"
echo "pid $(cat "$RIG/munge/munged.pid")" >> "$RIG/pids"

host=$(hostname)
node_line=$(slurmd -C | head -1)   # NodeName=<host> CPUs=.. Boards=.. SocketsPerBoard=.. CoresPerSocket=.. ...
{
  slurm_common_conf "$S" "$RIG/munge/munge.sock"
  cat <<CFG
ClusterName=glrig
AccountingStorageType=accounting_storage/none
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
TmpFS=$S/tmp
SlurmdPidFile=$S/slurmd.pid
SlurmdLogFile=$S/log/slurmd.log
TaskPlugin=task/none
$node_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CFG
} > "$S/slurm.conf"
mkdir -p "$S/spool/$host"
export SLURM_CONF=$S/slurm.conf
echo "export SLURM_CONF=$SLURM_CONF" > "$S/env"
slurmctld -f "$SLURM_CONF"
for _ in $(seq 1 50); do [ -s "$S/slurmctld.pid" ] && break; sleep 0.1; done
echo "pid $(cat "$S/slurmctld.pid")" >> "$RIG/pids"
slurmd -f "$SLURM_CONF"
for _ in $(seq 1 50); do [ -s "$S/slurmd.pid" ] && break; sleep 0.1; done
echo "pid $(cat "$S/slurmd.pid")" >> "$RIG/pids"
for _ in $(seq 1 100); do
  sinfo -h -o %T 2>/dev/null | grep -q idle && { echo "slurm rig: node $host idle"; exit 0; }
  sleep 0.1
done
echo "slurm rig: node did not become idle; see $S/log" >&2
exit 1
