#!/usr/bin/env python3
"""The golden of `gpulaunch check --format json` on the namespace rig (issue 18).

Only what is stable from run to run is kept: the format, the verdicts, every
host's name and verdict, every check's state, and the detail of the checks
whose text depends on the rig alone (names, addresses, MTU, NIC, GPUs, paths).
Timings, clock offsets, versions and free-port counts are dropped. The job
directory (--work) becomes {work}.

  check_json_golden.py --json CHECK.json --work DIR --golden FILE [--update]

The golden: tests/data/golden/check/rig.txt (multihost_test.sh, section 5h).

Exit 0 when the normalised output matches FILE, 1 with a unified diff when it
does not, 2 for usage errors.
"""
import argparse
import difflib
import json
import sys

STABLE_DETAIL = ("dns", "mtu", "nic", "gpu-nic", "gpus", "tmp", "binary")


def normalise(doc, work):
    lines = [f"format {doc['format']} ok {doc['ok']}"]
    for host in doc["hosts"]:
        lines.append(f"host {host['host']} ok {host['ok']}")
        for name, check in host["checks"].items():
            detail = check["detail"].replace(work, "{work}") if name in STABLE_DETAIL else "-"
            lines.append(f"  {name}: {check['state']}: {detail}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--update", action="store_true")
    a = ap.parse_args()
    try:
        with open(a.json) as f:
            got = normalise(json.load(f), a.work)
    except (OSError, ValueError, KeyError) as e:
        print(f"check_json_golden: cannot read {a.json}: {e}", file=sys.stderr)
        return 1
    if a.update:
        with open(a.golden, "w") as f:
            f.write(got)
        return 0
    with open(a.golden) as f:
        want = f.read()
    if got == want:
        return 0
    sys.stdout.writelines(difflib.unified_diff(want.splitlines(True), got.splitlines(True), a.golden, "got"))
    return 1


if __name__ == "__main__":
    sys.exit(main())
