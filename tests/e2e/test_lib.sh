# Sourced by the e2e shell tests: one tally of checks, and the namespace
# rig's precondition. Usage:
#   . "$(dirname "$0")/test_lib.sh"
#   need_netns_rig multihost          # exits 77 (skipped, saying why) without the rig
#   check "what" "$got" "$want"       # ok or FAIL, counted; returns 1 on a failure,
#   ok "what"; bad "what (why)"       #   so a caller can show what it has: check ... || tail F
#   finish multihost                  # the summary line; the script's status (last command)
#   check_same_end WHAT RC CLEAN_RC ATTACKED.json CLEAN.json ATTACKED.err
#                                     # an attacked job ended as the clean run did
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

# A field of a gpulaunch summary (JSON), as Python prints it.
summary_field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d.get(sys.argv[2]))" "$1" "$2"; }

# An attacked job ended as its clean run did: the same exit code (RC against
# CLEAN_RC), the same exit code in its summary, and no root cause printed.
check_same_end() {
  check "$1: the exit code is the clean run's" "$2" "$3"
  check "... the summary's exit code too" "$(summary_field "$4" exit_code)" "$(summary_field "$5" exit_code)"
  check "... no root cause was printed" "$(grep -c 'root cause' "$6")" 0
}
