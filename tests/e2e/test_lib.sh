# Sourced by the e2e shell tests: one tally of checks, and the namespace
# rig's precondition. Usage:
#   . "$(dirname "$0")/test_lib.sh"
#   need_netns_rig multihost          # exits 77 (skipped, saying why) without the rig
#   check "what" "$got" "$want"       # ok or FAIL, counted; returns 1 on a failure,
#   ok "what"; bad "what (why)"       #   so a caller can show what it has: check ... || tail F
#   finish multihost                  # the summary line; the script's status (last command)
passed=0
failed=0
ok() { echo "ok   - $1"; passed=$((passed + 1)); }
bad() { echo "FAIL - $1"; failed=$((failed + 1)); }
check() {
  if [ "$2" = "$3" ]; then ok "$1"; return 0; fi
  bad "$1 (got '$2', want '$3')"
  return 1
}
finish() {
  echo "$1: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

# The 4 hosts of .ci/rig/netns-up.sh (namespaces ${GL_NSP}n1..4 with sshd,
# their ssh_config under $GL_RIG): sets NSP, or exits 77 saying so.
need_netns_rig() {
  NSP=${GL_NSP:-glr}
  if [ -z "${GL_RIG:-}" ] || [ ! -f "$GL_RIG/ssh/ssh_config" ] || ! ip netns list 2>/dev/null | grep -q "^${NSP}n1"; then
    echo "$1: netns rig not up (run .ci/rig/netns-up.sh and set GL_RIG); skipped"
    exit 77
  fi
}
