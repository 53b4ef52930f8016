"""run-suite's network section (issue 44): placement on a two-tier network.

The namespace rig (GL_RIG) made two-tier and shaped by .ci/rig/shape-two-leaf.sh
(node1+node2 | node3+node4, one tbf-shaped uplink, shaped host ports; rates from
GL_SHAPE_UPLINK_MBIT and GL_SHAPE_PORT_MBIT, default 20 and 80). linkcheck
measures the links first (--concurrent: pairs, shared memory, the leaves), then
one communication-heavy job (transformer_train --layout tp=4,dp=2, 8 ranks, 2
per host) runs under three plans, interleaved, in one run:
  - gpulaunch's plan (compact, from the measured links) over a hostfile that
    interleaves the leaves: the anchor;
  - Open MPI's by-slot order of the hosts as listed (node1..node4);
  - the forced bad plan: by-slot over the interleaved hostfile (each TP group
    across the uplink).
Each figure is a plan's step time against gpulaunch's; beside it the model's
ratio for the same two plans (gpulaunch plan --format json with the same
links) and the bytes the uplink carried (its veths' tx_bytes). The goal:
gpulaunch's plan the fastest of the three in every run, and the model's order
of every pair of plans the measured one."""

import json
import os
import re
import subprocess


def network(s):
    rig, nsp = os.environ.get("GL_RIG"), os.environ.get("GL_NSP", "glr")
    if s.args.quick:
        # About 3 minutes, and it reshapes the rig the multi-host tests use.
        s.note("network", "not measured with --quick (run --only network: about 4 minutes with the rig up)")
        return
    if not rig or not os.path.exists(os.path.join(rig, "ssh", "ssh_config")):
        s.note("network", "not measured: the test rig is not up (set GL_RIG, see docs/testing.md)")
        return
    uplink = os.environ.get("GL_SHAPE_UPLINK_MBIT", "20")
    port = os.environ.get("GL_SHAPE_PORT_MBIT", "80")
    shape = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".ci", "rig",
                         "shape-two-leaf.sh")
    shape_env = dict(os.environ, RIG=rig, NSP=nsp)
    state = os.path.join(s.scratch, "state")
    links = os.path.join(state, "gpulaunch", "links.json")
    env = dict(s.env, OMPI_MCA_plm_rsh_agent="ssh", OMPI_MCA_plm_rsh_args="-F %s/ssh/ssh_config" % rig,
               XDG_STATE_HOME=state)
    on_node1 = ["ip", "netns", "exec", nsp + "n1", "unshare", "--uts", "sh", "-c", 'hostname node1; exec "$@"', "sh"]
    gl = os.path.join(s.bin, "gpulaunch")

    def uplink_bytes():
        total = 0
        for dev in ("up0", "up1"):
            out = subprocess.run(["ip", "netns", "exec", nsp + "br", "cat",
                                  "/sys/class/net/%s/statistics/tx_bytes" % dev],
                                 stdout=subprocess.PIPE, text=True, check=True).stdout
            total += int(out)
        return total

    subprocess.run([shape, "--uplink", uplink + "mbit", "--port", port + "mbit"], env=shape_env, check=True,
                   stdout=subprocess.DEVNULL)
    try:
        s.run(on_node1 + [gl, "linkcheck", "-H", "node1,node2,node3,node4", "--allow-run-as-root", "--tls", "tcp",
                          "--iterations", "50", "--sizes", "1", "--mib-per-size", "4", "--window", "2",
                          "--concurrent"], env=env, timeout=900)
        with open(links) as f:
            leaves = [l["hosts"] for l in json.load(f)["leaves"]]
        s.note("network", "uplink %s Mbit/s, ports %s Mbit/s; leaves linkcheck inferred: %s" %
               (uplink, port, " | ".join(",".join(h) for h in leaves)))
        hostfiles = {}
        for name, order in (("given", "node1 node2 node3 node4"), ("interleaved", "node1 node3 node2 node4")):
            path = os.path.join(s.scratch, name + ".hosts")
            with open(path, "w") as f:
                f.write("".join("%s slots=2\n" % h for h in order.split()))
            hostfiles[name] = path
        plans = [("gpulaunch's plan (compact, measured links)", "interleaved", "compact"),
                 ("Open MPI's by-slot order, hosts as listed", "given", "by-slot"),
                 ("forced: by-slot over interleaved leaves", "interleaved", "by-slot")]
        job = ["-n", "8", "--layout", "tp=4,dp=2", "--allow-run-as-root", "--links", links]
        steps = 4
        program = [os.path.join(s.bin, "transformer_train"), "--steps", str(steps), "--vocab", "64", "--hidden", "64",
                   "--seq", "128", "--batch", "16"]
        modelled, plan_hash = {}, {}
        for label, hosts, policy in plans:
            proc, _ = s.run(on_node1 + [gl, "plan", "--hostfile", hostfiles[hosts], "--policy", policy, "--format",
                                        "json"] + job, env=env)
            plan = json.loads(proc.stdout)
            modelled[label], plan_hash[label] = plan["summary"]["total_seconds"], plan["plan_hash"]
        reps = s.args.repeats or (1 if s.args.quick else 3)
        step_s = {label: [] for label, _, _ in plans}
        moved = {label: [] for label, _, _ in plans}
        for rep in range(reps):
            order = plans[rep % len(plans):] + plans[:rep % len(plans)]  # interleaved, rotated
            for label, hosts, policy in order:
                before = uplink_bytes()
                proc, _ = s.run(on_node1 + [gl, "--hostfile", hostfiles[hosts], "--policy", policy, "--no-summary",
                                            "-x", "OMPI_MCA_mpi_yield_when_idle=1"] + job + program, env=env,
                                timeout=900)
                moved[label].append(uplink_bytes() - before)
                m = re.search(r"(\d+) steps, .*; ([0-9.]+) s; weights", proc.stdout + proc.stderr)
                if not m:
                    raise RuntimeError("transformer_train printed no step time:\n" + proc.stdout[-2000:])
                step_s[label].append(float(m.group(2)) / int(m.group(1)))
        ours = plans[0][0]
        # A plan that is gpulaunch's own (the same hash: by-slot over hosts
        # listed in the leaves' order) differs from it only by the machine's
        # noise, and is left out of "the fastest".
        others = [l for l, _, _ in plans[1:] if plan_hash[l] != plan_hash[ours]]
        fastest_every_run = all(step_s[ours][i] <= min(step_s[l][i] for l in others) for i in range(reps))
        agree = []
        for label, _, _ in plans[1:]:
            differs = plan_hash[label] != plan_hash[ours]
            f = s.figure("network", "step time, %s" % label, "s", step_s[label], ours, step_s[ours],
                         lower_is_better=False,
                         target=(1.0, "at least gpulaunch's (gpulaunch's plan the fastest)") if differs else None)
            model_ratio = modelled[label] / modelled[ours]
            same = (model_ratio > 1) == (f["ratio"] > 1) or abs(model_ratio - 1) < 1e-9
            agree.append(same)
            if not differs:
                s.note("network", "%s: the same plan as gpulaunch's (hash %s...): measured %.2f x (%.2f-%.2f over %d "
                       "runs), which is this machine's run-to-run noise (gpulaunch's own steps swung %.2f x)" %
                       (label, plan_hash[ours][:12], f["ratio"], f["spread"]["min"], f["spread"]["max"], reps,
                        f["anchor"]["swing"]))
                continue
            s.note("network", "%s: measured %.2f x gpulaunch's step (%.2f-%.2f over %d runs), modelled %.2f x; "
                   "order %s" % (label, f["ratio"], f["spread"]["min"], f["spread"]["max"], reps, model_ratio,
                                 "as measured" if same else "NOT as measured"))
        s.note("network", "gpulaunch's plan the fastest of the plans that differ from it, in every run: %s; the "
               "model's order of each plan against gpulaunch's as measured: %s" % (
                   "yes" if fastest_every_run else "no", "yes" if all(agree) else "no"))
        s.note("network", "bytes across the uplink per run (median): " + "; ".join(
            "%s %.1f MB" % (label, sorted(moved[label])[len(moved[label]) // 2] / 1e6) for label, _, _ in plans))
    finally:
        subprocess.run([shape, "--flat"], env=shape_env, stdout=subprocess.DEVNULL)
