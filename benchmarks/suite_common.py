"""What every section of benchmarks/run-suite shares: the Suite (runs, figures,
notes, plots), logging and the result helpers."""

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTIONS = ["launch", "scale", "placement", "reductions", "pipeline", "links", "network", "policies", "replay"]


def log(message):
    print("run-suite: " + message, file=sys.stderr, flush=True)


def fail(message, code=1):
    print("run-suite: error: " + message, file=sys.stderr)
    sys.exit(code)


class Suite:
    """Collects figures and plots; each figure is a value against its anchor."""

    def __init__(self, args):
        self.args = args
        self.bin = os.path.join(args.build_dir, "bin")
        self.out = args.out
        self.plots_dir = os.path.join(self.out, "plots")
        self.sections = {name: {"name": name, "figures": [], "notes": [], "plots": []} for name in SECTIONS}
        self.env = dict(os.environ)
        if os.geteuid() == 0:  # Open MPI refuses root otherwise
            self.env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        # One host: keep Open MPI's TCP on loopback (docs/testing.md).
        self.local_env = dict(self.env, OMPI_MCA_btl_tcp_if_include="lo", OMPI_MCA_oob_tcp_if_include="lo")
        self.scratch = tempfile.mkdtemp(prefix="gl-bench-")  # removed by main()

    # ---- figures ----

    def figure(self, section, name, unit, values, anchor, anchor_values, lower_is_better=True, target=None):
        """values and anchor_values: paired repeats (same length) or one each."""
        if not values or not anchor_values:
            raise ValueError("figure %s has no values" % name)
        pairs = list(zip(values, anchor_values)) if len(values) == len(anchor_values) else []
        ratios = [v / a for v, a in pairs if a] if pairs else []
        value, anchor_value = statistics.median(values), statistics.median(anchor_values)
        ratio = value / anchor_value if anchor_value else float("nan")
        spread = [min(ratios), max(ratios)] if ratios else [ratio, ratio]
        # How far the anchor alone moved between its own repeats (slowest /
        # fastest): a ratio that differs from 1 by less than this is within
        # the machine's noise for that measurement, whatever the target says.
        low = min(anchor_values)
        anchor_swing = max(anchor_values) / low if low > 0 else 1.0
        fig = {
            "name": name, "unit": unit, "value": value,
            "anchor": {"name": anchor, "value": anchor_value, "swing": anchor_swing},
            "ratio": ratio, "spread": {"min": spread[0], "max": spread[1]},
            "repeats": len(values), "lower_is_better": lower_is_better,
        }
        if target is not None:
            limit, text = target
            fig["target"] = text
            fig["met"] = ratio <= limit if lower_is_better else ratio >= limit
        self.sections[section]["figures"].append(fig)
        return fig

    def note(self, section, text):
        self.sections[section]["notes"].append(text)

    def plot(self, section, filename, draw):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4.2), dpi=100)
        draw(ax)
        ax.grid(True, alpha=0.3)
        fig.tight_layout()
        path = os.path.join(self.plots_dir, filename)
        fig.savefig(path, format="png")
        plt.close(fig)
        self.sections[section]["plots"].append("plots/" + filename)

    # ---- running things ----

    def run(self, argv, env=None, timeout=600, check=True):
        started = time.monotonic()
        proc = subprocess.run(argv, env=env or self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=timeout)
        if check and proc.returncode != 0:
            fail("%s exited %d:\n%s" % (" ".join(argv), proc.returncode, proc.stderr[-3000:]))
        return proc, time.monotonic() - started

    def gbench(self, argv, env=None, timeout=900):
        """Runs a Google Benchmark binary; returns its per-repetition runs."""
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
            path = tmp.name
        try:
            self.run(argv + ["--benchmark_out=" + path, "--benchmark_out_format=json",
                             "--benchmark_report_aggregates_only=false"], env=env, timeout=timeout)
            with open(path) as f:
                data = json.load(f)
        finally:
            os.unlink(path)
        return [b for b in data["benchmarks"] if b.get("run_type", "iteration") == "iteration"]


def base_name(run):
    """"BM_X/65536/iterations:200/real_time" -> "BM_X/65536"."""
    parts = (run.get("run_name") or run["name"]).split("/")
    keep = [p for p in parts if not re.match(r"^(iterations|repeats|min_time|threads):|^(real|manual)_time$", p)]
    return "/".join(keep)


def by_name(runs):
    """base name -> list of runs in repetition order."""
    out = {}
    for r in runs:
        out.setdefault(base_name(r), []).append(r)
    return out


def times(runs, key="real_time"):
    return [r[key] for r in runs]
