#!/usr/bin/env python3
"""Holds COUNT connections to HOST:PORT for HOLD seconds, as a stranger that
never authenticates would during a job's start-up (hostile_peer_test.sh).
A connection the server closes is opened again at once, so the flood stays
at COUNT. Prints "flood held=N reopened=M".

Usage: attack_flood.py HOST PORT COUNT HOLD
"""
import resource
import select
import socket
import sys
import time

host, port, count, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 64), hard))


def connect():
    try:
        s = socket.create_connection((host, port), timeout=2)
        s.setblocking(False)
        return s
    except OSError:
        return None


held = [s for s in (connect() for _ in range(count)) if s]
reopened = 0
deadline = time.time() + hold
while time.time() < deadline and held:
    ready, _, _ = select.select(held[:1000], [], [], 0.2)
    for s in ready:
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if not data:  # closed by the server: come back
            held.remove(s)
            s.close()
            again = connect()
            if again:
                held.append(again)
                reopened += 1
print(f"flood held={len(held)} reopened={reopened}", flush=True)
