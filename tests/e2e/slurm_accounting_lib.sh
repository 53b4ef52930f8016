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

# Applies a pool policy to the cluster as docs/slurm.md tells an admin to:
#   apply_pool_policy POLICY_JSON OUT_DIR
# (slurm-config --policy into OUT_DIR, PriorityFlags=MAX_TRES, JobSubmitPlugins=lua and the script
# beside slurm.conf, apply.sh, slurm-policy.conf included). Needs BIN, NSP,
# S and GL_SLURM_CLUSTER_CONF; keeps slurm.conf as it was in
# OUT_DIR/slurm.conf.orig for remove_pool_policy. Returns 1, saying why, when
# a step fails.
apply_pool_policy() {
  local policy=$1 out=$2
  mkdir -p "$out" && cp "$GL_SLURM_CLUSTER_CONF" "$out/slurm.conf.orig" || return 1
  "$BIN/gpulaunch" slurm-config --synthetic "leaf:2 node:2" --out "$out" --policy "$policy" \
    --slurm-conf "$GL_SLURM_CLUSTER_CONF" > "$out/config.out" 2>&1 || { cat "$out/config.out"; return 1; }
  printf 'PriorityFlags=MAX_TRES\nJobSubmitPlugins=lua\n' >> "$GL_SLURM_CLUSTER_CONF"
  cp "$out/job_submit.lua" "$S/job_submit.lua"
  _pool_on1 scontrol reconfigure || return 1
  _pool_on1 sh "$out/apply.sh" > "$out/apply.out" 2>&1 || { cat "$out/apply.out"; return 1; }
  echo "Include $out/slurm-policy.conf" >> "$GL_SLURM_CLUSTER_CONF"
  _pool_on1 scontrol reconfigure
}

# Undoes apply_pool_policy: remove_pool_policy OUT_DIR "ACCOUNTS" "USERS"
# (jobs of those users cancelled, the gl-* partitions and the accounts' QOS
# deleted, slurm.conf restored, the users' associations and the accounts
# removed). Quiet; safe to call twice.
remove_pool_policy() {
  local out=$1 accounts=$2 users=$3 a u
  for u in $users; do _pool_on1 scancel -u "$u" 2> /dev/null; done
  sleep 1
  for a in $accounts; do _pool_on1 scontrol delete PartitionName="gl-$a" 2> /dev/null; done
  _pool_on1 scontrol delete PartitionName=gl-borrowed 2> /dev/null
  [ -f "$out/slurm.conf.orig" ] && cp "$out/slurm.conf.orig" "$GL_SLURM_CLUSTER_CONF"
  rm -f "$S/job_submit.lua"
  _pool_on1 scontrol reconfigure > /dev/null 2>&1
  for a in $accounts; do
    for u in $users; do _pool_on1 sacctmgr -i delete user "$u" where account="$a" > /dev/null 2>&1; done
  done
  # shellcheck disable=SC2086 # lists of names
  _pool_on1 sacctmgr -i delete account $accounts > /dev/null 2>&1
  for a in $accounts; do _pool_on1 sacctmgr -i delete qos "gl-$a" > /dev/null 2>&1; done
}
_pool_on1() { ip netns exec "${NSP}n1" env SLURM_CONF="$GL_SLURM_CLUSTER_CONF" "$@"; }
