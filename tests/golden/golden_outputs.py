#!/usr/bin/env python3
"""Golden outputs of gpulaunch's deterministic commands, byte for byte.

Recorded before the launcher's redesign (issue 18) so that every later commit
can show it changed nothing a user sees: `--dry-run` and `plan --format json`
on every recorded topology, `plan --explain` on a synthetic fabric, `sim` on
both bundled traces, and `slurm-config` with a policy file.

What is not stable is normalised away, and only that: the build directory
(printed in engine commands) becomes {bin}, the source tree {src}, and the
simulator's measured decision times (`decision_us_*`, wall-clock) are dropped.

  golden_outputs.py --bin BUILD/bin --src SOURCE [--update] [--only SUBSTRING]

Exit 0 when every case matches tests/data/golden/outputs/<case>.txt, 1 naming
each case that differs (with a unified diff), 2 for usage errors. --update
rewrites the files: review the diff before committing it.
"""
import argparse
import difflib
import glob
import json
import os
import re
import subprocess
import sys
import tempfile


def nccl_machines(src):
    """The NCCL topology files that describe a whole host (not the graph file, not fragments without GPUs)."""
    nccl_dir = os.path.join(src, "tests", "data", "topologies", "nccl")
    skip = {"azhpc-images/ncv4-graph.xml", "aws-ofi-nccl/g5.48xl-topo.xml", "aws-ofi-nccl/p5.48xl-topo.xml"}
    return [x for x in sorted(glob.glob(os.path.join(nccl_dir, "**", "*.xml"), recursive=True))
            if os.path.relpath(x, nccl_dir) not in skip]


def cases(src):
    """(name, argv after the gpulaunch binary, kind) for every golden case."""
    topo_dir = os.path.join(src, "tests", "data", "topologies", "hwloc")
    out = []
    for xml in sorted(glob.glob(os.path.join(topo_dir, "**", "*.xml"), recursive=True)) + nccl_machines(src):
        stem = os.path.relpath(xml, topo_dir).replace("/", "_")[:-4].replace(".._nccl_", "nccl_")
        out.append((f"dry-run_{stem}", ["--dry-run", "--topology-file", xml, "/bin/true"], "text"))
        out.append((f"dry-run-2hosts_{stem}", ["--dry-run", "-H", "a,b", "--topology-file", xml, "/bin/true"], "text"))
        out.append((f"plan-json_{stem}", ["plan", "-n", "4", "--format", "json", "--topology-file", xml], "text"))
    # MPICH's Hydra: its hostfile and command (mpiexec.hydra need not be installed for a dry run).
    lassen = os.path.join(topo_dir, "mpibind", "coral-lassen.xml")
    out.append(("dry-run-hydra-2hosts_coral-lassen", ["--dry-run", "--launcher", "hydra", "-H", "a,b", "--tag",
                                                      "--topology-file", lassen, "/bin/true", "--steps", "3"], "text"))
    out.append(("plan-explain_synthetic", ["plan", "-n", "32", "--layout", "tp=8,pp=2", "--synthetic",
                                           "switch:2 node:4 gpu:8 nic:4", "--explain"], "text"))
    out.append(("plan-json_synthetic-tree", ["plan", "-n", "64", "--layout", "tp=4,pp=4", "--synthetic",
                                             "switch:2 node:4 gpu:8 nic:4", "--network",
                                             os.path.join(src, "tests/data/network/two-leaf.topology.conf"),
                                             "--format", "json"], "text"))
    traces = os.path.join(src, "tests", "data", "traces")
    out.append(("sim_tiresias", ["sim", "--trace", os.path.join(traces, "tiresias/60_job.csv"), "--cluster",
                                 "leaf:2 node:2 gpu:4", "--format", "json"], "sim"))
    out.append(("sim_elasticflow-quota", ["sim", "--trace", os.path.join(traces, "elasticflow-itp/cluster06.csv"),
                                          "--cluster", "leaf:2 node:8 gpu:8", "--teams", "3", "--quota",
                                          "a:16/48/32,b:16/40/32,c:16/40/32", "--checkpoint", "1800",
                                          "--format", "json"], "sim"))
    out.append(("sim_replay-sacct", ["sim", "--replay", "--sacct",
                                     os.path.join(src, "tests/data/slurm/replay-small-12.sacct"),
                                     "--cluster", "leaf:2 node:2 gpu:4", "--start-latency", "1"], "text"))
    out.append(("sim_replay-quota", ["sim", "--replay", "--sacct",
                                     os.path.join(src, "tests/data/slurm/replay-rig-quota-36.sacct"),
                                     "--cluster", "leaf:2 node:2 gpu:4", "--start-latency", "1",
                                     "--quota", "ra:8/8/8,rb:8/8/8", "--reclaim-delay", "2",
                                     "--backfill-last=-620", "--show", "36"], "text"))
    # GraceTime 10: victims killed at slurmctld's 30 s passes, tier billing.
    out.append(("sim_replay-grace", ["sim", "--replay", "--sacct",
                                     os.path.join(src, "tests/data/slurm/replay-rig-quota-36-grace40/2026-12-07-1.sacct"),
                                     "--cluster", "leaf:2 node:2 gpu:4", "--start-latency", "1",
                                     "--quota", "sqa13237:8/8/8,sqb13237:8/8/8", "--grace-time", "10",
                                     "--cpu-billing", "2", "--show", "36"], "text"))
    out.append(("sim_replay-against", ["sim", "--replay", "--sacct",
                                       os.path.join(src, "tests/data/slurm/replay-rig-quota-36.sacct"), "--against",
                                       os.path.join(src, "tests/data/slurm/replay-rig-quota-36-missed.sacct"),
                                       "--show", "36"], "text"))
    out.append(("slurm-config_policy", ["slurm-config", "--synthetic", "switch:2 node:2", "--network",
                                        os.path.join(src, "tests/data/network/two-leaf.topology.conf"),
                                        "--policy", os.path.join(src, "slurm/policy.example.json"),
                                        "--slurm-conf", os.path.join(src, "tests/data/slurm/site.slurm.conf")], "dir"))
    return out


def drop_timings(value):
    if isinstance(value, dict):
        return {k: drop_timings(v) for k, v in value.items() if not k.startswith("decision_us")}
    if isinstance(value, list):
        return [drop_timings(v) for v in value]
    return value


def run_case(binary, src, argv, kind):
    """The case's normalised output: stdout, then stderr and the exit code."""
    with tempfile.TemporaryDirectory() as tmp:
        if kind == "dir":
            argv = argv + ["--out", tmp]
        # No link file of this machine's user may change a plan (launches read
        # the default one): an empty state folder.
        env = dict(os.environ, XDG_STATE_HOME=os.path.join(tmp, "state"))
        res = subprocess.run([binary, *argv], capture_output=True, text=True, cwd=tmp, timeout=300, env=env)
        stdout = res.stdout
        if kind == "sim" and res.returncode == 0:
            stdout = json.dumps(drop_timings(json.loads(stdout)), indent=1, sort_keys=False) + "\n"
        text = stdout + "--- stderr\n" + res.stderr + f"--- exit {res.returncode}\n"
        if kind == "dir":
            for name in sorted(os.listdir(tmp)):
                with open(os.path.join(tmp, name), encoding="utf-8", errors="replace") as f:
                    text += f"--- file {name}\n" + f.read()
            text = text.replace(tmp, "{out}")
    text = text.replace(os.path.dirname(binary), "{bin}").replace(src, "{src}")
    return re.sub(r"gl-[0-9a-f]{8}", "gl-{job}", text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    binary = os.path.join(os.path.realpath(args.bin), "gpulaunch")
    src = os.path.realpath(args.src)
    if not os.access(binary, os.X_OK):
        print(f"golden_outputs: no gpulaunch in {args.bin}; build first", file=sys.stderr)
        return 2
    golden_dir = os.path.join(src, "tests", "data", "golden", "outputs")
    os.makedirs(golden_dir, exist_ok=True)
    passed = failed = 0
    for name, argv, kind in cases(src):
        if args.only not in name:
            continue
        got = run_case(binary, src, argv, kind)
        path = os.path.join(golden_dir, name + ".txt")
        if args.update:
            with open(path, "w", encoding="utf-8") as f:
                f.write(got)
            passed += 1
            continue
        want = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if got == want:
            passed += 1
            continue
        failed += 1
        print(f"golden_outputs: {name}: differs from {os.path.relpath(path, src)}"
              + ("" if want is not None else " (missing: record it with --update)"))
        diff = difflib.unified_diff((want or "").splitlines(True), got.splitlines(True), "golden", "now", n=1)
        sys.stdout.writelines(list(diff)[:60])
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
