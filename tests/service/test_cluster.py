#!/usr/bin/env python3
"""A cluster on loopback as the README starts it (scripts/cluster.sh: a real PostgreSQL, three
grainlabd nodes, a real nginx with deploy/nginx-cluster.conf), issue 20: 30 sessions and 2
classes created through the one origin spread across the nodes by placement; a class and its
groups stay on one node; viewers watch through the origin; ids and join codes reach their node;
/api/runs on any node lists every node's runs; one node killed with -9 is told to its viewers
while the others carry on and its shipped runs stay listed; restarted, its interrupted runs
reach the cluster record.

usage: test_cluster.py path/to/grainlabd path/to/ws_probe"""
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import checks  # noqa: E402
from checks import check  # noqa: E402

EXE, PROBE = sys.argv[1], sys.argv[2]
MULT = float(os.environ.get("GRAINLAB_TIMEOUT_MULTIPLIER", "1"))
TMP = tempfile.mkdtemp(prefix="grainlab-cluster-")
ENV = dict(os.environ)
NODES = ["n0", "n1", "n2"]


def free_ports(n):
    """n ports free now (bound together, then let go: nothing else on a test machine takes them
    in the second before the nodes do)."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def req(port, method, path, body=None, token=None):
    """One request; (status, JSON or text, headers)."""
    return checks.request(port, method, path, body, token, timeout=60 * MULT)


CLUSTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                       "cluster.sh")


def cluster(*args):
    """scripts/cluster.sh, the README's commands, with this test's folder, ports and build."""
    return subprocess.run(["bash", CLUSTER] + list(args), env=ENV, capture_output=True, text=True,
                          timeout=120 * MULT)


class Node:
    def __init__(self, name, http_port, ws_port):
        self.name, self.port, self.ws = name, http_port, ws_port

    def pid(self):
        with open(os.path.join(ENV["CLUSTER_DIR"], self.name + ".pid")) as f:
            return int(f.read())

    def kill(self):
        os.kill(self.pid(), signal.SIGKILL)

    def start(self):
        # as an operator restarts a node at 8 am: without the flags start was given
        env = {k: v for k, v in ENV.items() if k != "NODE_FLAGS"}
        r = subprocess.run(["bash", CLUSTER, "node", self.name], env=env, capture_output=True,
                           text=True, timeout=120 * MULT)
        if r.returncode != 0:
            raise SystemExit("FAIL node %s did not start again: %s" % (self.name, r.stderr))


def follow_create(port, path, body, token=None):
    """POST through the origin, following placement's 307 as a browser does; (status, reply,
    redirected to)."""
    s, r, h = req(port, "POST", path, body, token)
    moved = None
    if s == 307:
        moved = h.get("Location")
        s, r, h = req(port, "POST", moved, body, token)
    return s, r, moved


def wait_for(cond, seconds):
    end = time.time() + seconds * MULT
    while time.time() < end:
        try:
            if cond():
                return True
        except OSError:
            pass  # not listening yet
        time.sleep(0.2)
    return False


def node_of(name):
    return name.split("-", 1)[0]


def probe(port, session, seconds, frames=None):
    args = [PROBE, "--port", str(port), "--session", session, "--seconds", str(seconds)]
    if frames:
        args += ["--frames", str(frames)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def free_run(n):
    """A first port of n consecutive ones free now (cluster.sh gives node k BASE+2k and +1), below
    the kernel's ephemeral range: the nodes bind them seconds later (PostgreSQL starts first),
    and a port in that range may by then be another test's port-0 listener or connection."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    top = low if low - n > 10000 else 60000
    for _ in range(200):
        first = random.randrange(10000, top - n)
        socks = []
        try:
            for p in range(first, first + n):
                sk = socket.socket()
                socks.append(sk)
                sk.bind(("127.0.0.1", p))
            return first
        except OSError:
            pass
        finally:
            for sk in socks:
                sk.close()
    raise SystemExit("FAIL no %d free ports in a row" % n)


def main():
    base = free_run(2 * len(NODES))
    origin, pgport = free_ports(2)
    ENV.update(CLUSTER_DIR=os.path.join(TMP, "cluster"), NODES=str(len(NODES)),
               ORIGIN_PORT=str(origin), BASE_PORT=str(base), PG_PORT=str(pgport),
               BUILD=os.path.dirname(os.path.abspath(EXE)),
               NODE_FLAGS="--max-sessions 16 --max-sessions-per-client 10000 --create-rate "
               "100000 --join-guess-rate 100000 --max-connections-per-ip 10000")
    os.chmod(TMP, 0o711)  # PostgreSQL runs as its own user under it
    nodes = [Node(n, base + 2 * i, base + 2 * i + 1) for i, n in enumerate(NODES)]
    started = cluster("start")
    try:
        if check(started.returncode == 0, "bash scripts/cluster.sh start: PostgreSQL, %d nodes "
                 "and nginx" % len(NODES), (started.stdout + started.stderr).strip()):
            # the link a teacher opens: the origin's /teach with the cluster's one token
            link = re.search(r"^teacher: http://127\.0\.0\.1:%d/teach#token=([0-9a-f]{32})$" % origin,
                             started.stdout, re.M)
            if check(link is not None, "start prints the teacher's /teach link on the origin",
                     started.stdout.strip()):
                run(nodes, origin, link.group(1))
    finally:
        stopped = cluster("stop")
        check(stopped.returncode == 0, "bash scripts/cluster.sh stop", stopped.stderr.strip())
    print("%d passed, %d failed" % (checks.passed, checks.failed))
    if checks.failed:
        for n in NODES:
            log = os.path.join(ENV["CLUSTER_DIR"], n + ".log")
            if os.path.exists(log):
                with open(log) as f:
                    print("---- %s's log (last 20 lines) ----\n%s" % (n, "".join(f.readlines()[-20:])))
    shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(1 if checks.failed else 0)


def run(nodes, origin, teacher):
    by = {n.name: n for n in nodes}
    # ---- every node publishes its load, and hears the others ----------------------------------
    s, ready, _ = req(nodes[1].port, "GET", "/readyz")
    check(s == 200 and ready.get("node") == "n1" and ready.get("max_sessions") == 16
          and ready.get("sessions") == 0 and ready.get("load") == 0 and ready.get("cores", 0) >= 1,
          "/readyz publishes the node, its room and its load", json.dumps(ready))
    wait_for(lambda: req(origin, "GET", "/api/scenes")[0] == 200, 10)
    time.sleep(2.5)  # each node asks its peers once a second
    s, _, _ = req(origin, "GET", "/api/scenes")
    check(s == 200, "through the origin: GET /api/scenes")
    s, page, _ = req(origin, "GET", "/")
    check(s == 200 and "<html" in str(page).lower(), "through the origin: the landing page")
    s, nl, _ = req(nodes[2].port, "GET", "/api/nodes")
    check(s == 200 and [x["node"] for x in nl["nodes"]][0] == "n2"
          and sorted(x["node"] for x in nl["nodes"]) == NODES,
          "/api/nodes: this node first, then the peers it hears", json.dumps(nl)[:300])

    # ---- 30 sessions through the origin: placement spreads them --------------------------------
    made, moved, misplaced = [], 0, []
    for i in range(30):
        scene = ["pour", "silo", "dambreak"][i % 3]
        s, r, to = follow_create(origin, "/api/sessions",
                                 {"scene": scene, "params": {"quality": 0}, "label": "g%d" % i})
        if s != 201:
            check(False, "session %d created through the origin" % i, "%d %s" % (s, r))
            continue
        moved += to is not None
        made.append(r)
        if to and to != "/n/%s/api/sessions" % node_of(r["id"]):
            misplaced.append((to, r["id"]))
    check(moved > 0 and not misplaced, "every 307 sends its session to the node that made it",
          "%d redirected, wrong: %s" % (moved, misplaced))
    count = {n: sum(1 for r in made if node_of(r["id"]) == n) for n in NODES}
    check(len(made) == 30, "30 sessions created through the one origin", "%d" % len(made))
    check(all(7 <= c <= 13 for c in count.values()),
          "placement spreads them: 7 to 13 on each node", "%s, %d sent on by a 307" % (count, moved))
    check(all(r["join_code"].startswith(node_of(r["id"]) + "-") for r in made),
          "every id and join code carries its node", made[0]["id"] + " " + made[0]["join_code"])
    for n in nodes:
        s, lst, _ = req(n.port, "GET", "/api/sessions")
        ids = sorted(x["id"] for x in lst.get("sessions", []))
        want = sorted(r["id"] for r in made if node_of(r["id"]) == n.name)
        check(ids == want, "node %s lists exactly the sessions placed on it" % n.name,
              "%d listed" % len(ids))
    s, ready, _ = req(nodes[0].port, "GET", "/readyz")
    check(ready.get("sessions") == count["n0"] and ready.get("load", 0) > 0,
          "n0's published figure counts its sessions and their work", json.dumps(ready))

    # ---- by id and by join code, every node's sessions answer through the origin --------------
    ok_id = ok_code = 0
    for r in made:
        s1, a, _ = req(origin, "GET", "/api/sessions/" + r["id"])
        s2, b, _ = req(origin, "GET", "/api/sessions/" + r["join_code"])
        ok_id += s1 == 200 and a.get("id") == r["id"]
        ok_code += s2 == 200 and b.get("id") == r["id"]
    check(ok_id == len(made) and ok_code == len(made),
          "GET by id and by join code reaches the owning node for all", "%d, %d" % (ok_id, ok_code))
    one = next(r for r in made if node_of(r["id"]) == "n2" and r["scene"] == "pour")
    s, page, _ = req(origin, "GET", "/s/" + one["id"])
    check(s == 200 and "<html" in str(page).lower(), "the session page /s/{id} through the origin")
    s, r, _ = req(origin, "PATCH", "/api/sessions/" + one["id"] + "/params", {"mu": 0.7},
                  one["control_token"])
    check(s == 200 and r["params"]["mu"] == 0.7, "a controller's PATCH reaches its node", s)
    s, r, _ = req(origin, "GET", "/api/sessions/n7-0123456789abcdef")
    check(s == 421 and r["error"]["code"] == "wrong_node",
          "an id of a node the cluster lacks: 421 wrong_node, from any node", json.dumps(r))
    s, r, _ = req(nodes[0].port, "GET", "/api/sessions/" + one["id"])
    check(s == 421 and "n2" in r["error"]["message"],
          "a node asked for another's session says whose it is (421)", json.dumps(r))
    s, r, _ = req(origin, "GET", "/n/n1/readyz")
    check(s == 200 and r.get("node") == "n1", "/n/{node}/ reaches that node", json.dumps(r))

    # ---- 2 classes: each lives with all its groups on one node --------------------------------
    classes = []
    for name in ("Physics 3B", "Physics 4A"):
        s, c, to = follow_create(origin, "/api/classes", {
            "name": name, "scenes": ["pour"], "max_groups": 3, "grain_budget": 20000,
            "defaults": {"pour": {"quality": 0}},
            "ends_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))},
            teacher)
        check(s == 201 and c["code"].startswith(node_of(c["id"]) + "-"),
              "class %s created through the origin, on a node with room" % name,
              "%d %s %s" % (s, c.get("id") if isinstance(c, dict) else c, to or ""))
        classes.append(c)
    for c in classes:
        home = node_of(c["id"])
        groups = []
        for g in ("team 1", "team 2"):
            s, j, _ = req(origin, "POST", "/n/%s/api/join" % home, {"code": c["code"], "group": g})
            groups.append(j["session"]["id"] if s in (200, 201) else "(%d %s)" % (s, j))
        check(all(node_of(x) == home for x in groups),
              "class %s's groups run on its node %s" % (c["code"], home), groups)
        s, got, _ = req(origin, "GET", "/api/classes/" + c["id"], token=c["teacher_token"])
        check(s == 200 and len(got.get("groups", [])) == 2,
              "the teacher's view of class %s through the origin" % c["code"], s)
    # a plain join through the origin, as the README and a browser send it, lands on any node: the
    # class's own answers, any other sends it there with a 307 (method and body kept, issue 32)
    home = node_of(classes[0]["id"])
    answers, moved = [], set()
    for i in range(6):
        s, r, h = req(origin, "POST", "/api/join", {"code": classes[0]["code"], "group": "team 1"})
        answers.append(s)
        if s == 307:
            moved.add(h.get("Location"))
            s, r, _ = req(origin, "POST", h.get("Location"),
                          {"code": classes[0]["code"], "group": "team 1"})
        answers.append(s if s != 200 else r["group"])
    check(moved <= {"/n/%s/api/join" % home} and set(answers) <= {200, 307, "team 1"}
          and answers.count("team 1") == 6,
          "a plain POST /api/join through the origin reaches the class's node %s, by 307 when it "
          "landed elsewhere" % home, "%s %s" % (answers, moved))
    s, r, h = req(origin, "GET", "/api/join?code=" + classes[0]["code"])
    if s == 307:
        s, r, _ = req(origin, "GET", h.get("Location"))
    check(s == 200 and r.get("name") == "Physics 3B",
          "the join page's lookup reaches it too", "%d %s" % (s, json.dumps(r)[:160]))

    # ---- viewers through the origin, one session per node --------------------------------------
    watched = {}
    for n in NODES:
        r = next(x for x in made if node_of(x["id"]) == n)
        # it stops at its tenth frame: the window only bounds a node too loaded to send them (30
        # sessions on 2 cores, beside the browser tests, sent one viewer 8 frames in 3 s)
        p = probe(origin, r["id"], 20 * MULT, frames=10)
        out, _ = p.communicate(timeout=60 * MULT)
        seen = json.loads(out or "{}")
        watched[n] = seen.get("frames", 0)
    check(all(f >= 10 for f in watched.values()),
          "a viewer of each node's session gets its frames through the origin", watched)

    # ---- one record: /api/runs on any node lists every node's runs -----------------------------
    # what each node recorded: every session made here started a run there
    want = sorted((node_of(r["id"]), r["run_id"]) for r in made)
    listed = {}
    for n in nodes:
        def lists_all(n=n):
            s, runs, _ = req(n.port, "GET", "/api/runs?limit=500&sort=id")
            listed[n.name] = sorted((r["node"], r["id"]) for r in runs.get("runs", []))
            return s == 200 and set(want) <= set(listed[n.name])
        wait_for(lists_all, 10)
    check(all(set(want) <= set(v) for v in listed.values())
          and listed["n0"] == listed["n1"] == listed["n2"],
          "/api/runs asked of each node lists the same runs, all %d sessions' on 3 nodes among them"
          % len(want), {k: len(v) for k, v in listed.items()})
    s, runs, _ = req(origin, "GET", "/api/runs?scene=silo&limit=500")
    silos = sorted((node_of(r["id"]), r["run_id"]) for r in made if r["scene"] == "silo")
    check(s == 200 and sorted((r["node"], r["id"]) for r in runs["runs"]) == silos,
          "a filter (scene=silo) through the origin answers for the whole cluster",
          "%d of %d" % (len(runs.get("runs", [])), len(silos)))
    n2run = next(r for r in made if node_of(r["id"]) == "n2")
    s, one_run, _ = req(origin, "GET", "/api/runs/n2-%d" % n2run["run_id"])
    check(s == 200 and one_run.get("session_id") == n2run["id"],
          "a run named n2-ID through the origin is its node's", s)

    # ---- kill -9 one node: its viewers are told, the others carry on --------------------------
    victim = next(r for r in made if node_of(r["id"]) == "n1" and r["scene"] == "pour")
    survivor = next(r for r in made if node_of(r["id"]) == "n0")
    viewer = probe(origin, victim["id"], 30)
    time.sleep(2)
    _, before, _ = req(origin, "GET", "/api/sessions/" + survivor["id"])
    t_kill = time.time()
    by["n1"].kill()
    out, _ = viewer.communicate(timeout=60 * MULT)
    seen = json.loads(out or "{}")
    check(seen.get("frames", 0) > 0 and time.time() - t_kill < 10 * MULT
          and seen.get("close_status") not in (1000, 1001),
          "n1's viewer had frames and its stream was cut when n1 died",
          "frames %s, close %s, %.1f s after the kill" % (seen.get("frames"), seen.get("close_status"),
                                                         time.time() - t_kill))
    s, runs, _ = req(origin, "GET", "/api/runs?limit=500")
    n1runs = [r for r in runs.get("runs", []) if r["node"] == "n1"]
    check(s == 200 and len(n1runs) >= sum(1 for r in made if node_of(r["id"]) == "n1"),
          "with n1 dead, the runs it shipped stay listed by the others", "%d" % len(n1runs))
    s, r, _ = req(origin, "GET", "/api/sessions/" + victim["id"])
    check(s == 503 and r.get("error", {}).get("code") == "node_unavailable",
          "the page's next look at n1's session is told the node does not answer",
          "%d %s" % (s, json.dumps(r)[:200]))
    time.sleep(1.5)
    _, after, _ = req(origin, "GET", "/api/sessions/" + survivor["id"])
    check(after.get("t", 0) > before.get("t", 0),
          "n0's sessions carry on (t %.2f -> %.2f)" % (before.get("t", 0), after.get("t", 0)))
    time.sleep(3.5)  # n1's figure goes stale: placement stops sending there
    late = [follow_create(origin, "/api/sessions", {"scene": "pour", "params": {"quality": 0}})
            for _ in range(4)]
    check(all(s == 201 and node_of(r["id"]) in ("n0", "n2") for s, r, _ in late),
          "new sessions go to the nodes that answer",
          [(s, (r.get("id") or r.get("error", {}).get("code")) if isinstance(r, dict) else r, to)
           for s, r, to in late])
    s, runs, _ = req(origin, "GET", "/api/runs?limit=500")
    down = [r for r in runs.get("runs", []) if r["node"] == "n1" and r["end_reason"] is None]
    up = [r for r in runs.get("runs", []) if r["node"] != "n1" and r["end_reason"] is None]
    check(s == 200 and down and all(r.get("reachable") is False for r in down)
          and all(r.get("reachable", True) is True for r in up),
          "with n1 down, the cluster record marks its %d open runs unreachable, not running, "
          "and no other node's" % len(down),
          [(r["id"], r.get("reachable")) for r in down + up][:12])

    # ---- restart it: its runs left open are closed as interrupted -----------------------------
    # its pid file outlived it; say the pid now belongs to another program
    stranger = subprocess.Popen(["sleep", "300"])
    with open(os.path.join(ENV["CLUSTER_DIR"], "n1.pid"), "w") as f:
        f.write(str(stranger.pid))
    by["n1"].start()
    check(stranger.poll() is None, "cluster.sh node n1 leaves alone the other program its stale "
          "pid file names")
    stranger.kill()
    with open("/proc/%d/cmdline" % by["n1"].pid()) as f:
        argv = f.read().split("\0")
    check("--max-sessions-per-client" in argv
          and argv[argv.index("--max-sessions-per-client") + 1] == "10000",
          "restarted without NODE_FLAGS, n1 runs with the flags start gave it", " ".join(argv)[-160:])
    wait_for(lambda: req(origin, "GET", "/n/n1/readyz")[0] == 200, 20)
    mine = []

    def closed():
        # n1's listing is the cluster's: 503 until its shipper has reached PostgreSQL again
        s, runs, _ = req(by["n1"].port, "GET", "/api/runs?limit=500")
        mine[:] = [r for r in runs.get("runs", []) if r["session_id"] == victim["id"]] if s == 200 else []
        return mine and all(r["end_reason"] == "interrupted" for r in mine)
    check(wait_for(closed, 15), "restarted, n1 records the killed session's run as interrupted",
          [(r["id"], r["end_reason"]) for r in mine])
    s, r, _ = req(origin, "GET", "/api/sessions/" + victim["id"])
    check(s == 404, "its killed session is gone (404), not served from a dead worker", s)
    got = {}

    def shipped():
        s, runs, _ = req(by["n0"].port, "GET", "/api/runs?limit=500")
        got.update({r["id"]: r["end_reason"] for r in runs.get("runs", []) if r["node"] == "n1"})
        return got.get(victim["run_id"]) == "interrupted"
    check(wait_for(shipped, 15), "its interrupted runs reach the cluster record (asked of n0)",
          "n1's run %d: %s" % (victim["run_id"], got.get(victim["run_id"])))


if __name__ == "__main__":
    main()
