"""run-suite's replay section (issue 46): the simulator against Slurm.

`gpulaunch sim --replay` compares, per job, the start the simulator gives a
job with the start Slurm gave it, and the average JCT of both (the anchor:
Slurm's, from sacct). Goals, over at least 30 jobs: mean |start difference|
at most 3 s and the average JCT within 5 % (moonshot: 1 s, sacct's
resolution).
  - Always (also with --quick): the bundled export of a run on the CI cluster
    (tests/data/slurm/replay-rig-36.sacct: 36 sleep jobs, 1-8 GPUs) under
    fifo-first-fit and best-fit, a 1 s start latency; and the export of a run
    under the pool's policy (tests/data/slurm/replay-rig-quota-36.sacct:
    rig-quota-36.csv, two teams of nominal 8 and borrow limit 8, GraceTime
    0) with the timing that run read from the cluster (reclaim delay 2 s,
    requeue hold 120 s, the backfill's last cycle 620 s before the first
    submission), the simulator's backfill off and on; and a run of the same
    trace that missed the goals (replay-rig-quota-36-missed.sacct, with
    sacct's Flags), with where it and the simulation part; and those two
    runs, and five more (replay-rig-quota-36-runs/), each against each
    (--against): how far Slurm is from itself on this trace, the floor under
    any simulator's figure, beside the simulator against each run; the same
    for the runs of that trace with grace_s 40 (replay-rig-quota-36-grace40/:
    GraceTime 10, victims killed at slurmctld's 30 s passes, tier billing).
  - With the 4-node cluster and accounting up (GL_SLURM_CLUSTER_CONF), not
    with --quick: tests/data/traces/replay/rig-36.csv submitted anew (about
    4 minutes) and compared the same way; then rig-quota-36.csv under the
    pool's policy, applied for the run and removed after it by
    live-quota-replay (two team accounts of nominal 8, borrow limit 8,
    GraceTime 0; about 8 minutes), twice, and the two runs against each
    other: Slurm's run-to-run spread measured in the same suite run; then
    the same twice with grace_s 40 (GraceTime 10)."""

import glob
import os
import re
import statistics
import tempfile

from suite_common import ROOT

CLUSTER = "leaf:2 node:2 gpu:4"
# Five more recorded runs of rig-quota-36.csv (2026-12-06, back to back, live-quota-replay SAVE).
QUOTA_RUNS = os.path.join(ROOT, "tests", "data", "slurm", "replay-rig-quota-36-runs")
# The pool's policy as live-quota-replay applies it: two teams of nominal 8,
# borrow limit 8; Slurm's reclaim delay and requeue hold on the rig.
QUOTA = ["--quota", "ra:8/8/8,rb:8/8/8"]
QUOTA_HOLDS = ["--reclaim-delay", "2", "--requeue-hold", "120"]
QUOTA_RUN = QUOTA + QUOTA_HOLDS + ["--backfill-last=-620"]
# Runs of rig-quota-36.csv under the policy with grace_s 40 (GraceTime 10:
# victims die at slurmctld's 30 s time-limit pass) and the tier billing of
# the rig's nodes (a CPU bills 2), 2026-12-07 (live-quota-replay SAVE 40).
GRACE_RUNS = os.path.join(ROOT, "tests", "data", "slurm", "replay-rig-quota-36-grace40")
GRACE_HOLDS = ["--grace-time", "10", "--cpu-billing", "2", "--requeue-hold", "120"]


def _parse(text):
    mean = re.search(r"^start difference: mean \|d\| ([0-9.]+) s, max ([0-9.]+) s; within 1 s: (\d+), "
                     r"within 3 s: (\d+) of (\d+)$", text, re.M)
    # observed/simulated, or (--against) first run/second run
    jct = re.search(r"^average JCT: (?:observed|first run) ([0-9.]+) s, (?:simulated|second run) ([0-9.]+) s", text,
                    re.M)
    if not mean or not jct:
        raise ValueError("sim --replay printed no comparison:\n" + text)
    return {"mean": float(mean.group(1)), "max": float(mean.group(2)), "within1": int(mean.group(3)),
            "within3": int(mean.group(4)), "jobs": int(mean.group(5)), "observed_jct": float(jct.group(1)),
            "simulated_jct": float(jct.group(2))}


def _report(s, label, r):
    error = r["simulated_jct"] / r["observed_jct"] - 1
    s.figure("replay", "average JCT simulated, %s" % label, "s", [r["simulated_jct"]], "Slurm's (sacct)",
             [r["observed_jct"]])
    goals = r["jobs"] >= 30 and r["mean"] <= 3 and abs(error) <= 0.05
    s.note("replay", "%s: mean |start difference| %.1f s (max %.1f s; within 1 s %d, within 3 s %d of %d jobs), "
           "average JCT error %+.1f %%: goals (>= 30 jobs, <= 3 s, within 5 %%) %s; moonshot (<= 1 s) %s" %
           (label, r["mean"], r["max"], r["within1"], r["within3"], r["jobs"], error * 100,
            "met" if goals else "NOT met", "met" if r["mean"] <= 1 else "not met"))


def _floor(s, label, text):
    """Slurm against itself (sim --replay --against): the spread of its own
    runs of one trace, which no simulator's prediction can beat per run."""
    r = _parse(text)
    apart = re.search(r"^average JCT: .*\(([-+][0-9.]+) %\)$", text, re.M)
    s.note("replay", "Slurm against itself, %s: mean |start difference| %.1f s (max %.1f s; within 3 s %d of %d jobs), "
           "average JCT %s %% apart: the run-to-run spread, the floor under the figures above" %
           (label, r["mean"], r["max"], r["within3"], r["jobs"], apart.group(1) if apart else "?"))


def _teams(export):
    """--quota for an export of rig-quota-36.csv: its two accounts, team 0 (ra, sqa...) first."""
    with open(export) as f:
        header = f.readline().rstrip("\n").split("|")
        col = header.index("Account")
        accounts = sorted({line.rstrip("\n").split("|")[col] for line in f if line.strip()})
    return ",".join("%s:8/8/8" % a for a in accounts)


def _spread(s, gl, exports, holds=QUOTA_HOLDS, label="rig-quota-36.csv"):
    """Slurm against itself over every pair of recorded runs of one trace, and
    the simulator (the replay's defaults under the pool's policy, with
    `holds`: the cluster's timing in those runs) against each run: is the
    simulator as close to a run as Slurm's other runs are?"""
    pairs, sims, jct = [], [], []
    for i, a in enumerate(exports):
        proc, _ = s.run([gl, "sim", "--replay", "--sacct", a, "--cluster", CLUSTER, "--start-latency", "1", "--quota",
                         _teams(a)] + holds)
        r = _parse(proc.stdout)
        sims.append(r["mean"])
        jct.append(abs(r["simulated_jct"] / r["observed_jct"] - 1) * 100)
        for b in exports[i + 1:]:
            proc, _ = s.run([gl, "sim", "--replay", "--sacct", a, "--against", b])
            pairs.append(_parse(proc.stdout)["mean"])
    s.figure("replay", "mean |start difference| of the simulator from a recorded run of %s (median)" % label,
             "s", sims, "two of Slurm's recorded runs (median pair)", pairs)
    s.note("replay", "Slurm against itself (--against), %d recorded runs of %s: the %d pairs are a mean "
           "%.1f s apart (median %.1f s; within 3 s: %d); the simulator is a mean %.1f s from a run (median %.1f s; "
           "within 3 s: %d of %d; JCT within 5 %%: %d): the run-to-run spread is the floor under the goal of 3 s" %
           (len(exports), label, len(pairs), statistics.mean(pairs), statistics.median(pairs),
            sum(p <= 3 for p in pairs), statistics.mean(sims), statistics.median(sims), sum(m <= 3 for m in sims),
            len(sims), sum(j <= 5 for j in jct)))


def replay(s):
    gl = os.path.join(s.bin, "gpulaunch")
    export = os.path.join(ROOT, "tests", "data", "slurm", "replay-rig-36.sacct")
    for policy in ("fifo-first-fit", "best-fit"):
        proc, _ = s.run([gl, "sim", "--replay", "--sacct", export, "--cluster", CLUSTER, "--policy", policy,
                         "--start-latency", "1"])
        _report(s, "recorded run (replay-rig-36.sacct), %s" % policy, _parse(proc.stdout))
    quota_export = os.path.join(ROOT, "tests", "data", "slurm", "replay-rig-quota-36.sacct")
    for backfill in ("off", "on"):
        proc, _ = s.run([gl, "sim", "--replay", "--sacct", quota_export, "--cluster", CLUSTER, "--start-latency", "1",
                         "--backfill", backfill] + QUOTA_RUN)
        _report(s, "recorded run under the pool's policy (replay-rig-quota-36.sacct), fifo-first-fit, backfill %s"
                % backfill, _parse(proc.stdout))
    # A run of the same trace that missed: where the runs part, and why.
    missed = os.path.join(ROOT, "tests", "data", "slurm", "replay-rig-quota-36-missed.sacct")
    proc, _ = s.run([gl, "sim", "--replay", "--sacct", missed, "--cluster", CLUSTER, "--start-latency", "1"] +
                    QUOTA + QUOTA_HOLDS)
    _report(s, "recorded run under the pool's policy that missed (replay-rig-quota-36-missed.sacct), fifo-first-fit",
            _parse(proc.stdout))
    part = re.search(r"^the runs part at (.*)$", proc.stdout, re.M)
    if part:
        s.note("replay", "that run and the simulation part at " + part.group(1))
    _spread(s, gl, [quota_export, missed] + sorted(glob.glob(os.path.join(QUOTA_RUNS, "*.sacct"))))
    _spread(s, gl, sorted(glob.glob(os.path.join(GRACE_RUNS, "*.sacct"))), GRACE_HOLDS,
            "rig-quota-36.csv with GraceTime 10")
    conf = os.environ.get("GL_SLURM_CLUSTER_CONF")
    if s.args.quick:
        s.note("replay", "the live replays are not run with --quick (run --only replay with the cluster up: about "
               "40 minutes)")
        return
    accounting = os.path.join(os.path.dirname(conf), "accounting") if conf else ""
    if not conf or not os.path.exists(accounting) or open(accounting).read().strip() != "on":
        s.note("replay", "live replay not measured: the 4-node cluster with accounting is not up "
               "(GL_SLURM_CLUSTER_CONF; docs/testing.md)")
        return
    nsp = os.environ.get("GL_NSP", "glr")
    trace = os.path.join(ROOT, "tests", "data", "traces", "replay", "rig-36.csv")
    proc, took = s.run(["ip", "netns", "exec", nsp + "n1", "env", "SLURM_CONF=" + conf, gl, "sim", "--replay",
                        "--trace", trace, "--cluster", CLUSTER, "--start-latency", "1"], timeout=1200)
    _report(s, "live (rig-36.csv submitted now, %.0f s), fifo-first-fit" % took, _parse(proc.stdout))
    quota_trace = os.path.join(ROOT, "tests", "data", "traces", "replay", "rig-quota-36.csv")
    with tempfile.TemporaryDirectory() as tmp:
        exports = []
        for run in (1, 2):
            exports.append(os.path.join(tmp, "run%d.sacct" % run))
            proc, took = s.run([os.path.join(ROOT, "benchmarks", "live-quota-replay"), s.bin, quota_trace,
                                exports[-1]], timeout=1800)
            _report(s, "live under the pool's policy (rig-quota-36.csv submitted now, run %d, %.0f s), fifo-first-fit"
                    % (run, took), _parse(proc.stdout))
        proc, _ = s.run([gl, "sim", "--replay", "--sacct", exports[0], "--against", exports[1]])
        _floor(s, "the two live runs of rig-quota-36.csv", proc.stdout)
        # The same with grace_s 40: GraceTime 10, victims killed at slurmctld's passes.
        graced = []
        for run in (1, 2):
            graced.append(os.path.join(tmp, "grace%d.sacct" % run))
            proc, took = s.run([os.path.join(ROOT, "benchmarks", "live-quota-replay"), s.bin, quota_trace,
                                graced[-1], "40"], timeout=1800)
            _report(s, "live under the pool's policy with grace_s 40 (GraceTime 10; rig-quota-36.csv, run %d, %.0f s), "
                    "fifo-first-fit" % (run, took), _parse(proc.stdout))
        proc, _ = s.run([gl, "sim", "--replay", "--sacct", graced[0], "--against", graced[1]])
        _floor(s, "the two live runs of rig-quota-36.csv with GraceTime 10", proc.stdout)
