#!/usr/bin/env python3
"""Readers' latency while one session steps the heaviest world allowed (issue 16, item 1).

Starts grainlabd on free loopback ports, makes a cluster of --bodies bodies summed directly
(theta 0: the costliest step per body the server takes), and measures GET /api/sessions, GET
/metrics and a websocket join (connect to the "hello") while that session runs, then while a paused
`step n` of it is in flight; then how long DELETE takes with a step in flight. Prints p50, p99 and
the maximum in ms. With --check P99_MS DELETE_MS it exits 1 when a p99 or the DELETE is over.
"""
import argparse
import base64
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time


def start(daemon, data, extra):
    p = subprocess.Popen([daemon, "--http-port", "0", "--ws-port", "0", "--data-dir", data] + extra,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    m = re.match(r"listening http=(\d+) ws=(\d+)", line)
    if not m:
        p.kill()
        sys.exit(f"grainlabd did not start: {line!r}")
    return p, int(m.group(1)), int(m.group(2))


def request(port, method, path, body=None, token=None, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def ws_join(port, sid, timeout=30):
    """Connect, upgrade, and read until the server's first message (the hello)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /ws/sessions/{sid} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
               f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(4096)
        if not chunk:
            raise OSError("closed during the handshake")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    if b" 101 " not in head.split(b"\r\n")[0]:
        raise OSError(f"no upgrade: {head[:80]!r}")
    while len(rest) < 2:
        rest += s.recv(4096)
    s.close()


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000.0


def measure(http_port, ws_port, sid, rounds, pause_s):
    out = {"GET /api/sessions": [], "GET /metrics": [], "websocket join": []}
    for _ in range(rounds):
        out["GET /api/sessions"].append(timed(lambda: request(http_port, "GET", "/api/sessions")))
        out["GET /metrics"].append(timed(lambda: request(http_port, "GET", "/metrics")))
        out["websocket join"].append(timed(lambda: ws_join(ws_port, sid)))
        time.sleep(pause_s)
    return out


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def report(phase, res, worst):
    for name, xs in res.items():
        p99 = pct(xs, 0.99)
        worst[0] = max(worst[0], p99)
        print(f"{phase:34s} {name:18s} n={len(xs):4d}  p50 {pct(xs, 0.5):7.1f} ms  "
              f"p99 {p99:7.1f} ms  max {max(xs):7.1f} ms")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("daemon")
    ap.add_argument("--bodies", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--check", nargs=2, type=float, metavar=("P99_MS", "DELETE_MS"))
    a = ap.parse_args()
    data = tempfile.mkdtemp()
    d, hp, wp = start(a.daemon, data, ["--max-grains", str(max(a.bodies, 20000))])
    failed = False
    try:
        code, body = request(hp, "POST", "/api/sessions",
                             {"scene": "cluster", "params": {"bodies": a.bodies, "theta": 0}})
        if code != 201:
            sys.exit(f"create: {code} {body[:200]!r}")
        made = json.loads(body)
        sid, tok = made["id"], made["control_token"]
        worst = [0.0]
        time.sleep(1.0)
        report("running (paced)", measure(hp, wp, sid, a.rounds, 0.01), worst)

        request(hp, "POST", f"/api/sessions/{sid}/actions", {"type": "pause"}, tok)
        code, body = request(hp, "GET", "/api/sessions/" + sid)
        steps0 = json.loads(body)["steps"]
        # the most steps the budget allows: the refusal says how many
        code, body = request(hp, "POST", f"/api/sessions/{sid}/actions", {"type": "step", "n": 14400},
                             tok)
        m = re.search(r"at most (\d+)", body.decode())
        n = int(m.group(1)) if code == 422 and m else 100
        print(f"step n = {n} (the work budget's most for {a.bodies} bodies, theta 0)")
        # one `step n` after another, so that one is always in flight
        steps = {"answers": [], "stop": False}

        def step_loop():
            while not steps["stop"]:
                code, body = request(hp, "POST", f"/api/sessions/{sid}/actions",
                                     {"type": "step", "n": n}, tok, 600)
                steps["answers"].append(code)

        stepper = threading.Thread(target=step_loop)
        stepper.start()
        time.sleep(0.3)
        def taken():
            code, body = request(hp, "GET", "/api/sessions/" + sid)
            return json.loads(body)["steps"] - steps0

        res = measure(hp, wp, sid, a.rounds, 0.01)
        # one step of the heaviest world may outlast the rounds on a loaded machine: the readers
        # go on until a step has been taken (or two minutes), so they are measured against work
        deadline = time.time() + 120
        while taken() < 1 and time.time() < deadline:
            more = measure(hp, wp, sid, 5, 0.01)
            for name in res:
                res[name] += more[name]
        report("paused, `step n` in flight", res, worst)
        stepped = taken()
        steps["stop"] = True
        t_del = timed(lambda: request(hp, "DELETE", "/api/sessions/" + sid, None, tok))
        stepper.join(60)
        busy = len(steps["answers"]) > 0 and steps["answers"][-1] != 200
        print(f"{stepped} steps taken while measured; answers to `step {n}`: {steps['answers']}")
        print(f"DELETE with a step in flight ({'cut short' if busy else 'it had ended'}): "
              f"{t_del:.0f} ms")
        workers = subprocess.run(["pgrep", "-P", str(d.pid)], capture_output=True, text=True)
        left = workers.stdout.split()
        print(f"workers left after DELETE: {len(left)}")
        if a.check:
            p99_max, del_max = a.check
            if worst[0] > p99_max:
                print(f"FAIL a reader's p99 {worst[0]:.1f} ms > {p99_max:.0f} ms")
                failed = True
            if t_del > del_max:
                print(f"FAIL DELETE took {t_del:.0f} ms > {del_max:.0f} ms")
                failed = True
            if left:
                print(f"FAIL the worker outlived its session: {left}")
                failed = True
            if stepped < 1:
                print("FAIL no step was taken while the readers were measured: no load was tested")
                failed = True
    finally:
        d.terminate()
        d.wait(30)
        shutil.rmtree(data, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
