"""run-suite's policies section: gpulaunch sim on the bundled traces in every
estimate mode against the baselines, quotas, locality, and decision time."""

import json
import os

from suite_common import ROOT


def sim(s, args):
    proc, took = s.run([os.path.join(s.bin, "gpulaunch"), "sim", "--format", "json"] + args, timeout=900)
    return json.loads(proc.stdout), took


BASELINES = ("fifo-first-fit", "best-fit", "tiresias", "slurm-multifactor")


def estimate_goals(s, where, modes):
    """The estimates issue's goals for one trace: gpulaunch's policy against the best baseline with
    user limits, against Tiresias with no estimates, and stranded GPUs."""
    for mode in ("perfect", "user", "none"):
        m = modes[mode]
        best = min(BASELINES, key=lambda b: m[b]["avg_jct_s"])
        target = {"user": (0.8, "at most 0.8 x the best baseline"),
                  "none": (1.1, "within 1.1 x Tiresias")}.get(mode)
        anchor = "tiresias" if mode == "none" else best
        s.figure("policies", "average JCT, %s estimates, %s" % (mode, where), "s", [m["topology"]["avg_jct_s"]],
                 "%s (%s estimates)" % (anchor, mode), [m[anchor]["avg_jct_s"]], target=target)
    m = modes["user"]
    least = min(m[b]["stranded_gpus"] for b in BASELINES)
    s.figure("policies", "GPUs stranded (time average), user estimates, " + where, "GPUs",
             [m["topology"]["stranded_gpus"]], "least stranding baseline", [max(least, 1e-9)],
             target=(0.5, "at most 0.5 x the best baseline"))
    rules = sum(sum(p["rules"].values()) for mm in modes.values() for p in mm.values())
    s.note("policies", "%s: SJF oracle (perfect run times, no preemption) %.2f h; runs ended by their user time "
           "limit: %d; hard rules broken over all %d runs: %d." %
           (where, modes["perfect"]["sjf-oracle"]["avg_jct_s"] / 3600, m["topology"]["reached_limit"],
            sum(len(mm) for mm in modes.values()), rules))


def locality(s):
    """Dataset caches: gpulaunch's policy with and without its preference for cached hosts."""
    spec = "jobs:1000 days:14 seed:3 datasets:100"
    r, _ = sim(s, ["--synthetic", spec, "--cluster", "leaf:2 node:8 gpu:8", "--data-cache", "2000",
                   "--policy", "topology"])
    by = {p["policy"]: p for p in r["policies"]}
    on, off = by["topology"], by["topology-no-locality"]
    s.figure("policies", "dataset cache hit rate, synthetic " + spec + ", 2,000 GB per host", "fraction",
             [on["cache_hit_rate"]], "without the locality preference", [off["cache_hit_rate"]],
             lower_is_better=False)
    s.figure("policies", "average JCT with dataset copies, synthetic " + spec, "s", [on["avg_jct_s"]],
             "without the locality preference", [off["avg_jct_s"]])
    s.note("policies", "Locality (%s, 2,000 GB LRU cache per host, 1.25 GB/s): %.1f h copying datasets with the "
           "preference, %.1f h without." % (spec, on["staging_hours"], off["staging_hours"]))


def policies(s):
    trace = os.path.join(ROOT, "tests", "data", "traces", "elasticflow-itp", "cluster06.csv")
    cluster = "leaf:2 node:8 gpu:8"
    every, _ = sim(s, ["--trace", trace, "--cluster", cluster, "--estimates", "all"])
    modes = {}
    for p in every["policies"]:
        modes.setdefault(p["estimates"], {})[p["policy"]] = p
    result = dict(every, policies=[p for p in every["policies"] if p["estimates"] == "user"] +
                  [modes["perfect"]["sjf-oracle"]])
    by = modes["user"]
    ours, fifo, best = by["topology"], by["fifo-first-fit"], by["best-fit"]
    where = "medium trace (ElasticFlow ITP cluster06, 2,396 jobs), %s (%d GPUs)" % (cluster, every["gpus"])
    s.figure("policies", "average JCT, user time limits, " + where, "s", [ours["avg_jct_s"]], "FIFO + first-fit",
             [fifo["avg_jct_s"]], target=(0.8, "at most 0.8 x FIFO + first-fit"))
    estimate_goals(s, "medium trace, " + cluster, modes)
    openb = os.path.join(ROOT, "tests", "data", "traces", "alibaba-openb", "openb_pod_list_default.csv")
    second, _ = sim(s, ["--trace", openb, "--cluster", "leaf:1 node:4 gpu:8", "--estimates", "all"])
    second_modes = {}
    for p in second["policies"]:
        second_modes.setdefault(p["estimates"], {})[p["policy"]] = p
    estimate_goals(s, "Alibaba openb pods (6,203 with GPUs), leaf:1 node:4 gpu:8", second_modes)
    locality(s)
    s.figure("policies", "p95 JCT, " + where, "s", [ours["p95_jct_s"]], "FIFO + first-fit", [fifo["p95_jct_s"]])
    s.figure("policies", "GPU utilisation, " + where, "fraction", [ours["utilization"]], "FIFO + first-fit",
             [fifo["utilization"]], lower_is_better=False)
    s.figure("policies", "GPUs stranded by fragmentation (time average), " + where, "GPUs",
             [ours["stranded_gpus"]], "best-fit without topology", [max(best["stranded_gpus"], 1e-9)],
             target=(0.5, "at most 0.5 x best-fit"))
    s.figure("policies", "leaf switches spanned per job over the minimum, " + where, "ratio",
             [ours["avg_leaves_over_min"]], "best-fit without topology", [best["avg_leaves_over_min"]])
    quota = "a:16/48/32,b:16/40/32,c:16/40/32"
    teams, _ = sim(s, ["--trace", trace, "--cluster", cluster, "--teams", "3", "--quota", quota])
    t = {p["policy"]: p for p in teams["policies"]}
    s.figure("policies", "average JCT with 3 teams and quotas " + quota, "s", [t["topology"]["avg_jct_s"]],
             "FIFO + first-fit (quotas, no reclaim)", [t["fifo-first-fit"]["avg_jct_s"]])
    ckpt, _ = sim(s, ["--trace", trace, "--cluster", cluster, "--teams", "3", "--quota", quota, "--checkpoint",
                      "1800", "--policy", "topology"])
    c = ckpt["policies"][0]
    s.figure("policies", "average JCT with 3 teams and quotas, checkpoints every 30 min", "s", [c["avg_jct_s"]],
             "FIFO + first-fit (quotas, no reclaim)", [t["fifo-first-fit"]["avg_jct_s"]])
    rules = sum(sum(p["rules"].values()) for run in (every, teams, ckpt) for p in run["policies"])
    s.note("policies", "With 3 teams (jobs dealt round-robin in submit order: the trace has no teams) and quotas "
           "%s: topology policy %d guarantee violations; preempted jobs starting over, %d preemptions losing %.0f "
           "GPU-hours; with a checkpoint every 30 minutes, %d preemptions losing %.0f GPU-hours. FIFO + first-fit "
           "%d violations (it never reclaims). Without teams the policy migrated %d jobs (%.1f GPU-hours) to "
           "defragment. Hard rules found broken by the simulator's audit over all these runs: %d. Unless "
           "said otherwise the policies see user time limits (sim --estimates user)."
           % (quota, t["topology"]["guarantee_violations"], t["topology"]["preemptions"],
              t["topology"]["gpu_hours_lost"], c["preemptions"], c["gpu_hours_lost"],
              t["fifo-first-fit"]["guarantee_violations"], ours["migrations"], ours["gpu_hours_lost"], rules))
    # Decision time at 1,024 hosts against 64 hosts, one synthetic stream
    # that keeps the queue long (fixed seed).
    import random
    rng = random.Random(7)
    stream = os.path.join(s.out, "stress-trace.csv")
    with open(stream, "w") as f:
        f.write("id,submit,duration,gpus\n")
        for i in range(4000 if not s.args.quick else 1500):
            f.write("%d,%d,%d,%d\n" % (i, i * 2, rng.choice([600, 3600, 7200, 36000]),
                                       rng.choice([1, 1, 2, 4, 8, 8, 16, 32, 64])))
    per_pass = {}
    for hosts, spec in ((64, "leaf:4 node:16 gpu:8"), (1024, "leaf:32 node:32 gpu:8")):
        r, _ = sim(s, ["--trace", stream, "--cluster", spec, "--policy", "topology"])
        per_pass[hosts] = r["policies"][0]["decision_us_avg"]
    os.unlink(stream)
    s.figure("policies", "scheduling pass (all queued jobs), 1,024 hosts", "us", [per_pass[1024]],
             "the same stream on 64 hosts", [per_pass[64]], target=(1000.0 / max(per_pass[64], 1e-9),
                                                                     "at most 1 ms per pass"))

    # The same plots as benchmarks/plot-sim draws for any sim run.
    from importlib.machinery import SourceFileLoader
    plot_sim = SourceFileLoader("plot_sim", os.path.join(ROOT, "benchmarks", "plot-sim")).load_module()
    for name, draw in plot_sim.DRAWINGS:
        s.plot("policies", name, lambda ax, draw=draw: draw(ax, result))
