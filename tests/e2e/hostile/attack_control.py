#!/usr/bin/env python3
"""A hostile peer: every attack of issue 42 against a gpulaunch control
server, replayed by a user who does not hold the job's secret. Runs as an
unprivileged second user (tests/e2e/hostile_peer_test.sh). Prints one line
per attack, `ATTACK name: result`, and a final `welcomed N` (how many
connections the server accepted as a rank: must be 0).

Usage: attack_control.py tcp HOST PORT VICTIM_PID | unix PATH VICTIM_PID
"""
import os
import socket
import sys
import time

def connect(target):
    if target[0] == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(3)
        s.connect(target[1])
    else:
        s = socket.create_connection((target[1], int(target[2])), timeout=3)
    s.settimeout(3)
    return s

def lines_until_closed(s, limit=4096):
    """What the server sent until it closed (or 3 s passed)."""
    got = b""
    try:
        while len(got) < limit:
            chunk = s.recv(4096)
            if not chunk:
                return got, True
            got += chunk
    except (socket.timeout, ConnectionError):
        return got, False
    return got, False

welcomed = 0

def attack(name, target, payload, read_hello=True):
    """Sends `payload` (bytes) after the greeting; reports whether the
    server closed the connection and whether it ever said `welcome`."""
    global welcomed
    try:
        s = connect(target)
    except OSError as e:
        print(f"ATTACK {name}: cannot connect ({e.__class__.__name__}: {e.strerror or e})")
        return
    try:
        hello = s.recv(256) if read_hello else b""
        s.sendall(payload)
        got, closed = lines_until_closed(s)
    except OSError as e:
        got, closed = b"", True
    if b"welcome" in got:
        welcomed += 1
    print(f"ATTACK {name}: greeted={hello.startswith(b'hello')} closed={closed} welcomed={b'welcome' in got}")
    s.close()

def main():
    mode = sys.argv[1]
    target = (mode, sys.argv[2], sys.argv[3]) if mode == "tcp" else (mode, sys.argv[2])
    victim = sys.argv[-1]
    # 1. A forged check-in naming a foreign process, for a rank in range and one far out of it.
    attack("forged-checkin", target, f"checkin 0 {victim} 2 localhost H -\n".encode())
    attack("out-of-range", target, f"checkin 100000000 {victim} 2 localhost H -\nexit 100000000 code 1\n".encode())
    # 2. A forged refusal and exit, with terminal escapes in the reason.
    attack("forged-refusal", target,
           b"refuse 0 localhost \x1b[2J\x1b[H\x1b]0;owned\x07\rgpulaunch: all ranks ended normally\n")
    attack("forged-exit", target, b"exit 0 code 0\nexit 1 code 0\n")
    # 3. A wrong handshake, and one replayed from a guess.
    attack("wrong-proof", target, b"auth 0 " + b"c" * 32 + b" " + b"0" * 64 + b"\n")
    attack("hijack-rank", target, b"auth 1 " + b"d" * 32 + b" " + b"f" * 64 + b"\nexit 1 code 0\n")
    # 4. A metric flood without the handshake.
    attack("metric-flood", target, b"".join(b'metric 0 {"rank":0,"step":%d,"groups":[%s]}\n' % (
        i, b",".join(b'{"group":"g%d","bytes":1}' % g for g in range(100))) for i in range(3000)))
    # 5. A connection flood: hundreds of idle connections, held past the
    #    server's 5 s for a handshake.
    held = []
    for _ in range(300):
        try:
            held.append(connect(target))
        except OSError:
            break
    print(f"ATTACK connection-flood: opened {len(held)}")
    time.sleep(6)
    for s in held:
        s.close()
    print(f"welcomed {welcomed}")

if __name__ == "__main__":
    main()
