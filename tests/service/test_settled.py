#!/usr/bin/env python3
"""Kept settled states (issue 33) against a real grainlabd: a silo that settles leaves its state
in DATA/settled; the next silo of the same definition starts from it, interactive at once, and
its world is bit-identical to the one that settled (the same digest at the same step, and after
the same action); its run says where it came from, claims no sample it did not take, and replays
from a fresh world to its recorded digest. A session that starts while another settles waits for
it instead of stepping. A restart finds the kept state on disk; a damaged file is refused, the
session settles as before and the file is replaced; settled-cache-mb evicts the least recently
used. A Reset starts its new run from the kept state too. Every check is on steps, states and
digests, not on wall time.

usage: test_settled.py path/to/grainlabd path/to/grainlab [grainlabd flags...]
(trailing flags go last: --settled-cache-mb 0 turns the cache off, and the test fails)"""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import checks  # noqa: E402
from checks import check  # noqa: E402

EXE, CLI = sys.argv[1], sys.argv[2]
EXTRA = sys.argv[3:]
MULT = float(os.environ.get("GRAINLAB_TIMEOUT_MULTIPLIER", "1"))
TMP = tempfile.mkdtemp(prefix="grainlab-settled-")
DATA = os.path.join(TMP, "data")
KEPT = os.path.join(DATA, "settled")


class Daemon:
    def __init__(self, *flags):
        self.err = open(os.path.join(TMP, "err"), "a")
        self.proc = subprocess.Popen(
            [EXE, "--http-port", "0", "--ws-port", "0", "--data-dir", DATA,
             "--max-sessions-per-client", "100", "--create-rate", "100000", *flags, *EXTRA],
            stdout=subprocess.PIPE, stderr=self.err, text=True)
        line = self.proc.stdout.readline()
        parts = dict(p.split("=") for p in line.split()[1:])
        self.port = int(parts["http"])

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60 * MULT)


D = None


def req(method, path, body=None, token=None):
    status, answer, _ = checks.request(D.port, method, path, body, token, timeout=60 * MULT)
    return status, answer


def create(**params):
    seed = params.pop("seed", None)
    body = {"scene": "silo", "params": params}
    if seed is not None:
        body["seed"] = seed
    s, r = req("POST", "/api/sessions", body)
    assert s == 201, (s, r)
    return r


def view(sess):
    return req("GET", "/api/sessions/" + sess["id"])[1]


def act(sess, action):
    return req("POST", "/api/sessions/%s/actions" % sess["id"], action, sess["control_token"])


def metrics():
    s, text = req("GET", "/metrics")
    out = {}
    for line in text.splitlines():
        if line.startswith("grainlab_settled_cache"):
            name, value = line.split()
            out[name[len("grainlab_settled_cache_"):]] = int(float(value))
    return out


def kept_files():
    return sorted(os.path.basename(f) for f in glob.glob(os.path.join(KEPT, "*.state")))


def wait_for(what, cond, seconds=60):
    deadline = time.time() + seconds * MULT
    while time.time() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.1)
    return None


def events(run_id):
    return req("GET", "/api/runs/%d" % run_id)[1].get("events", [])


def paused_at(sess, target):
    """Paused (once its digest shows, no call is in flight: the steps are final), then stepped to
    `target` steps; the view."""
    act(sess, {"type": "pause"})
    v = wait_for("paused", lambda: (lambda v: v if v["state"] == "paused" and v["digest"] else
                                    None)(view(sess)))
    if target > v["steps"]:
        s, r = act(sess, {"type": "step", "n": target - v["steps"]})
        assert s == 200, (s, r)
    return view(sess)


def first_settle():
    global A, B
    A = create()
    settled = checks.wait_settled(D.port, A["id"], seconds=120 * MULT)
    check(settled is not None, "the first silo settles by itself",
          "settling_left 0 at step %s" % (settled or {}).get("steps"))
    files = wait_for("kept", kept_files, 10)
    check(files and len(files) == 1 and files[0].startswith("silo-"),
          "its state is kept in DATA/settled", files)
    m = metrics()
    check(m.get("misses_total") == 1 and m.get("hits_total") == 0 and m.get("states") == 1 and
          m.get("bytes", 0) > 100000, "/metrics: one miss, no hit, one state kept", m)
    check(not any(e["kind"] == "settle_restored" for e in events(A["run_id"])),
          "the run that settled says nothing of a kept state")

    B = create()
    check(B["settling_left"] == 0 and B["steps"] > 0,
          "the second silo is settled in its reply to POST /api/sessions (interactive at once)",
          "steps %d, settling_left %s" % (B["steps"], B["settling_left"]))
    check(metrics().get("hits_total") == 1, "/metrics: a hit")
    ev = events(B["run_id"])
    restored = [e for e in ev if e["kind"] == "settle_restored"]
    started = [e for e in ev if e["kind"] == "run_started"]
    check(len(restored) == 1 and started and started[0]["steps"] == restored[0]["steps"] > 0 and
          len(restored[0]["detail"]["digest"]) == 16,
          "its run starts at the kept step, and says it came from a kept state",
          [(e["kind"], e["steps"]) for e in ev][:4])
    kept_step = restored[0]["steps"] if restored else 0

    # the same world: paused at one step, the same digest; the same action, the same after it
    a, b = view(A), view(B)
    target = max(a["steps"], b["steps"]) + 37
    a, b = paused_at(A, target), paused_at(B, target)
    check(a["steps"] == b["steps"] == target and a["digest"] == b["digest"],
          "at step %d the restored world's digest is the one that settled itself's" % target,
          "%s %s" % (a["digest"], b["digest"]))
    sa, ra = act(A, {"type": "open_hole"})
    sb, rb = act(B, {"type": "open_hole"})
    check(sa == 200 and sb == 200, "open_hole is taken by both", "%d %d" % (sa, sb))
    for sess in (A, B):
        act(sess, {"type": "step", "n": 480})
    a, b = view(A), view(B)
    check(a["steps"] == b["steps"] == target + 480 and a["digest"] == b["digest"],
          "480 steps after the same action, still the same digest",
          "%s %s at %d, %d" % (a["digest"], b["digest"], a["steps"], b["steps"]))
    for sess in (A, B):
        act(sess, {"type": "finish"})
    # the run claims no sample it did not take: none before the kept step
    s, samples = req("GET", "/api/runs/%d/samples" % B["run_id"])
    steps_col = samples["columns"].index("steps") if s == 200 else 0
    first = min((row[steps_col] for row in samples.get("rows", [])), default=None)
    check(s == 200 and first is not None and first > kept_step,
          "the restored run's samples begin after the kept step", "%s > %s" % (first, kept_step))
    for name, sess in (("the settled", A), ("the restored", B)):
        run = wait_for("ended", lambda: (lambda r: r if r.get("digest") else None)(
            req("GET", "/api/runs/%d" % sess["run_id"])[1]), 20)
        out = subprocess.run([CLI, "replay", "--db", os.path.join(DATA, "grainlab.db"), "--run",
                              str(sess["run_id"])], capture_output=True, text=True)
        try:
            replayed = json.loads(out.stdout).get("digest")
        except ValueError:
            replayed = out.stdout + out.stderr
        check(run and replayed == run["digest"],
              "%s run replays from a fresh world to its recorded digest" % name,
              "%s vs %s" % (replayed, run and run["digest"]))


def waiting():
    """Two sessions of a definition nobody has settled: the second waits, not stepping."""
    before = metrics()
    F = create(seed=5)
    G = create(seed=5)
    f, g = view(F), view(G)
    mid = wait_for("F steps", lambda: (lambda f: f if f["steps"] >= 240 else None)(view(F)), 30)
    g = view(G)
    check(mid and g["steps"] == 0 and g["settling_left"] > 0,
          "while one settles, the other waits at step 0", "F at %s, G at %d" % (
              mid and mid["steps"], g["steps"]))
    check(g["settle_wait"] is True and mid["settle_wait"] is False,
          "the view says which one waits (settle_wait: the page shows no countdown for it)",
          "F %s, G %s" % (mid["settle_wait"], g["settle_wait"]))
    check(metrics().get("waits_total") == before.get("waits_total", 0) + 1, "/metrics: a wait")
    g = wait_for("G restored", lambda: (lambda g: g if g["settling_left"] == 0 else None)(view(G)),
                 60)
    check(g and g["settle_wait"] is False, "once restored it waits no more", g and g["settle_wait"])
    ev = events(G["run_id"])
    restored = [e for e in ev if e["kind"] == "settle_restored"]
    check(g and restored and restored[0]["steps"] > 0,
          "once it is kept, the waiting one restores it (its run says so, at the kept step)",
          [(e["kind"], e["steps"]) for e in ev][:4])
    m = metrics()
    check(m.get("hits_total") == before.get("hits_total", 0) + 1 and
          m.get("misses_total") == before.get("misses_total", 0) + 1,
          "/metrics: one miss (the settle), one hit (the wait)", m)
    for sess in (F, G):
        req("DELETE", "/api/sessions/" + sess["id"], token=sess["control_token"])

    # the settling one pauses: the waiting one settles instead; once the first goes on, whichever
    # comes to rest first keeps the state and the other jumps to it
    before = metrics()
    P = create(seed=6)
    Q = create(seed=6)
    wait_for("P steps", lambda: view(P)["steps"] >= 240, 30)
    act(P, {"type": "pause"})
    q = wait_for("Q settles", lambda: (lambda q: q if q["steps"] > 0 else None)(view(Q)), 30)
    check(q is not None, "when the settling session pauses, the waiting one settles instead",
          "Q at step %s" % (q and q["steps"]))
    act(P, {"type": "resume"})
    both = wait_for("both settled", lambda: all(view(x)["settling_left"] == 0 for x in (P, Q)), 60)
    restored = [x for x in (P, Q)
                if any(e["kind"] == "settle_restored" for e in events(x["run_id"]))]
    m = metrics()
    check(both and len(restored) == 1 and
          m.get("hits_total") == before.get("hits_total", 0) + 1,
          "the one that came to rest first kept its state, and the other jumped to it",
          "%d restored, %s" % (len(restored), m))
    for sess in (P, Q):
        req("DELETE", "/api/sessions/" + sess["id"], token=sess["control_token"])


def restart_and_damage():
    global D
    D.stop()
    D = Daemon()
    m = metrics()
    check(m.get("states") == 3 and m.get("hits_total") == 0,
          "a restart counts the kept states on disk", m)
    C = create()
    check(C["settling_left"] == 0 and C["steps"] > 0 and metrics().get("hits_total") == 1,
          "after a restart a silo starts from the state on disk", "steps %d" % C["steps"])
    req("DELETE", "/api/sessions/" + C["id"], token=C["control_token"])

    # a byte of the kept state changed: refused, deleted, settled again, replaced
    # the default silo's: the one C restored, so touched last
    if not check(kept_files(), "a kept state to damage", kept_files()):
        return
    name = max(kept_files(), key=lambda f: os.path.getmtime(os.path.join(KEPT, f)))
    full = os.path.join(KEPT, name)
    with open(full, "r+b") as f:
        f.seek(os.path.getsize(full) // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0x20]))
    E = create()
    check(E["settling_left"] > 0 and E["steps"] == 0,
          "a damaged kept state is not restored: the session settles",
          "steps %d, settling_left %s" % (E["steps"], E["settling_left"]))
    m = metrics()
    check(m.get("rejected_total") == 1 and not os.path.exists(full), "the damaged file is deleted", m)
    check(checks.wait_settled(D.port, E["id"], seconds=120 * MULT) is not None and
          wait_for("replaced", lambda: os.path.exists(full), 10),
          "once it settled, its state is kept again under the same name")
    H = create()
    check(H["settling_left"] == 0 and H["steps"] > 0, "and the next silo starts from it",
          "steps %d" % H["steps"])
    # a Reset starts the world over exactly as a new one: its new run starts from the kept state
    act(H, {"type": "open_hole"})
    s, _ = act(H, {"type": "reset"})
    h = view(H)
    ev = events(h["run_id"])
    check(s == 200 and h["run_id"] != H["run_id"] and h["settling_left"] == 0 and
          [e["kind"] for e in ev][:2] == ["run_started", "settle_restored"] and
          ev[0]["steps"] == H["steps"],
          "a Reset's new run starts from the kept state, settled",
          "%d, steps %d, %s" % (s, h["steps"], [(e["kind"], e["steps"]) for e in ev][:3]))
    for sess in (E, H):
        req("DELETE", "/api/sessions/" + sess["id"], token=sess["control_token"])


def bound():
    """2 MB hold one kept silo of ~1.2 MB: a restart trims to it, and a new one evicts it."""
    global D
    D.stop()
    before = kept_files()
    D = Daemon("--settled-cache-mb", "2")
    m = metrics()
    check(len(before) == 3 and m.get("states") == 1 and m.get("max_bytes") == 2 << 20 and
          m.get("bytes") <= 2 << 20, "a restart with a smaller bound keeps what fits", m)
    old = kept_files()
    J = create(mu=0.6)
    check(J["settling_left"] > 0, "another definition (mu 0.6) settles")
    checks.wait_settled(D.port, J["id"], seconds=120 * MULT)
    now = wait_for("kept", lambda: (lambda f: f if f and f != old else None)(kept_files()), 10)
    m = metrics()
    check(now and len(now) == 1 and now != old and m.get("evictions_total", 0) >= 1 and
          m.get("bytes") <= 2 << 20, "keeping it evicts the older one", "%s -> %s, %s" % (
              old, now, m))


def main():
    global D
    D = Daemon()
    try:
        first_settle()
        waiting()
        restart_and_damage()
        bound()
    finally:
        D.stop()
        subprocess.run(["rm", "-rf", TMP])
    print("%d passed, %d failed" % (checks.passed, checks.failed))
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
