#!/usr/bin/env bash
# A real 4-node Slurm cluster on the network-namespace hosts of netns-up.sh
# (run that first): slurmctld on node1, one slurmd per host, its own munged,
# fake GPU devices for gres (character devices cloning /dev/null), and a
# 2-leaf switch tree (leaf0: node[1-2], leaf1: node[3-4]). Jobs in partition
# "urgent" preempt (cancel) jobs in the default partition "debug". Daemons start
# under nsenter --net + unshare (ip netns exec would hide the cgroup mount
# slurmd needs). Pids go to $RIG/pids; rig-down.sh stops them.
# Writes $RIG/slurmc/slurm.conf and $RIG/slurmc/gpunode.xml. Clients run as:
#   ip netns exec ${NSP}n1 env SLURM_CONF=$RIG/slurmc/slurm.conf sbatch ...
set -euo pipefail
# shellcheck source=slurm-common.sh
. "$(dirname "$0")/slurm-common.sh"
: "${RIG:?set RIG to the scratch directory of netns-up.sh}"
N=${N:-4}; NSP=${NSP:-glr}; NET=${NET:-10.200.0}
S=$RIG/slurmc
mkdir -p "$S"/{state,log,spool,tmp,dev,munge}
chmod 711 "$S/munge"
for i in $(seq 1 "$N"); do mkdir -p "$S/spool/node$i" "$S/tmp/node$i"; done
for g in 0 1 2 3; do [ -e "$S/dev/nvidia$g" ] || mknod "$S/dev/nvidia$g" c 1 3; done
dd if=/dev/urandom of="$S/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$S/munge/munge.key"
munged --socket="$S/munge/munge.sock" --key-file="$S/munge/munge.key" --log-file="$S/munge/munged.log" \
  --pid-file="$S/munge/munged.pid" --seed-file="$S/munge/munged.seed"
echo "pid $(cat "$S/munge/munged.pid")" >> "$RIG/pids"

# Runs a daemon inside host i's namespaces (network, a private mount and UTS).
in_host() {
  local i=$1; shift
  nsenter --net="/run/netns/${NSP}n$i" unshare --mount --uts --propagation private \
    sh -c "mount --bind /etc/netns/${NSP}n$i/hosts /etc/hosts; hostname node$i; exec \"\$@\"" sh "$@"
}
# Accounting (slurm-accounting-up.sh): MariaDB and slurmdbd when Debian's
# packages are here and GL_SLURM_ACCOUNTING is not 0; $S/accounting says which
# (tests that need it read it and skip with its reason).
# shellcheck source=slurm-accounting-up.sh
. "$(dirname "$0")/slurm-accounting-up.sh"
accounting="AccountingStorageType=accounting_storage/none"
if [ "${GL_SLURM_ACCOUNTING:-1}" = 0 ]; then
  echo "off: GL_SLURM_ACCOUNTING=0" > "$S/accounting"
elif ! slurm_accounting_available; then
  echo "off: no MariaDB or slurmdbd here (apt-get install mariadb-server slurmdbd slurm-wlm-mysql-plugin)" > "$S/accounting"
elif accounting=$(slurm_accounting_up "$S" "$S/munge/munge.sock"); then
  echo "on" > "$S/accounting"
else
  echo "slurm cluster: accounting did not come up; the cluster runs without it" >&2
  echo "off: MariaDB or slurmdbd did not start (see $S/log)" > "$S/accounting"
  accounting="AccountingStorageType=accounting_storage/none"
fi

# This machine's core layout, as slurmd -C reports it, for every fake node.
layout=$(slurmd -C | head -1 | grep -o 'SocketsPerBoard=[0-9]* CoresPerSocket=[0-9]* ThreadsPerCore=[0-9]*' |
         sed 's/SocketsPerBoard/Sockets/')
{
  slurm_common_conf "$S" "$S/munge/munge.sock"
  cat <<CFG
ClusterName=glcluster
$accounting
SlurmctldHost=node1($NET.1)
TmpFS=$S/tmp/%n
SlurmdPidFile=$S/slurmd.%n.pid
SlurmdLogFile=$S/log/slurmd.%n.log
TaskPlugin=task/affinity
GresTypes=gpu
SlurmdParameters=config_overrides
TopologyPlugin=topology/tree
NodeName=node[1-$N] NodeAddr=$NET.[1-$N] $layout RealMemory=4000 Gres=gpu:4 State=UNKNOWN
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE PriorityTier=1
PartitionName=urgent Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=2 PreemptMode=OFF
CFG
} > "$S/slurm.conf"
echo "Name=gpu File=$S/dev/nvidia[0-3]" > "$S/gres.conf"
# A GPU node for discovery: this machine's real cores plus 4 fake NVIDIA
# GPUs (one per gres device file, in the same order) on a host bridge of
# their own. Jobs that export HWLOC_XMLFILE=$S/gpunode.xml see the GPUs that
# gres hands out; ranks still bind to the real cores.
bridge='    <object type="Bridge" gp_index="9000" bridge_type="0-1" depth="0" bridge_pci="0000:[10-13]">'
for g in 0 1 2 3; do
  bridge+="
      <object type=\"PCIDev\" gp_index=\"$((9001 + 2 * g))\" pci_busid=\"0000:1$g:00.0\" pci_type=\"0302 [10de:2330] [10de:16c1] a1\">
        <object type=\"OSDev\" gp_index=\"$((9002 + 2 * g))\" name=\"cuda$g\" osdev_type=\"5\"><info name=\"CoProcType\" value=\"CUDA\"/></object>
      </object>"
done
bridge+="
    </object>"
# The machine object closes at the first two-space "</object>".
lstopo-no-graphics --of xml - | awk -v bridge="$bridge" '/^  <\/object>$/ && !done { print bridge; done = 1 } { print }' \
  > "$S/gpunode.xml"
# The switch tree: a generated file when the caller provides one (tests of
# gpulaunch slurm-config), else the rig's own.
if [ -n "${GL_TOPOLOGY_CONF:-}" ]; then
  cp "$GL_TOPOLOGY_CONF" "$S/topology.conf"
else
  printf 'SwitchName=leaf0 Nodes=node[1-2]\nSwitchName=leaf1 Nodes=node[3-4]\nSwitchName=spine Switches=leaf[0-1]\n' \
    > "$S/topology.conf"
fi

if [ "$(cat "$S/accounting")" = on ]; then
  # The cluster's record in slurmdbd, which slurmctld registers with
  # (slurmdbd may still be opening its port: a few tries).
  for try in $(seq 1 50); do
    ip netns exec "${NSP}n1" env SLURM_CONF="$S/slurm.conf" sacctmgr -i add cluster glcluster > "$S/log/sacctmgr.log" 2>&1 && break
    [ "$try" = 50 ] && { echo "slurm cluster: sacctmgr add cluster failed: $S/log/sacctmgr.log" >&2; exit 1; }
    sleep 0.2
  done
fi
in_host 1 slurmctld -f "$S/slurm.conf"
for _ in $(seq 1 50); do [ -s "$S/slurmctld.pid" ] && break; sleep 0.1; done
echo "pid $(cat "$S/slurmctld.pid")" >> "$RIG/pids"
for i in $(seq 1 "$N"); do
  in_host "$i" slurmd -f "$S/slurm.conf" -N "node$i"
  for _ in $(seq 1 50); do [ -s "$S/slurmd.node$i.pid" ] && break; sleep 0.1; done
  echo "pid $(cat "$S/slurmd.node$i.pid")" >> "$RIG/pids"
done
for _ in $(seq 1 100); do
  idle=$(ip netns exec "${NSP}n1" env SLURM_CONF="$S/slurm.conf" sinfo -h -N -p debug -o %T 2>/dev/null | grep -c idle || true)
  [ "$idle" = "$N" ] && { echo "slurm cluster: $N nodes idle"; exit 0; }
  sleep 0.1
done
echo "slurm cluster: nodes did not become idle; see $S/log" >&2
exit 1
