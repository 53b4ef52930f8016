#!/usr/bin/env python3
"""Waits until no process carrying GPULAUNCH_JOB_ID=ID in its environment,
or the marker gl-survivor-ID-rRANK in its argv, is left, up to BOUND_MS after
each rank's stop. Each rank's clock starts when DIR/stopped.RANK was written
(the rank touches it when the stop reaches it), or at START_MS when given
instead. Prints the longest time any rank's processes took to go, in ms,
then the late ranks ("none", or their numbers). A process already in the
kernel's exit path (PF_EXITING: it was killed and runs no code of its own any
more; on a loaded machine tearing its memory down took seconds) counts as gone.
Usage: wait_gone.py ID BOUND_MS RANKS (DIR | --start START_MS)"""
import glob
import os
import sys
import time

def now_ms():
    return int(time.time() * 1000)

PF_EXITING = 0x4

def exiting(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[6]) & PF_EXITING != 0 or fields[0] in ("Z", "X")
    except (OSError, IndexError, ValueError):
        return True

def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []

def rank_of(pid, job_id):
    """The job rank whose process `pid` is ("?" for one of the job's that
    names none), or None: by GPULAUNCH_JOB_ID in its environment, or by the
    marker gl-survivor-ID-rRANK in its argv (a helper that cleared its
    environment, helpers_job.sh)."""
    env = read("/proc/%d/environ" % pid)
    if b"GPULAUNCH_JOB_ID=" + job_id.encode() in env:
        return next((e[5:].decode() for e in env if e.startswith(b"RANK=")), "?")
    marker = b"gl-survivor-" + job_id.encode() + b"-r"
    for arg in read("/proc/%d/cmdline" % pid):
        if arg.startswith(marker):
            return arg[len(marker):].decode()
    return None

def by_rank(job_id):
    """rank -> live pids of the job (one scan of /proc)."""
    out = {}
    for path in glob.glob("/proc/[0-9]*"):
        pid = int(path.split("/")[2])
        rank = rank_of(pid, job_id)
        if rank is None or exiting(pid):
            continue
        out.setdefault(rank, []).append(pid)
    return out

def main():
    job_id, bound, ranks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    start = int(sys.argv[5]) if sys.argv[4] == "--start" else None
    folder = None if start is not None else sys.argv[4]
    stops, done, late, worst = {}, {}, [], 0
    deadline = now_ms() + bound + 30000  # a stop that never arrives
    while len(done) < ranks and now_ms() < deadline:
        live = by_rank(job_id)
        t = now_ms()
        for r in map(str, range(ranks)):
            if r in done:
                continue
            if r not in stops:
                if start is not None:
                    stops[r] = start
                else:
                    try:
                        stops[r] = os.stat(os.path.join(folder, "stopped." + r)).st_mtime_ns // 1000000
                    except OSError:
                        continue
            if r not in live and "?" not in live:
                done[r] = t - stops[r]
            elif t - stops[r] > bound:
                done[r] = t - stops[r]
                late.append(r)
        worst = max(done.values(), default=0)
        time.sleep(0.05)
    late += [r for r in map(str, range(ranks)) if r not in done]
    print(worst, " ".join(late) if late else "none")

if __name__ == "__main__":
    main()
