# Sourced by the tests that need the 4-node cluster with accounting
# (slurm_policy_test.sh, slurm_replay_test.sh). Usage:
#   need_cluster_with_accounting "slurm policy"
# exits 77 (skipped, saying why) unless the cluster of
# .ci/rig/slurm-cluster-up.sh is up with accounting; sets NSP and S (the
# cluster's folder).
need_cluster_with_accounting() {
  NSP=${GL_NSP:-glr}
  if [ -z "${GL_SLURM_CLUSTER_CONF:-}" ] || ! ip netns list 2>/dev/null | grep -q "^${NSP}n1"; then
    echo "$1: cluster rig not up (netns-up.sh, slurm-cluster-up.sh, GL_SLURM_CLUSTER_CONF); skipped"
    exit 77
  fi
  S=$(dirname "$GL_SLURM_CLUSTER_CONF")
  if [ "$(cat "$S/accounting" 2>/dev/null)" != on ]; then
    echo "$1: the cluster runs without accounting ($(cat "$S/accounting" 2>/dev/null || echo unknown)); skipped"
    exit 77
  fi
}
