#!/usr/bin/env bash
# Brings up N "hosts" as network namespaces ${NSP}n1..N (10.200.0.1..N/24)
# joined by a bridge that lives in its own namespace ${NSP}br, so the root
# namespace cannot reach them and nothing leaves the machine. Each host runs
# its own sshd (hostname nodeI via a UTS namespace, /etc/hosts via
# /etc/netns). Writes $RIG/ssh/ssh_config for clients and pids to $RIG/pids.
# Usage: RIG=/scratch .ci/rig/netns-up.sh ; undo with rig-down.sh
set -euo pipefail
: "${RIG:?set RIG to a scratch directory}"
N=${N:-4}; NSP=${NSP:-glr}; NET=${NET:-10.200.0}
mkdir -p "$RIG/ssh" /run/sshd
SSHD_SOFT_FILES=1024
hard_files=$(ulimit -Hn)
if [ "$hard_files" != unlimited ] && [ "$hard_files" -lt "$SSHD_SOFT_FILES" ]; then SSHD_SOFT_FILES=$hard_files; fi
touch "$RIG/pids"

[ -f "$RIG/ssh/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$RIG/ssh/id_ed25519"
[ -f "$RIG/ssh/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$RIG/ssh/host_ed25519"
cp "$RIG/ssh/id_ed25519.pub" "$RIG/ssh/authorized_keys"
cat > "$RIG/ssh/ssh_config" <<CFG
Host *
  User root
  IdentityFile $RIG/ssh/id_ed25519
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  BatchMode yes
  LogLevel ERROR
  ConnectTimeout 5
CFG

# Each host also answers to an alias, nodeI-ib (as a cluster names a host's
# fabric address): a name that is not the host's own, for the shim's lookup.
hosts_file() {
  echo "127.0.0.1 localhost"
  for j in $(seq 1 "$N"); do echo "$NET.$j node$j node$j-ib"; done
}

ip netns add "${NSP}br"
echo "netns ${NSP}br" >> "$RIG/pids"
ip netns exec "${NSP}br" ip link add br0 type bridge
ip netns exec "${NSP}br" ip link set br0 up
for i in $(seq 1 "$N"); do
  ns="${NSP}n$i"
  ip netns add "$ns"
  echo "netns $ns" >> "$RIG/pids"
  mkdir -p "/etc/netns/$ns"
  hosts_file > "/etc/netns/$ns/hosts"
  echo "etcnetns /etc/netns/$ns" >> "$RIG/pids"
  ip link add "${NSP}v$i" type veth peer name eth0 netns "$ns"
  ip link set "${NSP}v$i" netns "${NSP}br"
  ip netns exec "${NSP}br" ip link set "${NSP}v$i" master br0 up
  ip netns exec "$ns" ip addr add "$NET.$i/24" dev eth0
  ip netns exec "$ns" ip link set eth0 up
  ip netns exec "$ns" ip link set lo up
  cat > "$RIG/ssh/sshd_config.$i" <<CFG
ListenAddress $NET.$i
Port 22
HostKey $RIG/ssh/host_ed25519
PidFile $RIG/ssh/sshd.$i.pid
AuthorizedKeysFile $RIG/ssh/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
StrictModes no
UsePAM no
AcceptEnv OMPI_* PMIX_*
CFG
  # Under the soft open-file limit systemd gives services by default (1,024,
  # or the hard limit when lower), as on real hosts: the engine's daemons
  # started over ssh inherit it (multihost_scale needs gpulaunch to raise it).
  ip netns exec "$ns" unshare --uts prlimit --nofile="$SSHD_SOFT_FILES": \
    sh -c "hostname node$i; exec /usr/sbin/sshd -f '$RIG/ssh/sshd_config.$i'"
  for _ in $(seq 1 50); do [ -s "$RIG/ssh/sshd.$i.pid" ] && break; sleep 0.1; done
  echo "pid $(cat "$RIG/ssh/sshd.$i.pid")" >> "$RIG/pids"
done
# Prove every host answers over ssh from node1 before tests rely on it.
for i in $(seq 1 "$N"); do
  ip netns exec "${NSP}n1" ssh -F "$RIG/ssh/ssh_config" "node$i" true
done
echo "netns rig: $N hosts up (node1..node$N, $NET.1-$N)"
