"""run-suite's scale section: launches at 64 to 2,048 ranks on this host and
the namespace hosts against mpirun with the same rankfile, teardown at scale,
and per-rank work (see run-suite's docstring)."""

import math
import os
import re
import resource
import select
import shlex
import shutil
import signal
import statistics
import subprocess
import threading
import time

from suite_common import fail, by_name


def scale(s):
    """Launch at scale: /bin/true and an MPI hello (mpi_hello: Init, Barrier,
    Finalize) at 64, 256, 1,024 and 2,048 ranks, on this host and over the 4
    namespace hosts when GL_RIG points at a running rig. The anchor is plain
    mpirun with gpulaunch's own rankfile and options (from its --dry-run),
    in the same run, interleaved. Also gpulaunch's own peak memory (VmHWM).
    --quick: the MPI hello at 64 ranks on this host only (plain mpirun of
    /bin/true hangs too often here for a test to wait on it; see
    timed_launch). Over the rig gpulaunch plans from the remote topologies
    its --dry-run (for the anchor's rankfile) just discovered and cached;
    at the smallest size the same launch with the cache off
    (GPULAUNCH_TOPOLOGY_CACHE=0) is measured too, as a note."""
    sizes = s.args.scale_sizes or ([64] if s.args.quick else [64, 256, 1024, 2048])
    raise_open_file_limit(4 * max(sizes) + 128)
    reps_small = s.args.repeats or (1 if s.args.quick else 3)
    cores = os.cpu_count() or 1
    setups = [("this host", None)]
    rig, nsp = os.environ.get("GL_RIG"), os.environ.get("GL_NSP", "glr")
    if rig and os.path.exists(os.path.join(rig, "ssh", "ssh_config")) and not s.args.quick:
        setups.append(("4 namespace hosts", (rig, nsp)))
    elif not s.args.quick:
        s.note("scale", "4 namespace hosts: not measured (the test rig is not up; set GL_RIG, see docs/testing.md)")
    jobs = [("/bin/true", "/bin/true"), ("MPI hello", os.path.join(s.bin, "mpi_hello"))]
    if s.args.quick:
        jobs = jobs[1:]
    series = {}
    for where, rig_info in setups:
        for label, program in jobs:
            for n in sizes:
                why = scale_skip(label, n, cores)
                if why:
                    s.note("scale", "%s, %d ranks, %s: skipped, %s" % (label, n, where, why))
                    continue
                gl, mp, cold, floor, peak = [], [], [], [], 0
                # Up to 256 ranks of /bin/true on this host, where the shim's
                # exec is a visible share of a launch: mpirun with exec_wrapper
                # in the shim's place too (the least any wrapper adds).
                with_floor = program == "/bin/true" and not rig_info and n <= 256
                for _ in range(reps_small if n <= 256 else 1):
                    anchor = mpirun_like_gpulaunch(s, n, program, rig_info)
                    guard = 20 + 0.1 * n if program == "/bin/true" else 60 + 1.0 * n
                    took, _ = timed_launch(s, anchor, rig_info, False, guard)
                    if took is not None:
                        mp.append(took)
                    if with_floor:
                        took, _ = timed_launch(s, mpirun_like_gpulaunch(s, n, program, rig_info, exec_wrapper_path(s)),
                                               rig_info, False, guard)
                        if took is not None:
                            floor.append(took)
                    took, hwm = timed_launch(s, gpulaunch_argv(s, n, program, rig_info), rig_info, True, guard)
                    gl.append(took)
                    peak = max(peak, hwm)
                    if rig_info and n == sizes[0]:
                        took, _ = timed_launch(s, gpulaunch_argv(s, n, program, rig_info), rig_info, True, guard,
                                               {"GPULAUNCH_TOPOLOGY_CACHE": "0"})
                        cold.append(took)
                if not mp:
                    s.note("scale", "gpulaunch -n %d, %s, %s: %.2f s (median); no anchor: plain mpirun hung at "
                           "start-up in every attempt" % (n, label, where, statistics.median(gl)))
                else:
                    s.figure("scale", "gpulaunch -n %d, %s, %s" % (n, label, where), "s", gl,
                             "mpirun -n %d, same rankfile" % n, mp, target=(1.2, "at most 1.2 x mpirun"))
                s.note("scale", "gpulaunch -n %d, %s, %s: its own peak memory %.1f MB" % (n, label, where,
                                                                                    peak / 1024.0))
                if floor and mp:
                    s.note("scale", "gpulaunch -n %d, %s, %s: mpirun starting each rank through exec_wrapper (one "
                           "exec, the least any program before the job adds) took %.3f s, %.2f x plain mpirun; "
                           "gpulaunch %.2f x that (medians)" % (n, label, where, statistics.median(floor),
                                                                statistics.median(floor) / statistics.median(mp),
                                                                statistics.median(gl) / statistics.median(floor)))
                if cold and mp:
                    s.note("scale", "gpulaunch -n %d, %s, %s, every host discovered live (GPULAUNCH_TOPOLOGY_CACHE=0): "
                           "%.2f s, %.2f x mpirun's %.2f s (medians)" % (n, label, where, statistics.median(cold),
                                                                     statistics.median(cold) / statistics.median(mp),
                                                                     statistics.median(mp)))
                series.setdefault("%s, %s" % (label, where), []).append(
                    (n, statistics.median(gl), statistics.median(mp) if mp else float("nan"), peak))
    for name, points in series.items():
        if len(points) >= 2:
            (n0, _, _, m0), (n1, _, _, m1) = points[0], points[-1]
            s.note("scale", "%s: gpulaunch's peak memory grows as ranks^%.2f from %d to %d ranks (1.00 is linear)"
                   % (name, math.log(m1 / m0) / math.log(n1 / n0), n0, n1))

    def draw(ax):
        for name, points in series.items():
            ax.plot([p[0] for p in points], [p[1] / p[2] for p in points], marker="o", label=name)
        ax.axhline(1.2, color="grey", linestyle="--", label="target 1.2")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("ranks")
        ax.set_ylabel("gpulaunch / mpirun (median launch to exit)")
        ax.set_title("Launch at scale")
        ax.legend(fontsize=7)
    s.plot("scale", "scale.png", draw)
    if len(setups) > 1:
        for grace in (1, 3):  # 1: the default under mpirun; 3: a grace the ranks could act in
            teardown_at_scale(s, setups[1][1], max(sizes), grace)
    per_rank_work(s)


def teardown_at_scale(s, rig_info, ranks, grace=3):
    """SIGINT to the launcher of `ranks` ranks that ignore SIGINT and SIGTERM
    (env_dump --stubborn, each rank waiting on the rig): when did the last
    rank die, and when did the launcher exit. gpulaunch's contract: every
    rank is gone within --kill-grace + 2 s. The anchor is plain mpirun with
    the same rankfile and odls_base_sigkill_timeout set to the same grace
    (Open MPI waits it twice: before SIGTERM and before SIGKILL)."""
    env_dump = os.path.join(s.bin, "env_dump")
    if not os.path.exists(env_dump):
        s.note("scale", "teardown: not measured (build/bin/env_dump is missing; it is built with the tests)")
        return
    wait_dir = os.path.join(s.scratch, "teardown")
    job_args = ["--wait-dir", wait_dir, "--stubborn"]
    gl = gpulaunch_argv(s, ranks, env_dump, rig_info)
    gl = gl[:1] + ["--kill-grace", str(grace)] + gl[1:] + job_args
    # Without gpulaunch, env_dump learns its rank from Open MPI through RANK.
    anchor = mpirun_like_gpulaunch(s, ranks, env_dump, rig_info)
    anchor = anchor[:1] + ["--mca", "odls_base_sigkill_timeout", str(grace)] + anchor[1:-1] + \
        ["sh", "-c", 'RANK=$OMPI_COMM_WORLD_RANK exec "$0" "$@"', env_dump] + job_args
    results = {}
    for name, argv in (("mpirun", anchor), ("gpulaunch", gl)):
        results[name] = stop_and_watch(s, argv, rig_info, ranks, wait_dir)
        if not results[name]:
            return
    (gl_last, gl_exit), (mp_last, mp_exit) = results["gpulaunch"], results["mpirun"]
    label = "%d ranks ignoring SIGINT and SIGTERM, 4 namespace hosts, kill grace %d s" % (ranks, grace)
    s.figure("scale", "teardown: last rank gone after SIGINT, " + label, "s", [gl_last], "mpirun, same rankfile",
             [mp_last])
    s.note("scale", "teardown of %s: the last rank died %.2f s after SIGINT (contract: kill grace + 2 s = %d s: %s); "
           "gpulaunch exited after %.2f s, mpirun alone after %.2f s (its last rank: %.2f s)"
           % (label, gl_last, grace + 2, "met" if gl_last <= grace + 2 else "NOT met", gl_exit, mp_exit, mp_last))


def stop_and_watch(s, argv, rig_info, ranks, wait_dir):
    """Starts the launch, waits for every rank's wait_dir/ready.R (its pid),
    sends the launcher SIGINT and watches each rank's pidfd: (seconds to the
    last rank's death, seconds to the launcher's exit), or None with a note."""
    shutil.rmtree(wait_dir, ignore_errors=True)
    os.makedirs(wait_dir)
    proc = subprocess.Popen(rig_prefix(rig_info) + argv, env=rig_env(s, rig_info), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        started = time.monotonic()
        while len(os.listdir(wait_dir)) < ranks and proc.poll() is None and time.monotonic() - started < 600:
            time.sleep(0.5)
        ready = [f for f in os.listdir(wait_dir) if f.startswith("ready.")]
        if len(ready) < ranks:
            s.note("scale", "teardown with %s: only %d of %d ranks started; not measured" % (argv[0], len(ready), ranks))
            return None
        pidfds = []
        for f in ready:
            with open(os.path.join(wait_dir, f)) as r:
                pidfds.append(os.pidfd_open(int(r.read().split()[0])))
        poller = select.poll()
        for fd in pidfds:
            poller.register(fd, select.POLLIN)
        stopped = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)  # the rig's wrapper execs into the launcher: same pid
        left, last = len(pidfds), stopped
        while left and time.monotonic() - stopped < 120:
            for fd, _ in poller.poll(1000):
                poller.unregister(fd)
                left, last = left - 1, time.monotonic()
        for fd in pidfds:
            os.close(fd)
        proc.wait(timeout=120)
        if left:
            s.note("scale", "teardown with %s: %d ranks still ran 120 s after SIGINT" % (argv[0], left))
            return None
        return last - stopped, time.monotonic() - stopped
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the session this launch started, and only it
            proc.wait()
        shutil.rmtree(wait_dir, ignore_errors=True)


def per_rank_work(s):
    """gpulaunch's own work per rank once the ranks ran (per_rank_bench): the
    --tag demux, the root cause, gpulaunch-summary.json and --profile's run
    report, at 2,048 ranks against the same at 256 (time per rank; 1.0 is
    linear growth), with the absolute time per rank in a note. No target:
    each is one pass over the ranks, and what per-rank time still grows with
    N is the working set leaving the caches (it is microseconds a rank, where
    starting a rank costs milliseconds)."""
    reps = s.args.repeats or (1 if s.args.quick else 3)
    runs = by_name(s.gbench([os.path.join(s.bin, "per_rank_bench"), "--benchmark_repetitions=%d" % reps,
                             "--benchmark_filter=/(256|2048)$"]))
    for bench, label in (("BM_TagDemux", "--tag demux of 10 lines a rank"), ("BM_RootCause", "root cause and its block"),
                         ("BM_SummaryJson", "gpulaunch-summary.json"), ("BM_RunReport", "--profile run report, 20 steps a rank")):
        small, large = runs.get(bench + "/256"), runs.get(bench + "/2048")
        if not small or not large:
            s.note("scale", "%s: per_rank_bench gave no figure" % label)
            continue
        f = s.figure("scale", "%s, time a rank at 2,048 ranks" % label, "us", [r["per_rank"] * 1e6 for r in large],
                     "the same at 256 ranks", [r["per_rank"] * 1e6 for r in small])
        s.note("scale", "%s: %.2f us a rank at 2,048 ranks (%.1f ms in all)" % (label, f["value"], f["value"] * 2.048))


def scale_skip(label, ranks, cores):
    """Why a size does not fit this machine, or None. Every MPI rank spends
    a CPU-heavy MPI_Init and then polls: past 128 MPI ranks per core a hello
    at 1,024 ranks on 2 cores had not finished after 13 minutes here. A rank
    of /bin/true (shim, then the program) needs about 8 MB while it lives."""
    if label != "/bin/true" and ranks > 128 * cores:
        return "more than 128 MPI ranks per core (%d cores): MPI_Init's CPU time alone would take minutes" % cores
    with open("/proc/meminfo") as f:
        avail_kb = next(int(l.split()[1]) for l in f if l.startswith("MemAvailable:"))
    if ranks * 8 * 1024 > avail_kb:
        return "%d ranks need about %d MB, and %d MB are available" % (ranks, ranks * 8, avail_kb // 1024)
    return None


def rig_prefix(rig_info):
    return ["ip", "netns", "exec", rig_info[1] + "n1", "unshare", "--uts", "sh", "-c", 'hostname node1; exec "$@"',
            "sh"] if rig_info else []


def rig_env(s, rig_info):
    if not rig_info:
        return s.local_env
    return dict(s.env, OMPI_MCA_plm_rsh_agent="ssh", OMPI_MCA_plm_rsh_args="-F %s/ssh/ssh_config" % rig_info[0])


def gpulaunch_argv(s, ranks, program, rig_info):
    where = ["-H", ",".join("node%d:%d" % (i, ranks // 4) for i in range(1, 5))] if rig_info else ["--oversubscribe"]
    return [os.path.join(s.bin, "gpulaunch"), "--allow-run-as-root", "--no-summary"] + where + ["-n", str(ranks),
                                                                                            program]


def raise_open_file_limit(want):
    """gpulaunch raises the open-file limit its mpirun runs under as far as the
    job needs (docs/environment.md); plain mpirun does not, and under the
    common soft limit of 1,024 it hangs past about 250 local ranks. So both
    run under the same limit here: this process's, raised as gpulaunch would."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))


def mpirun_like_gpulaunch(s, ranks, program, rig_info, wrapper=None):
    """Plain mpirun with the rankfile and options gpulaunch's --dry-run shows,
    without the shim (or with `wrapper` where the shim was): the anchor for
    the same placement. Over the rig its
    daemons get their open-file limit raised the way gpulaunch's do (the rig's
    sshd gives a soft 1,024, and 512 ranks a host need about 2,200), by
    prlimit as the launch agent instead of the shim."""
    argv = gpulaunch_argv(s, ranks, program, rig_info)
    proc, _ = s.run(rig_prefix(rig_info) + argv[:1] + ["--dry-run"] + argv[1:], env=rig_env(s, rig_info))
    lines = proc.stdout.splitlines()
    rankfile = lines[lines.index("rankfile:") + 1:lines.index("command:")]
    command = shlex.split(lines[lines.index("command:") + 1])
    path = os.path.join(s.scratch, "rankfile")
    with open(path, "w") as f:
        f.write("\n".join(rankfile) + "\n")
    out, i = [], 0
    while i < len(command):
        word = command[i]
        if word == "--rankfile":
            out += [word, path]
            i += 2
        elif word == "-x" and command[i + 1] == "GPULAUNCH_SLOT_TABLE":
            i += 2
        elif word.endswith("/gpulaunch-shim") and command[i + 1] == "--":
            out += [wrapper] if wrapper else []
            i += 2
        else:
            out.append(word)
            i += 1
    if rig_info:
        out[1:1] = ["--mca", "orte_launch_agent", "prlimit --nofile=%d: orted" % (4 * (ranks // 4) + 128)]
    return out


# What gpulaunch says when it killed an engine that outlived its job (docs/launch.md).
ENGINE_HUNG = "did not exit; gpulaunch stopped it"


def exec_wrapper_path(s):
    """benchmarks/exec_wrapper: execs its arguments and nothing else."""
    return os.path.join(s.bin, "exec_wrapper")


def timed_launch(s, argv, rig_info, is_gpulaunch, guard, extra_env=None):
    """Runs a launch to its end: (seconds, gpulaunch's own peak memory in KB,
    sampled from /proc every 20 ms, 0 for mpirun; the end itself is exact). A launch that outlives
    `guard` seconds (generous: /bin/true 20 s + 0.1 s a rank, 2,048 ranks
    took 104 s on 2 busy cores; MPI jobs 60 s + 1 s a rank) is stopped, with
    everything it started (its own session), and run again, up to 8 times,
    with a note: Debian's Open MPI 4.1.4 mpirun hangs in 3 to 5 of 10 runs of
    `mpirun -n 64 /bin/true` here, mpirun asleep with no rank left (ranks
    that exit at once; the MPI hello never hung in 8 runs). Under gpulaunch it
    hung in 3 of 150 runs on 2026-12-03; gpulaunch now kills such an mpirun
    once idle 10 s after its last rank ended and says so, and that launch is run again
    too, since its time is mostly that wait. Plain mpirun (the anchor) gets 4
    attempts, and (None, 0) when all hung: over the namespace hosts it hung in
    8 of 8 attempts at 256 ranks of /bin/true on 2026-12-02; a failed
    attempt of it (non-zero exit) is run again the same way. gpulaunch gets
    8, and the suite fails when all hang or one fails. `extra_env`: more variables for the launch."""
    attempts = 8 if is_gpulaunch else 4
    for attempt in range(1, attempts + 1):
        started = time.monotonic()
        proc = subprocess.Popen(rig_prefix(rig_info) + argv, env=dict(rig_env(s, rig_info), **(extra_env or {})),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        # The end is taken by a thread blocked on the launch, not by the
        # 20 ms memory sampling, which would round every time up.
        end = {}
        waiter = threading.Thread(target=lambda: end.update(err=proc.communicate()[1], at=time.monotonic()))
        waiter.start()
        hwm = 0
        while waiter.is_alive() and time.monotonic() - started < guard:
            if is_gpulaunch:
                hwm = max(hwm, peak_kb(proc.pid))
            waiter.join(0.02)
        if waiter.is_alive():
            os.killpg(proc.pid, signal.SIGKILL)  # the session this launch started, and only it
            waiter.join()
            s.note("scale", "%s did not end within %.0f s (attempt %d); stopped%s"
                   % (" ".join(argv[:3]), guard, attempt, ", run again" if attempt < attempts else ""))
            continue
        err, took = end["err"], end["at"] - started
        if proc.returncode != 0 and not is_gpulaunch:
            # Plain mpirun's own failure (once here: an MPI hello rank of 64
            # "exiting improperly", 0 in 25 runs of the same command after)
            # says nothing of gpulaunch: another attempt, as for a hang.
            s.note("scale", "%s exited %d (attempt %d): %s%s"
                   % (" ".join(argv[:3]), proc.returncode, attempt, first_line(err),
                      ", run again" if attempt < attempts else ""))
            continue
        if proc.returncode != 0:
            fail("%s exited %d:\n%s" % (" ".join(argv), proc.returncode, err[-3000:]))
        if ENGINE_HUNG in err:
            s.note("scale", "%s: mpirun hung after the job and gpulaunch stopped it (attempt %d)%s"
                   % (" ".join(argv[:3]), attempt, ", run again" if attempt < attempts else ""))
            continue
        return took, hwm
    if not is_gpulaunch:
        return None, 0
    fail("%s did not end within %.0f s, %d times" % (" ".join(argv), guard, attempts))


def first_line(text):
    """The first line of a launch's stderr that says something (Open MPI
    frames its messages in rules of dashes), for a note."""
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.startswith("---")]
    return lines[0] if lines else "no message"


def peak_kb(pid):
    """VmHWM of `pid` once it is gpulaunch (it starts as the rig's wrapper), else 0."""
    try:
        with open("/proc/%d/status" % pid) as f:
            status = f.read()
    except OSError:
        return 0
    if "Name:\tgpulaunch\n" not in status:
        return 0
    m = re.search(r"VmHWM:\s+(\d+)", status)
    return int(m.group(1)) if m else 0
