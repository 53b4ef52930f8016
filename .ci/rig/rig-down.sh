#!/usr/bin/env bash
# Stops what the rig scripts started, from their record in $RIG/pids: the
# daemons (sshd, munged, slurmctld, slurmd) by PID, then the namespaces and
# /etc/netns entries of netns-up.sh. Safe to run twice.
set -uo pipefail
: "${RIG:?set RIG to the scratch directory given to the rig scripts}"
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
