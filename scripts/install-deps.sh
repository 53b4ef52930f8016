#!/usr/bin/env bash
# Installs the Debian packages gpulaunch needs (only what is missing).
#   scripts/install-deps.sh           what the tools, the runtime and the examples build and run with
#   scripts/install-deps.sh --test    that, plus what the tests, the benchmarks and the test rigs need
#   scripts/install-deps.sh --list [--test-only]
#                                     print the base list (or only the --test additions), one per line,
#                                     installing nothing (tests/deps/check_header_packages.py reads it)
# Every third-party header a non-test source includes must come from a package of
# the base list or of its dependencies: ctest header_packages checks that.
set -euo pipefail
base=(build-essential cmake ninja-build pkg-config openmpi-bin libopenmpi-dev libucx-dev ucx-utils
      libhwloc-dev hwloc libboost-program-options-dev libpmix-dev nlohmann-json3-dev libxml2-dev libsodium-dev)
test_only=(libgtest-dev libgmock-dev libbenchmark-dev openssh-server openssh-client iproute2 hpcc
           slurmctld slurmd slurm-client munge gdb clang libclang-rt-14-dev iptables python3 python3-matplotlib
           bc procps mpich libmpich-dev mariadb-server mariadb-client slurmdbd slurm-wlm-mysql-plugin)
case "${1:-}" in
  --list)
    if [ "${2:-}" = "--test-only" ]; then printf '%s\n' "${test_only[@]}"; else printf '%s\n' "${base[@]}"; fi
    exit 0 ;;
  --test) pkgs=("${base[@]}" "${test_only[@]}") ;;
  "") pkgs=("${base[@]}") ;;
  *) echo "install-deps.sh: unknown argument '$1'; use --test, --list or nothing" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "installing: ${missing[*]}"
$SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}"
