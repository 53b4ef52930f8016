#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, brings up the
# test rigs (root only: 4 network namespaces with sshd, and a one-node Slurm
# with its own munged, and a 4-node Slurm cluster on the namespaces), runs
# every test with ctest, then the unit and runtime tests under ASan+UBSan and
# the parsers' fuzz targets (scripts/sanitize.sh, a clang build in
# build-asan/), and tears the rigs down again (by PID) whatever happens.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
scripts/install-deps.sh --test
WERROR=ON scripts/build.sh

# What /tmp held before the tests: afterwards, anything new that the suite
# did not mean to leave fails the run (check_tmp_left_clean below).
tmp_before=$(mktemp)
ls -A /tmp > "$tmp_before"
export RIG
RIG=$(mktemp -d /tmp/gpulaunch-rig.XXXXXX)
chmod 755 "$RIG"
# Open MPI's session folders (ompi.HOST.UID, one per rig host too: the
# namespaces share /tmp) go under the rig, which teardown removes: a killed
# mpirun or orted leaves its own behind otherwise.
mkdir -p "$RIG/ompi-tmp"
export OMPI_MCA_orte_tmpdir_base=$RIG/ompi-tmp
# Whether the machine itself stopped running while the tests ran: a virtual
# machine whose CPUs are not scheduled for tens of seconds makes the kernel
# log "workqueue lockup" or "soft lockup". A test that timed out during such
# a stall did not hang on its own; this says so next to the failure.
tests_started_at=$(cut -d' ' -f1 /proc/uptime)
report_machine_stalls() {
  local stalls
  stalls=$(dmesg 2>/dev/null | awk -v since="$tests_started_at" '
             match($0, /^\[ *[0-9.]+\]/) && substr($0, 2, RLENGTH - 2) + 0 >= since &&
             /workqueue lockup|soft lockup|blocked for more than|rcu.*stall/' || true)
  [ -z "$stalls" ] && return 0
  echo "test.sh: note: the kernel reported that this machine stalled while the tests ran:"
  echo "$stalls" | sed 's/^/  /'
}
# New entries in /tmp since the tests began, but for the ones a run is meant
# to leave: gpulaunch's own topology cache (gpulaunch-UID, kept between
# launches by design), and the files of the shell tool or CI around us.
check_tmp_left_clean() {
  local left
  left=$(ls -A /tmp | sort | comm -13 <(sort "$tmp_before") - |
         grep -v -E "^(gpulaunch-$(id -u)|$(basename "$tmp_before"))$" || true)
  if [ -n "$left" ]; then
    echo "test.sh: FAIL: the tests left these in /tmp (each test must remove what it makes):"
    echo "$left" | sed 's/^/  /'
    return 1
  fi
  echo "test.sh: /tmp holds nothing new after the tests"
}
cleanup() {
  local rc=$?
  report_machine_stalls
  # The rig's pid file lives in $RIG: remove $RIG only once teardown worked.
  "$ROOT/.ci/rig/rig-down.sh" && rm -rf "$RIG"
  check_tmp_left_clean || rc=1
  rm -f "$tmp_before"
  exit "$rc"
}
trap cleanup EXIT
if [ "$(id -u)" -eq 0 ] && "$ROOT/.ci/rig/netns-up.sh"; then
  export GL_RIG=$RIG GL_NSP=${NSP:-glr}
  # A 4-node Slurm cluster on those hosts, its switch tree written by
  # gpulaunch slurm-config (so slurmctld accepting it is part of the test).
  mkdir -p "$RIG/generated"
  if "$ROOT/build/bin/gpulaunch" slurm-config --out "$RIG/generated" --synthetic "leaf:2 node:2" \
       --network "$ROOT/tests/data/network/two-leaf.topology.conf" &&
     GL_TOPOLOGY_CONF="$RIG/generated/topology.conf" "$ROOT/.ci/rig/slurm-cluster-up.sh"; then
    export GL_SLURM_CLUSTER_CONF=$RIG/slurmc/slurm.conf GL_SLURM_CLUSTER_GPU_XML=$RIG/slurmc/gpunode.xml
  else
    echo "test.sh: the Slurm cluster rig did not come up; its tests will be skipped"
  fi
else
  echo "test.sh: no network-namespace rig here (needs root and ip netns); multi-host tests will be skipped"
fi
if [ "$(id -u)" -eq 0 ] && "$ROOT/.ci/rig/slurm-up.sh"; then
  export GL_SLURM_CONF=$RIG/slurm/slurm.conf
else
  echo "test.sh: no Slurm rig here (needs root); Slurm tests will be skipped"
fi
cd "$ROOT/build"
ctest --output-on-failure -j 2 --timeout 600
# The unit and runtime tests again under ASan+UBSan, and every parser's
# libFuzzer target for a fixed budget (GL_SKIP_SANITIZE=1 skips this stage).
if [ "${GL_SKIP_SANITIZE:-0}" != 1 ]; then
  "$ROOT/scripts/sanitize.sh"
fi
