#!/usr/bin/env python3
"""The soak test (issue 16, item 8): a real grainlabd under 30 sessions, 200 websocket viewers
(ws_load), REST traffic from many loopback addresses, a worker killed with kill -9 every few
seconds, floods of idle connections, and one SIGKILL and restart of the daemon on the same data
directory. At the end: every run recorded with the right end reason, no worker left behind, the
restarted daemon's RSS flat, and every viewer of a live session at >= 12 of its 15 frames/s.

    test_soak.py PATH/TO/grainlabd PATH/TO/ws_load

GRAINLAB_SOAK_SECONDS sets the time under load (default 120; the first 40 % on the first daemon,
the rest on the restarted one); GRAINLAB_TIMEOUT_MULTIPLIER scales every wait.
"""
import ctypes
import http.client
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

DAEMON, WS_LOAD = sys.argv[1], sys.argv[2]
SOAK = float(os.environ.get("GRAINLAB_SOAK_SECONDS", "120"))
MULT = float(os.environ.get("GRAINLAB_TIMEOUT_MULTIPLIER", "1"))
SESSIONS = 30
VIEWERS = 200          # reading viewers, spread over the sessions
IDLE_VIEWERS = 60      # websockets that never read, per flood
IDLE_HTTP = 150        # connections that send half a request header, per flood
IDLE_WS_RAW = 40       # connections to the websocket port that never finish their handshake
FLOOD_SECONDS = 20
KILL_EVERY = 3.0       # seconds between two worker kills
REST_THREADS = 4
MIN_FPS = 12.0          # of the 15 frames a second a session makes (schema/stream.md)
# Flat RSS: the restarted daemon runs under steady load (the same sessions, viewers and REST
# rates, sessions and viewers replaced as workers are killed) once its flood is over. Its median
# resident size over the last 15 % of its run, less the most SQLite has held by then, may exceed
# the same over 40..55 % by this much at most: a leak grows with the work done while allocator
# noise does not. SQLite's share is taken out because its page caches (the writer's and four
# readers', up to 2 MB each) fill as the database grows, by 1.7 to 4.2 MB between the two windows
# at the default length: growth with a bound, reported by /metrics
# (grainlab_store_memory_peak_bytes) and logged here. A leak of one kilobyte per request adds
# about 4.5 MB (some 150 requests/s for the 30 s between the windows at the default length; its
# flood, from 5 % of the run for FLOOD_SECONDS, is over 5 s before the first window opens).
RSS_SLACK_KB = 4 * 1024

# The per-client limits (max-connections-per-ip, max-sessions-per-client, create-rate) keep their
# defaults: the test's clients come from 127.0.0.2..127.0.0.250, as a class's would from many
# machines, so the limits' code runs under load without refusing anyone. Flags to add for a run
# that must not depend on those defaults, e.g. ["--max-connections-per-ip", "1000"]:
EXTRA_FLAGS = []

SRC = ["127.0.0.%d" % i for i in range(2, 251)]
failures = []
start_time = time.monotonic()


def log(msg):
    print("[%6.1f s] %s" % (time.monotonic() - start_time, msg), flush=True)


def fail(msg):
    failures.append(msg)
    log("FAIL " + msg)


def check(cond, msg):
    (log("ok   " + msg) if cond else fail(msg))
    return cond


# ---- processes ----------------------------------------------------------------------------------
def become_subreaper():
    """Orphans of a killed daemon come to this process, so that none escapes the orphan check."""
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_CHILD_SUBREAPER = 36
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def proc_stat(pid):
    """(comm, state, ppid, starttime) of a live process, or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    comm = s[s.index("(") + 1:s.rindex(")")]
    rest = s[s.rindex(")") + 2:].split()
    return comm, rest[0], int(rest[1]), int(rest[19])


def children(ppid, comm="grainlab-worker"):
    """Live (not zombie) processes named comm whose parent is ppid: {pid: starttime}."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st and st[0] == comm and st[2] == ppid and st[1] != "Z":
                out[int(name)] = st[3]
    return out


def alive(pid, starttime):
    """The process is still there (same start time, so not a recycled pid) and not a zombie; a
    zombie reparented to this process is reaped."""
    st = proc_stat(pid)
    if st and st[1] == "Z" and st[2] == os.getpid():
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return False
    return bool(st) and st[3] == starttime and st[1] != "Z"


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def sqlite_kb(port):
    """The most SQLite has held in the daemon, from its /metrics (kB; None when it did not
    answer): memory it freed stays in the resident size, so its peak is its share."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10 * MULT)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
    except (OSError, http.client.HTTPException):
        return None
    for line in text.splitlines():
        if line.startswith("grainlab_store_memory_peak_bytes "):
            return int(line.split()[1]) // 1024
    return None


class Daemon:
    def __init__(self, tmp, name):
        self.tmp, self.name = tmp, name

    def start(self):
        self.out = os.path.join(self.tmp, self.name + ".out")
        self.err = open(os.path.join(self.tmp, self.name + ".err"), "w")
        cmd = [DAEMON, "--http-port", "0", "--ws-port", "0", "--data-dir",
               os.path.join(self.tmp, "data"), "--max-sessions", "64", "--admin-token-file",
               os.path.join(self.tmp, "admin")] + EXTRA_FLAGS
        self.proc = subprocess.Popen(cmd, stdout=open(self.out, "w"), stderr=self.err)
        self.pid = self.proc.pid
        deadline = time.monotonic() + 10 * MULT
        while time.monotonic() < deadline:
            with open(self.out) as f:
                line = f.readline()
            if line.startswith("listening http=") and line.endswith("\n"):
                parts = dict(p.split("=") for p in line.split()[1:])
                self.port, self.wsport = int(parts["http"]), int(parts["ws"])
                log("%s: pid %d, http %d, ws %d" % (self.name, self.pid, self.port, self.wsport))
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        sys.exit("FAIL %s did not start: %s" % (self.name, open(self.err.name).read()[-2000:]))

    def stderr_tail(self, n=40):
        with open(self.err.name) as f:
            return "".join(f.readlines()[-n:])


# ---- REST -----------------------------------------------------------------------------------
D = None  # the daemon now serving
ADMIN = "a" * 8 + "".join(random.choice("0123456789abcdef") for _ in range(40))
stats_lock = threading.Lock()
rest_stats = {}          # "METHOD route status" -> count
rest_unexpected = []     # (what, status, body) of answers the traffic did not expect


def request(method, path, body=None, token=None, timeout=None, src=None):
    """(status, parsed JSON or text); status 0 when no answer came."""
    conn = http.client.HTTPConnection("127.0.0.1", D.port, timeout=timeout or 10 * MULT,
                                      source_address=(src or random.choice(SRC), 0))
    headers = {}
    data = None
    if body is not None:
        data = json.dumps(body)
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = "Bearer " + token
    try:
        conn.request(method, path, body=data, headers=headers)
        r = conn.getresponse()
        raw = r.read()
        status = r.status
    except (OSError, http.client.HTTPException) as e:
        return 0, str(e)
    finally:
        conn.close()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


def counted(route, method, path, body=None, token=None, ok=(200, 201), tolerated=(),
            excused=lambda status: False):
    """A request of the traffic: its status counted; anything not in ok or tolerated, and not
    excused by what happened meanwhile, is kept."""
    status, reply = request(method, path, body, token)
    with stats_lock:
        key = "%s %s %d" % (method, route, status)
        rest_stats[key] = rest_stats.get(key, 0) + 1
        if status not in ok and status not in tolerated and not excused(status):
            rest_unexpected.append((key, str(reply)[:300]))
    return status, reply


# ---- the sessions this test made ------------------------------------------------------------
world = threading.RLock()  # held by every change to which sessions and runs exist
sessions = {}              # id -> {"token", "run", "scene", "viewers"}
expected = {}              # run id -> end reason it must have ("open" while it runs)
counts = {"created": 0, "kills": 0, "switches": 0, "forks": 0, "deleted": 0, "finished": 0,
          "pause_steps": 0}
load = None                # ws_load's stdin
load_lines = []            # its JSON output lines
load_cond = threading.Condition()

SCENES = [("drum", {"amount": 10, "quality": 0}), ("drum", {"amount": 10, "quality": 1}),
          ("drum", {"amount": 10, "quality": 0, "rpm": 6}), ("pour", {"amount": 10, "quality": 0}),
          ("orbit", {})]
LIVE_PARAMS = {"drum": [("mu", 0.2, 0.9), ("rpm", 1, 8)], "pour": [("mu", 0.2, 0.9),
               ("spout_x", -1, 1)], "orbit": [("eps", 0, 0.3)]}


def ws(cmd):
    load.write(cmd + "\n")
    load.flush()


def read_load(proc):
    for line in proc.stdout:
        with load_cond:
            load_lines.append(json.loads(line))
            load_cond.notify_all()


def load_reply(event, tag=None, timeout=30):
    deadline = time.monotonic() + timeout * MULT
    with load_cond:
        while time.monotonic() < deadline:
            for i, m in enumerate(load_lines):
                if m["event"] == event and (tag is None or m.get("tag") == tag):
                    return load_lines.pop(i)
            load_cond.wait(0.5)
    sys.exit("FAIL ws_load gave no %s line" % event)


def adopt(reply, viewers):
    """A session just created (201 reply): recorded, and watched by `viewers` viewers."""
    sid = reply["id"]
    sessions[sid] = {"token": reply["control_token"], "run": reply["run_id"],
                     "scene": reply["scene"], "viewers": viewers, "switches": 0}
    expected[reply["run_id"]] = "open"
    counts["created"] += 1
    if viewers:
        ws("view %s %d" % (sid, viewers))


def create(viewers):
    """A new session of a random small scene; now and then a fork of an ended drum run."""
    with world:
        ended = [r for r, why in expected.items() if why in ("switched", "deleted", "failed")
                 and runs_scene.get(r) == "drum"]
        if ended and random.random() < 0.2:
            run = random.choice(ended)
            st, reply = counted("/api/runs/{run}/fork", "POST", "/api/runs/%d/fork" % run,
                                {"params": {"mu": round(random.uniform(0.2, 0.9), 3)}},
                                ok=(201,))
            if st == 201:
                counts["forks"] += 1
                runs_scene[reply["run_id"]] = reply["scene"]
                adopt(reply, viewers)
                return
        scene, params = random.choice(SCENES)
        st, reply = counted("/api/sessions", "POST", "/api/sessions",
                            {"scene": scene, "params": params, "seed": random.randrange(1 << 30)},
                            ok=(201,))
        if st == 201:
            runs_scene[reply["run_id"]] = scene
            adopt(reply, viewers)


runs_scene = {}  # run id -> scene, for choosing runs to fork


def delete(sid, reason="deleted"):
    with world:
        s = sessions.pop(sid)
        st, _ = counted("/api/sessions/{id}", "DELETE", "/api/sessions/" + sid, token=s["token"],
                        ok=(200,), tolerated=(404,) if reason != "deleted" else ())
        if expected.get(s["run"]) == "open":
            expected[s["run"]] = reason
        counts["deleted"] += 1


def session_states():
    st, reply = request("GET", "/api/sessions", token=ADMIN)
    if st != 200:
        return None
    items = reply["sessions"] if isinstance(reply, dict) else reply
    return {s["id"]: s for s in items}


# ---- load: REST traffic, the killer, floods ------------------------------------------------
stop = threading.Event()
rest_paused = threading.Event()
rest_busy = [0]


def traffic_once():
    with world:
        if not sessions:
            return
        sid = random.choice(list(sessions))
        s = dict(sessions[sid])
        runs = [r for r in expected if r in runs_scene]
    run = random.choice(runs) if runs else 1
    ops = random.random()
    # 404 or 409 whenever the session was deleted or failed (killed) a moment ago
    churn = (404, 409)

    def switched(status):
        """A 422 for the scene this thread saw is right if another switched the session since."""
        with world:
            return status == 422 and sid in sessions and \
                sessions[sid]["switches"] != s["switches"]
    if ops < 0.15:
        counted("/api/sessions", "GET", "/api/sessions")
    elif ops < 0.30:
        counted("/api/sessions/{id}", "GET", "/api/sessions/" + sid, tolerated=(404,))
    elif ops < 0.40:
        counted("/api/runs", "GET", "/api/runs?limit=20&scene=" + s["scene"])
    elif ops < 0.45:
        counted("/api/runs/{run}", "GET", "/api/runs/%d" % run, tolerated=(404,))
    elif ops < 0.50:
        counted("/api/runs/{run}/samples", "GET", "/api/runs/%d/samples" % run, tolerated=(404,))
    elif ops < 0.58:
        counted("/metrics", "GET", "/metrics")
    elif ops < 0.62:
        counted("/healthz", "GET", "/healthz")
    elif ops < 0.64:
        counted("/api/scenes", "GET", "/api/scenes")
    elif ops < 0.78:
        name, lo, hi = random.choice(LIVE_PARAMS[s["scene"]])
        counted("/api/sessions/{id}/params", "PATCH", "/api/sessions/%s/params" % sid,
                {name: round(random.uniform(lo, hi), 3)}, s["token"], tolerated=churn,
                excused=switched)
    elif ops < 0.92:
        act = {"drum": [{"type": "tool", "x": 0.2, "y": 1.0, "z": 0.0}, {"type": "tool_off"}],
               "pour": [{"type": "spout", "x": round(random.uniform(-1, 1), 2), "z": 0.1},
                        {"type": "pour", "on": random.random() < 0.7}],
               "orbit": [{"type": "reset"}]}[s["scene"]]
        a = random.choice(act)
        if a["type"] == "reset":
            # a Reset ends the run ("reset") and starts a new one from it (under the world lock,
            # as a switch)
            with world:
                if sid not in sessions:
                    return
                st, reply = counted("/api/sessions/{id}/actions", "POST",
                                    "/api/sessions/%s/actions" % sid, a, s["token"],
                                    tolerated=churn)
                if st == 200:
                    # the run it ended is the session's run now, not the one this thread saw
                    # before it took the lock (another thread may have reset it meanwhile)
                    expected[sessions[sid]["run"]] = "reset"
                    sessions[sid]["run"] = reply["run_id"]
                    expected[reply["run_id"]] = "open"
                    runs_scene[reply["run_id"]] = reply["scene"]
            return
        # "pour on" once every grain is poured is refused (422 rejected), as it must be
        counted("/api/sessions/{id}/actions", "POST", "/api/sessions/%s/actions" % sid, a,
                s["token"], tolerated=churn + ((422,) if a["type"] == "pour" else ()),
                excused=switched)
    elif ops < 0.975:
        counted("/api/sessions/{id}", "PATCH", "/api/sessions/" + sid,
                {"speed": random.choice([0.5, 1, 1, 2])}, s["token"], tolerated=churn)
    elif ops < 0.98:
        # a scene switch: the run ends "switched", a new one starts (under the world lock, so the
        # killer never races it)
        with world:
            if sid not in sessions:
                return
            scene, params = random.choice(SCENES)
            st, reply = counted("/api/sessions/{id}/scene", "POST", "/api/sessions/%s/scene" % sid,
                                {"scene": scene, "params": params}, s["token"])
            if st == 200:
                expected[sessions[sid]["run"]] = "switched"  # as for a reset: the run now
                sessions[sid].update(run=reply["run_id"], scene=reply["scene"],
                                     switches=sessions[sid]["switches"] + 1)
                expected[reply["run_id"]] = "open"
                runs_scene[reply["run_id"]] = reply["scene"]
                counts["switches"] += 1
    else:
        # pause, step, resume: together, so no session stays paused (a paused session would not
        # notice its worker's death until it next calls it)
        with world:
            if sid not in sessions:
                return
            path = "/api/sessions/%s/actions" % sid
            counted("/api/sessions/{id}/actions", "POST", path, {"type": "pause"}, s["token"])
            counted("/api/sessions/{id}/actions", "POST", path, {"type": "step", "n": 20},
                    s["token"])
            counted("/api/sessions/{id}/actions", "POST", path, {"type": "resume"}, s["token"])
            counts["pause_steps"] += 1


def traffic():
    while not stop.is_set():
        if rest_paused.is_set():
            time.sleep(0.05)
            continue
        with stats_lock:
            rest_busy[0] += 1
        try:
            traffic_once()
        finally:
            with stats_lock:
                rest_busy[0] -= 1
        time.sleep(random.uniform(0, 0.04))


def pause_traffic():
    rest_paused.set()
    deadline = time.monotonic() + 30 * MULT
    while rest_busy[0] and time.monotonic() < deadline:
        time.sleep(0.02)


def kill_one():
    """kill -9 one worker of the daemon; the session it served must fail (or go), its run must
    end "failed"; the session is deleted and another takes its place with as many viewers."""
    with world:
        states = session_states()
        if states is None:
            fail("GET /api/sessions failed before a kill")
            return
        failed_before = [sid for sid in sessions if sid not in states or
                         states[sid]["state"] == "failed"]
        if failed_before:
            fail("sessions failed without a kill: %s" % [(sid, states.get(sid, {}).get("reason"))
                                                        for sid in failed_before])
            for sid in failed_before:
                delete(sid, "failed")
            return
        workers = children(D.pid)
        if not workers:
            return
        victim = random.choice(list(workers))
        os.kill(victim, signal.SIGKILL)
        counts["kills"] += 1
        deadline = time.monotonic() + 10 * MULT
        gone = []
        while time.monotonic() < deadline and not gone:
            time.sleep(0.05)
            states = session_states() or {}
            gone = [sid for sid in sessions if sid not in states or
                    states[sid]["state"] == "failed"]
        if len(gone) != 1:
            fail("kill -9 of worker %d: sessions that failed: %s" % (victim, gone))
        for sid in gone:
            if sid in states and "worker" not in str(states[sid].get("reason", "")):
                log("note: the failed session's reason: %s" % states[sid].get("reason"))
            k = sessions[sid]["viewers"]
            expected[sessions[sid]["run"]] = "failed"
            delete(sid, "failed")
            create(k)


def killer():
    while not stop.wait(KILL_EVERY):
        if not rest_paused.is_set():
            kill_one()


def flood(tag):
    """Idle connections: half-sent HTTP headers, unfinished websocket handshakes and websockets
    that never read; /healthz must answer throughout."""
    socks = []
    src = iter(SRC * 4)
    half = [(D.port, IDLE_HTTP, b"GET /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "),
            (D.wsport, IDLE_WS_RAW,
             b"GET /ws/sessions/x HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n")]
    for port, count, head in half:
        for _ in range(count):
            try:
                s = socket.create_connection(("127.0.0.1", port), 5, (next(src), 0))
                s.sendall(head)
                socks.append(s)
            except OSError:
                pass
    with world:
        ids = list(sessions)
        for i in range(IDLE_VIEWERS):
            ws("view %s 1 idle" % ids[i % len(ids)])
    lat = []
    bad = 0
    t_end = time.monotonic() + FLOOD_SECONDS
    while time.monotonic() < t_end and not stop.is_set():
        t0 = time.monotonic()
        st, _ = request("GET", "/healthz", timeout=5 * MULT)
        lat.append(time.monotonic() - t0)
        bad += st != 200
        time.sleep(0.25)
    closed = 0
    for s in socks:
        s.setblocking(False)
        try:
            closed += s.recv(1) == b""
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
        s.close()
    lat.sort()
    log("%s: %d half-open HTTP and %d unfinished websocket connections (%d closed by the daemon "
        "within %d s), %d idle viewers; /healthz %d times, max %.0f ms, p50 %.0f ms" %
        (tag, IDLE_HTTP, IDLE_WS_RAW, closed, FLOOD_SECONDS, IDLE_VIEWERS, len(lat),
         1000 * lat[-1] if lat else 0, 1000 * lat[len(lat) // 2] if lat else 0))
    check(bad == 0 and lat, "%s: /healthz answered every time during the flood (%d failures)" %
          (tag, bad))


def populate():
    per = [VIEWERS // SESSIONS + (i < VIEWERS % SESSIONS) for i in range(SESSIONS)]
    for k in per:
        create(k)
    check(len(sessions) == SESSIONS, "%d sessions created, %d viewers asked for" %
          (len(sessions), sum(s["viewers"] for s in sessions.values())))


def run_phase(seconds, tag, flood_at, rss=None):
    """Load for `seconds`: REST traffic, the killer, one flood at `flood_at` of it; rss (a list,
    if given) gets (time into the phase, the daemon's VmRSS and SQLite's peak of it, in kB)
    every half second from 40 % of the phase on."""
    stop.clear()
    rest_paused.clear()
    threads = [threading.Thread(target=traffic, daemon=True) for _ in range(REST_THREADS)]
    threads.append(threading.Thread(target=killer, daemon=True))
    for t in threads:
        t.start()
    t0 = time.monotonic()
    flooder = threading.Thread(target=flood, args=(tag + " flood",), daemon=True)
    while time.monotonic() - t0 < seconds:
        if flooder.ident is None and time.monotonic() - t0 > seconds * flood_at:
            flooder.start()
        if rss is not None and time.monotonic() - t0 > seconds * 0.4:
            db = sqlite_kb(D.port)
            if db is not None:
                rss.append((time.monotonic() - t0, rss_kb(D.pid), db))
        time.sleep(0.5)
    stop.set()
    for t in threads + ([flooder] if flooder.ident else []):
        t.join(60 * MULT)


def wait_gone(pids, what):
    deadline = time.monotonic() + 15 * MULT
    left = dict(pids)
    while left and time.monotonic() < deadline:
        left = {p: t for p, t in left.items() if alive(p, t)}
        time.sleep(0.1)
    return check(not left, "%s: none of %d workers left (still alive: %s)" %
                 (what, len(pids), sorted(left)))


def frame_rates(tag, seconds):
    """Every reading viewer of every live session must be open and get >= MIN_FPS frames/s over
    the next `seconds`; returns ws_load's measurement. A session the last switches left waiting
    for another's settle of the same grains steps (and streams) nothing until that one is kept:
    the measure starts once none waits."""
    t0 = time.monotonic()
    waiting = None
    while time.monotonic() - t0 < 30 * MULT:
        states = session_states() or {}
        waiting = sorted(sid for sid, s in states.items() if s.get("settle_wait"))
        if not waiting:
            break
        time.sleep(0.2)
    log("%s: %.1f s until no session waited for another's settle (still waiting: %s)" %
        (tag, time.monotonic() - t0, waiting))
    ws("measure %g %s" % (seconds, tag))
    m = load_reply("measure", tag)
    states = session_states() or {}
    live = {sid for sid, s in states.items() if s["state"] in ("running", "asleep")}
    ours = [v for v in m["viewers"] if v["session"] in live and not v["idle"]]
    fps = sorted(v["fps"] for v in ours) or [0]
    slow = [v for v in ours if not v["open"] or v["fps"] < MIN_FPS]
    log("%s: frame rates of %d viewers of %d live sessions over %.1f s: min %.1f, p10 %.1f, "
        "median %.1f, max %.1f" % (tag, len(ours), len(live), m["seconds"], fps[0],
                                  fps[len(fps) // 10], fps[len(fps) // 2], fps[-1]))
    check(len(live) == SESSIONS and len(ours) >= VIEWERS and not slow,
          "%s: every viewer of a live session is open at >= %g frames/s (%d sessions, %d "
          "viewers; too slow or closed: %s)" % (tag, MIN_FPS, len(live), len(ours), slow[:5]))
    return m


def all_runs():
    runs, offset = {}, 0
    while True:
        st, reply = request("GET", "/api/runs?limit=500&offset=%d" % offset, token=ADMIN)
        if st != 200:
            fail("GET /api/runs: %d %s" % (st, str(reply)[:200]))
            return runs
        for r in reply["runs"]:
            runs[r["id"]] = r["end_reason"]
        offset += len(reply["runs"])
        if not reply["runs"] or offset >= reply["total"]:
            return runs


def main():
    global D, load
    become_subreaper()
    tmp = tempfile.mkdtemp(prefix="soak.")
    with open(os.path.join(tmp, "admin"), "w") as f:
        f.write(ADMIN + "\n")
    log("soak: %.0f s under load (GRAINLAB_SOAK_SECONDS), timeouts x%g" % (SOAK, MULT))
    lp = subprocess.Popen([WS_LOAD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    load = lp.stdin
    threading.Thread(target=read_load, args=(lp,), daemon=True).start()
    daemons = []
    try:
        # ---- the first daemon: load, then SIGKILL -------------------------------------------
        D = Daemon(tmp, "daemon-1")
        D.start()
        daemons.append(D)
        ws("port %d" % D.wsport)
        populate()
        run_phase(SOAK * 0.4, "daemon-1", 0.2)
        frame_rates("daemon-1", 3)
        with world:
            pause_traffic()
            time.sleep(1.0)  # the store's writer commits every 100 ms: nothing queued is lost
            states = session_states() or {}
            open_runs = [s["run"] for sid, s in sessions.items()]
            check(all(states.get(sid, {}).get("state") in ("running", "asleep")
                      for sid in sessions), "daemon-1: every session live before its SIGKILL")
            workers = children(D.pid)
            os.kill(D.pid, signal.SIGKILL)
            D.proc.wait()
            log("daemon-1 killed with SIGKILL: %d sessions, %d workers, runs %s open" %
                (len(sessions), len(workers), open_runs))
            wait_gone(workers, "after the daemon's SIGKILL")
            for r in open_runs:
                expected[r] = "interrupted"
            sessions.clear()
            # ---- the second daemon, same data directory -------------------------------------
            D = Daemon(tmp, "daemon-2")
            D.start()
            daemons.append(D)
            rec = all_runs()
            check(all(rec.get(r) == "interrupted" for r in open_runs),
                  "after the restart every run open at the SIGKILL is 'interrupted' (%d runs)" %
                  len(open_runs))
            ws("port %d" % D.wsport)
            populate()
        rss = []
        run_phase(SOAK * 0.6, "daemon-2", 0.05, rss)
        with open(os.path.join(os.environ.get("GRAINLAB_SOAK_OUT", tmp), "rss.txt"), "w") as f:
            f.writelines("%.1f %d %d\n" % x for x in rss)

        # ---- the end: frame rates, then runs, orphans and memory ----------------------------
        time.sleep(2)
        m = frame_rates("daemon-2", 5)
        outcome = {}
        for v in m["viewers"]:
            k = "%s%s" % ("idle, " if v["idle"] else "", "open" if v["open"] else
                          "closed %d %s%s" % (v["close"], v["why"], " (never connected)"
                                              if not v["connected"] else ""))
            outcome[k] = outcome.get(k, 0) + 1
        log("every viewer connection of the soak, by state: %s" % json.dumps(outcome,
                                                                            sort_keys=True))
        never = [v for v in m["viewers"] if not v["idle"] and not v["connected"]]
        check(not never, "every reading viewer connected (never: %d, e.g. %s)" %
              (len(never), never[:3]))
        ws("status")
        t = load_reply("status")
        check(t["decode_errors"] == 0 and t["seq_bad"] == 0,
              "%d frames received in all, every one decoded, sequence numbers rising (%d viewer "
              "connections, %d refused)" % (t["frames"], t["conns"], t["connect_errors"]))

        with world:
            ids = list(sessions)
            for sid in ids[:2]:
                st, _ = counted("/api/sessions/{id}/actions", "POST",
                                "/api/sessions/%s/actions" % sid, {"type": "finish"},
                                sessions[sid]["token"])
                if st == 200:
                    expected[sessions[sid]["run"]] = "finished"
                    counts["finished"] += 1
            for sid in ids[5:]:
                delete(sid)
            stopped = [sessions[sid]["run"] for sid in ids[2:5]]
        time.sleep(0.5)
        rec = all_runs()
        wrong = {r: (rec.get(r), why) for r, why in expected.items()
                 if why != "open" and r not in stopped and rec.get(r) != why}
        check(not wrong, "over REST, every ended run has its end reason (wrong: %s)" %
              dict(list(wrong.items())[:10]))

        # memory: the restarted daemon's RSS from 40 % of its run on (its flood is over by then)
        span = SOAK * 0.6
        early = sorted(kb - db for t, kb, db in rss if t <= span * 0.55)
        late = sorted(kb - db for t, kb, db in rss if t >= span * 0.85)
        if early and late:
            e, l = early[len(early) // 2], late[len(late) // 2]
            dbs = [db for _, _, db in rss]
            log("daemon-2 VmRSS over %.0f..%.0f s of its run: %d samples, %d..%d kB, of which "
                "SQLite's peak %d..%d kB; less that, median %d kB at %.0f..%.0f s, %d kB at "
                "%.0f..%.0f s" % (rss[0][0], rss[-1][0], len(rss), min(kb for _, kb, _ in rss),
                                  max(kb for _, kb, _ in rss), min(dbs), max(dbs), e, span * 0.4,
                                  span * 0.55, l, span * 0.85, span))
            check(l <= e + RSS_SLACK_KB, "the daemon's RSS less SQLite's peak is flat: %d kB <= "
                  "%d kB + %d kB" % (l, e, RSS_SLACK_KB))
        else:
            fail("too few RSS samples: %d" % len(rss))

        # an orderly stop: the sessions left are stopped, no worker stays behind
        workers = children(D.pid)
        D.proc.send_signal(signal.SIGTERM)
        try:
            rc = D.proc.wait(30 * MULT)
        except subprocess.TimeoutExpired:
            rc = None
        check(rc == 0, "daemon-2 stopped on SIGTERM with status %s (%d workers before)" %
              (rc, len(workers)))
        wait_gone(workers, "after the daemon's SIGTERM")
        orphans = children(os.getpid())
        check(not orphans, "no grainlab-worker came to this test as an orphan (%s)" % orphans)
        for r in stopped:
            expected[r] = "stopped"
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(tmp, "data", "grainlab.db"),
                             uri=True)
        stored = dict(db.execute("SELECT id, end_reason FROM runs"))
        db.close()
        tally = {}
        for why in stored.values():
            tally[why] = tally.get(why, 0) + 1
        log("runs in the store: %d, by end reason %s" % (len(stored), tally))
        wrong = {r: (stored.get(r), why) for r, why in expected.items() if stored.get(r) != why}
        unknown = sorted(set(stored) - set(expected))
        check(not wrong and not unknown,
              "in the store, every run of the soak has the end reason it must (%d runs; wrong: %s;"
              " runs this test did not make: %s)" % (len(expected), dict(list(wrong.items())[:10]),
                                                     unknown[:10]))
    finally:
        stop.set()
        for d in daemons:
            if d.proc.poll() is None:
                d.proc.kill()
                d.proc.wait()
        for pid in children(os.getpid()):  # orphans this test adopted (a failed check said so)
            os.kill(pid, signal.SIGKILL)
        try:
            ws("quit")
            lp.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            lp.kill()
    log("counts: %s" % json.dumps(counts))
    total = sum(rest_stats.values())
    log("REST: %d requests; by route and status: %s" % (total, json.dumps(rest_stats, sort_keys=True)))
    check(not rest_unexpected, "no unexpected REST answer (%d, first: %s)" %
          (len(rest_unexpected), rest_unexpected[:5]))
    if failures:
        for d in daemons:
            print("---- %s's stderr (last lines) ----\n%s" % (d.name, d.stderr_tail()))
        print("FAILED: %d check(s); the daemons' data and output are kept in %s" %
              (len(failures), tmp))
        sys.exit(1)
    shutil.rmtree(tmp, ignore_errors=True)
    print("soak: every check passed in %.0f s" % (time.monotonic() - start_time))


if __name__ == "__main__":
    main()
