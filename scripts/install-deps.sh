#!/usr/bin/env bash
# Installs the Debian packages gpulaunch builds and tests with (only what is
# missing). Usage: scripts/install-deps.sh [--test]   (--test adds the test rig's)
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config openmpi-bin libopenmpi-dev libucx-dev ucx-utils
      libhwloc-dev hwloc libboost-program-options-dev libpmix-dev)
if [ "${1:-}" = "--test" ]; then
  pkgs+=(libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev openssh-server openssh-client iproute2 hpcc
         slurmctld slurmd slurm-client munge gdb clang libclang-rt-14-dev iptables python3-matplotlib)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "installing: ${missing[*]}"
$SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
# policy-rc.d keeps package scripts from starting a system sshd.
DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}"
