#!/usr/bin/env bash
# Undoes netns-up.sh: kills the sshds it started (by PID), deletes its
# namespaces and /etc/netns entries. Safe to run twice.
set -uo pipefail
: "${RIG:?set RIG to the scratch directory given to netns-up.sh}"
[ -f "$RIG/pids" ] || exit 0
while read -r kind what; do
  case "$kind" in
    pid) kill "$what" 2>/dev/null || true ;;
  esac
done < "$RIG/pids"
sleep 0.2
while read -r kind what; do
  case "$kind" in
    pid) kill -9 "$what" 2>/dev/null || true ;;
    netns) ip netns delete "$what" 2>/dev/null || true ;;
    etcnetns) rm -rf "$what" ;;
  esac
done < "$RIG/pids"
rm -f "$RIG/pids"
