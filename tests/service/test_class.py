#!/usr/bin/env python3
"""Class mode's REST API (issue 17) against a real grainlabd: every bad input of a class's
creation and of a student's join, each refused with its code and nothing changed; the limits
(groups, scenes, grain budget, the lock); the teacher's pushes with their report; spotlight; the
class's runs (JSON and CSV); a private class; the end (by the teacher, and by itself at its end
time) closing every run as finished; a restart that keeps every class; and the groups' seeds,
shared (one settle for the class) or each group its own (issue 33).

usage: test_class.py path/to/grainlabd path/to/ws_probe"""
import csv
import io
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

EXE = sys.argv[1]
PROBE = sys.argv[2]
MULT = float(os.environ.get("GRAINLAB_TIMEOUT_MULTIPLIER", "1"))
TMP = tempfile.mkdtemp(prefix="grainlab-class-")
ADMIN = "admin-" + os.urandom(16).hex()
TEACHER = "teacher-" + os.urandom(16).hex()


class Daemon:
    def __init__(self, create_rate=100000, data="data", extra=()):
        for name, token in (("admin", ADMIN), ("teacher", TEACHER)):
            with open(os.path.join(TMP, name), "w") as f:
                f.write(token + "\n")
        self.err = open(os.path.join(TMP, "err"), "a")
        self.proc = subprocess.Popen(
            [EXE, "--http-port", "0", "--ws-port", "0", "--data-dir", os.path.join(TMP, data),
             "--admin-token-file", os.path.join(TMP, "admin"),
             "--teacher-token-file", os.path.join(TMP, "teacher"),
             "--max-sessions-per-client", "2", "--create-rate", str(create_rate),
             "--join-guess-rate", "100000", *extra],
            stdout=subprocess.PIPE, stderr=self.err, text=True)
        line = self.proc.stdout.readline()
        parts = dict(p.split("=") for p in line.split()[1:])
        self.port = int(parts["http"])
        self.wsport = int(parts["ws"])

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60 * MULT)


D = None


def req(method, path, body=None, token=None, raw=None, ctype="application/json"):
    status, answer, _ = checks.request(D.port, method, path, body, token, raw, ctype, 60 * MULT)
    return status, answer


def code_of(reply):
    return reply.get("error", {}).get("code") if isinstance(reply, dict) else None


def refused(what, status, code, method, path, body=None, token=None, **kw):
    s, r = req(method, path, body, token, **kw)
    return check(s == status and code_of(r) == code, what, "%d %s" % (s, json.dumps(r)[:300]))


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def class_body(**over):
    body = {"name": "Physics 3B", "scenes": ["silo", "pour"], "max_groups": 3,
            "grain_budget": 20000, "defaults": {"silo": {"quality": 0}, "pour": {"quality": 0}},
            "ends_at": iso(time.time() + 3600)}
    body.update(over)
    return {k: v for k, v in body.items() if v is not None}


def allowance():
    """Joins are creations (issue 32): counted against the class's allowance, not the joining
    address (a class sits behind one school address), and never faster than create-rate once the
    class's first max_groups are spent. A class is a creation of its teacher's address."""
    global D
    D = Daemon(create_rate=6, data="data-allowance")
    t0 = time.monotonic()
    s, cls = req("POST", "/api/classes", class_body(max_groups=4, scenes=["orbit"],
                                                    defaults={}), TEACHER)
    check(s == 201, "a class of 4 groups", s)
    joins = [req("POST", "/api/join", {"code": cls["code"], "group": "g%d" % i})
             for i in range(4)]
    check([j[0] for j in joins] == [201] * 4,
          "one address joins all 4 groups, past its max-sessions-per-client 2",
          [j[0] for j in joins])
    g0 = joins[0][1]
    s, _ = req("DELETE", "/api/sessions/" + g0["session"]["id"], token=g0["control_token"])
    check(s == 200, "the group's student deletes its session", s)
    status, r, headers = checks.request(D.port, "POST", "/api/join",
                                        {"code": cls["code"], "group": "g0"}, timeout=60 * MULT)
    retry = int(headers.get("Retry-After", "0"))
    check(status == 429 and code_of(r) == "class_create_rate_limited" and 1 <= retry <= 10,
          "joining again is a fifth creation of the class's 4: 429 with Retry-After <= 10 s "
          "(create-rate 6 a minute)", "%d %s Retry-After %s" % (status, json.dumps(r)[:200],
                                                                  headers.get("Retry-After")))
    s, r = req("GET", "/api/classes/" + cls["id"], token=cls["teacher_token"])
    check(s == 200 and r["groups"][0]["session"] is None, "the refused join made nothing",
          json.dumps(r["groups"][0])[:200])
    # the address's own allowance is whole: of create-rate 6, one class made so far
    s, r = req("POST", "/api/sessions", {"scene": "orbit"})
    check(s == 201, "the class's joins cost the joining address nothing", s)
    made = []
    while len(made) < 20 and (not made or made[-1] == 201):
        made.append(req("POST", "/api/classes", class_body(scenes=["orbit"], defaults={}),
                        TEACHER)[0])
    # 4 more classes, and one per 10 s the test took (the bucket refills as it runs)
    took = time.monotonic() - t0
    check(made[-1] == 429 and 4 <= made.count(201) <= 4 + int(took / 10) + 1,
          "classes count against the teacher address's create-rate 6: 1 class + 1 session + 4 "
          "classes, then 429 (%.1f s)" % took, made)
    time.sleep(retry + 0.5)
    s, r = req("POST", "/api/join", {"code": cls["code"], "group": "g0"})
    check(s == 201, "after its Retry-After the group joins again",
          "%d %s" % (s, json.dumps(r)[:200]))
    D.stop()


def metric(name):
    s, text = req("GET", "/metrics")
    return next(int(float(l.split()[1])) for l in text.splitlines() if l.startswith(name + " "))


def memory():
    """An ended class leaves memory after class-memory seconds (issue 32); the store answers for
    it after: its page, its code, and every change refused as ended."""
    global D
    D = Daemon(data="data-memory", extra=("--class-memory", "1"))
    s, cls = req("POST", "/api/classes", class_body(scenes=["orbit"], defaults={}), TEACHER)
    s, j = req("POST", "/api/join", {"code": cls["code"], "group": "g1"})
    time.sleep(1.1)
    s, j2 = req("POST", "/api/join", {"code": cls["code"], "group": "g2"})
    s, before = req("GET", "/api/classes/" + cls["id"], token=cls["teacher_token"])
    s, _ = req("POST", "/api/classes/%s/end" % cls["id"], {}, cls["teacher_token"])
    check(s == 200 and metric("grainlab_classes_in_memory") == 1, "a class ended: still in memory")
    deadline = time.time() + 20 * MULT
    while time.time() < deadline and metric("grainlab_classes_in_memory") != 0:
        time.sleep(0.2)
    check(metric("grainlab_classes_in_memory") == 0,
          "a second after its end (class-memory 1) it has left memory")
    s, after = req("GET", "/api/classes/" + cls["id"], token=cls["teacher_token"])
    same = {k: before[k] for k in ("id", "code", "name", "scenes", "max_groups", "created_at")}
    check(s == 200 and after["state"] == "ended" and after.get("ended_at")
          and {k: after.get(k) for k in same} == same
          and [(g["name"], g["joined_at"], g["session"]) for g in after["groups"]]
          == [(g["name"], g["joined_at"], None) for g in before["groups"]],
          "the store answers for it: the teacher's view, ended, groups and join times as they were",
          "%d %s" % (s, json.dumps(after)[:300]))
    s, anyone = req("GET", "/api/classes/" + cls["id"])
    check(s == 200 and "code" not in anyone and "teacher_hash" not in anyone,
          "anyone's view of it has no code", json.dumps(anyone)[:200])
    refused("a join with its code: 409 class_ended", 409, "class_ended", "POST", "/api/join",
            {"code": cls["code"], "group": "g3"})
    s, look = req("GET", "/api/join?code=" + cls["code"])
    check(s == 200 and look["state"] == "ended", "the join page's lookup says it ended", look)
    refused("a change: 409 class_ended", 409, "class_ended", "PATCH",
            "/api/classes/" + cls["id"], {"locked": True}, cls["teacher_token"])
    refused("ending it again: 409 class_ended", 409, "class_ended", "POST",
            "/api/classes/%s/end" % cls["id"], {}, cls["teacher_token"])
    D.stop()


def seeds():
    """Groups share the seed, so their grains settle once for the class (issue 33); a class may
    give each its own instead: group k in joining order runs with seed k, across a restart."""
    global D
    D = Daemon(data="data-seeds")

    def settled_metric(name):
        s, text = req("GET", "/metrics")
        for line in text.splitlines():
            if line.startswith("grainlab_settled_cache_%s " % name):
                return int(line.split()[1])
        return None

    body = class_body(scenes=["silo"], max_groups=4, defaults={"silo": {"quality": 0}})
    s, shared = req("POST", "/api/classes", body, TEACHER)
    check(s == 201 and shared["seeds"] == "shared", "a class's groups share the seed by default",
          shared.get("seeds"))
    s, own = req("POST", "/api/classes", dict(body, seeds="own"), TEACHER)
    check(s == 201 and own["seeds"] == "own", "a class may give each group its own seed",
          own.get("seeds"))
    joins = [req("POST", "/api/join", {"code": own["code"], "group": "o%d" % i})[1]
             for i in (1, 2, 3)]
    check([j["session"]["seed"] for j in joins] == [1, 2, 3],
          "seeds own: group k in joining order has seed k", [j["session"]["seed"] for j in joins])
    check(settled_metric("misses_total") == 3 and settled_metric("waits_total") == 0,
          "each of them settles its own grains (three misses, no wait)",
          (settled_metric("misses_total"), settled_metric("waits_total")))
    h = [req("POST", "/api/join", {"code": shared["code"], "group": "s%d" % i})[1]
         for i in (1, 2)]
    check([j["session"]["seed"] for j in h] == [1, 1] and
          settled_metric("waits_total") + settled_metric("hits_total") >= 1,
          "seeds shared: the same seed, and the second group does not settle again",
          ([j["session"]["seed"] for j in h], settled_metric("waits_total"), settled_metric("hits_total")))
    req("DELETE", "/api/sessions/" + joins[0]["session"]["id"],
        token=joins[0]["control_token"])
    D.stop()
    D = Daemon(data="data-seeds")
    s, again = req("GET", "/api/classes/" + own["id"], token=own["teacher_token"])
    check(s == 200 and again["seeds"] == "own", "a restart keeps seeds own", again.get("seeds"))
    later = [req("POST", "/api/join", {"code": own["code"], "group": g})[1] for g in ("o4", "O1")]
    check([j["session"]["seed"] for j in later] == [4, 1],
          "after it a new group gets the next seed, and a group joining again its own",
          [j["session"]["seed"] for j in later])
    D.stop()


def main():
    global D
    D = Daemon()
    # ---- creating a class: who may, and every bad input ------------------------------------
    refused("no token: 401", 401, "unauthorized", "POST", "/api/classes", class_body())
    refused("a session's create token is not a teacher's: 403", 403, "forbidden", "POST",
            "/api/classes", class_body(), token="not-the-teacher-token")
    bad = [
        ("no name", dict(name=None), 400, "missing_field"),
        ("an empty name", dict(name=""), 400, "bad_name"),
        ("a name of 81 characters", dict(name="é" * 81), 400, "bad_name"),
        ("a name with a control character", dict(name="a\tb"), 400, "bad_name"),
        ("no scenes", dict(scenes=[]), 400, "wrong_type"),
        ("an unknown scene", dict(scenes=["silo", "volcano"]), 400, "unknown_scene"),
        ("a scene twice", dict(scenes=["silo", "silo"]), 400, "duplicate_scene"),
        ("max_groups 0", dict(max_groups=0), 422, "out_of_range"),
        ("max_groups 201", dict(max_groups=201), 422, "out_of_range"),
        ("max_groups 2.5", dict(max_groups=2.5), 400, "wrong_type"),
        ("grain_budget 0", dict(grain_budget=0), 422, "out_of_range"),
        ("grain_budget over max-grains", dict(grain_budget=20001), 422, "out_of_range"),
        ("a budget under a scene's grains", dict(grain_budget=10), 422, "over_grain_budget"),
        ("ends_at in the past", dict(ends_at=iso(time.time() - 60)), 422, "out_of_range"),
        ("ends_at 8 days ahead", dict(ends_at=iso(time.time() + 8 * 86400)), 422,
         "out_of_range"),
        ("ends_at not a time", dict(ends_at="tomorrow"), 400, "bad_time"),
        ("ends_at a number", dict(ends_at=time.time() + 60), 400, "bad_time"),
        ("defaults for a scene the class does not use", dict(defaults={"slump": {"mu": 0.3}}),
         422, "scene_not_allowed"),
        ("defaults with an unknown parameter", dict(defaults={"silo": {"bogus": 1}}), 400,
         "unknown_parameter"),
        ("defaults out of range", dict(defaults={"silo": {"mu": 9}}), 422, "out_of_range"),
        ("second_join neither viewer nor controller", dict(second_join="teacher"), 400,
         "wrong_type"),
        ("private not a boolean", dict(private="yes"), 400, "wrong_type"),
        ("seeds neither shared nor own", dict(seeds="mine"), 400, "wrong_type"),
        ("seeds not a string", dict(seeds=2), 400, "wrong_type"),
    ]
    for what, over, status, code in bad:
        refused("create refused, " + what, status, code, "POST", "/api/classes",
                class_body(**over), TEACHER)
    b = class_body()
    b["extra"] = 1
    refused("create refused, an unknown field", 400, "unknown_field", "POST", "/api/classes", b,
            TEACHER)
    refused("create refused, not JSON", 415, "unsupported_media_type", "POST", "/api/classes",
            raw="name=x", token=TEACHER, ctype="application/x-www-form-urlencoded")
    # the refusals made nothing: the record has no class and no run
    s, runs = req("GET", "/api/runs", token=ADMIN)
    check(s == 200 and runs["total"] == 0, "nothing was created by the refusals", runs["total"])

    s, cls = req("POST", "/api/classes", class_body(), TEACHER)
    check(s == 201 and len(cls.get("teacher_token", "")) == 64 and len(cls.get("code", "")) == 6
          and cls["state"] == "open" and cls["groups"] == [],
          "the teacher-creation token creates a class: token and code", json.dumps(cls)[:200])
    cid, code, tt = cls["id"], cls["code"], cls["teacher_token"]
    s, other = req("POST", "/api/classes", class_body(name="Admin's", max_groups=1), ADMIN)
    check(s == 201, "the admin token creates one too")

    # ---- joining: every bad input --------------------------------------------------------
    join_bad = [
        ("a wrong code", {"code": "ZZZZZZ", "group": "g"}, 404, "no_class"),
        ("a code of another length", {"code": code + "X", "group": "g"}, 404, "no_class"),
        ("no code", {"group": "g"}, 400, "missing_field"),
        ("an empty group name", {"code": code, "group": ""}, 400, "bad_group"),
        ("a group name of 41 characters", {"code": code, "group": "x" * 41}, 400, "bad_group"),
        ("a group name of only spaces", {"code": code, "group": " \u3000 "}, 400,
         "bad_group"),
        ("a group name with a newline", {"code": code, "group": "a\nb"}, 400, "bad_group"),
        ("a group name that is a number", {"code": code, "group": 7}, 400, "wrong_type"),
        ("a scene the class does not allow", {"code": code, "group": "g", "scene": "slump"},
         409, "scene_not_allowed"),
        ("an unknown scene", {"code": code, "group": "g", "scene": "volcano"}, 400,
         "unknown_scene"),
        ("an unknown field", {"code": code, "group": "g", "role": "teacher"}, 400,
         "unknown_field"),
    ]
    for what, body, status, code_word in join_bad:
        refused("join refused, " + what, status, code_word, "POST", "/api/join", body)
    s, view = req("GET", "/api/classes/" + cid)
    check(s == 200 and view["groups"] == [], "the refused joins made no group")

    # what /join shows once a code is typed: the class's name and scenes, nothing else
    s, look = req("GET", "/api/join?code=" + code)
    check(s == 200 and look == {"name": "Physics 3B", "scenes": ["silo", "pour"],
                                "state": "open"},
          "a code looks up the class's name and scenes, for /join", look)
    refused("a lookup with a wrong code: 404", 404, "no_class", "GET", "/api/join?code=ZZZZZZ")
    refused("a lookup without a code: 400", 400, "missing_field", "GET", "/api/join")

    s, j1 = req("POST", "/api/join", {"code": code, "group": "team 1"})
    check(s == 201 and j1["role"] == "controller" and len(j1.get("control_token", "")) == 64
          and j1["session"]["scene"] == "silo" and j1["session"]["params"]["quality"] == 0,
          "the first student of a group gets a new session (the class's first scene, its "
          "defaults) and its control token", json.dumps(j1)[:300])
    s, j1b = req("POST", "/api/join", {"code": code, "group": "  TEAM 1\u3000"})
    check(s == 200 and j1b["role"] == "viewer" and "control_token" not in j1b
          and j1b["session"]["id"] == j1["session"]["id"] and j1b["group"] == "team 1",
          "a second student of the group joins its session as a viewer (second_join viewer); "
          "the name matches in any case, spaces around it ignored, and keeps its first spelling",
          json.dumps({k: j1b.get(k) for k in ("role", "group")}))
    s, sv = req("GET", "/api/sessions/" + j1["session"]["id"])
    check(s == 200 and sv.get("class", {}).get("id") == cid
          and sv["class"].get("group") == "team 1" and sv["class"].get("locked") is False,
          "a group's session names its class and group, for the student's page", sv.get("class"))
    s, _ = req("PATCH", "/api/classes/" + cid, {"second_join": "controller"}, tt)
    s, j1c = req("POST", "/api/join", {"code": code, "group": "team 1"})
    check(s == 200 and j1c["role"] == "controller"
          and j1c.get("control_token") == j1["control_token"],
          "after the teacher chooses controller, the next one controls it")
    s, j2 = req("POST", "/api/join", {"code": code, "group": "team 2", "scene": "pour"})
    check(s == 201 and j2["session"]["scene"] == "pour", "a group may start with another "
          "allowed scene")
    s, j3 = req("POST", "/api/join", {"code": code, "group": "team 3"})
    check(s == 201, "a third group joins")
    refused("a fourth group is over max_groups: 409", 409, "class_full", "POST", "/api/join",
            {"code": code, "group": "team 4"})
    # more groups than max-sessions-per-client from one address: classes are not held to it
    check(j3["session"]["id"] != j2["session"]["id"], "three sessions from one address (the "
          "per-client limit is 2 here): a school's one address does not stop a class")

    s, metrics = req("GET", "/metrics")
    check("grainlab_classes_open 2\n" in metrics and "grainlab_class_groups 3\n" in metrics,
          "/metrics counts the open classes and their groups",
          [l for l in metrics.splitlines() if l.startswith("grainlab_class")])
    # ---- views ---------------------------------------------------------------------------
    s, pub = req("GET", "/api/classes/" + cid)
    check(s == 200 and [g["name"] for g in pub["groups"]] == ["team 1", "team 2", "team 3"]
          and all("control_token" not in g for g in pub["groups"])
          and "teacher_token" not in pub and "teacher_hash" not in pub and "code" not in pub,
          "anyone sees the public class without tokens or its join code")
    s, mv = req("GET", "/api/classes/" + cid, token=j1["control_token"])
    check(s == 200 and "code" not in mv and "code" not in j1["class"],
          "a student's view of the class, and the join's reply, leave out the join code")
    s, tv = req("GET", "/api/classes/" + cid, token=tt)
    check(s == 200 and tv["code"] == code and tv["groups"][0]["control_token"] == j1["control_token"]
          and tv["groups"][0]["session"]["id"] == j1["session"]["id"],
          "the teacher's view has every group's session and control token")
    refused("an unknown class: 404", 404, "no_class", "GET", "/api/classes/0123456789abcdef")
    refused("PATCH without a token: 401", 401, "unauthorized", "PATCH", "/api/classes/" + cid,
            {"locked": True})
    refused("PATCH with a student's token: 403", 403, "forbidden", "PATCH",
            "/api/classes/" + cid, {"locked": True}, j1["control_token"])
    refused("PATCH with another class's teacher token: 403", 403, "forbidden", "PATCH",
            "/api/classes/" + cid, {"locked": True}, other["teacher_token"])
    refused("PATCH of nothing: 400", 400, "missing_field", "PATCH", "/api/classes/" + cid, {}, tt)
    refused("PATCH locked not a boolean: 400", 400, "wrong_type", "PATCH", "/api/classes/" + cid,
            {"locked": "yes"}, tt)

    # ---- lock, push, spotlight -----------------------------------------------------------
    # a push waits for nobody: a group still settling refuses it (409 settling, test_daemon)
    for j in (j1, j2, j3):
        check(checks.wait_settled(D.port, j["session"]["id"], seconds=120 * MULT) is not None,
              "%s's grains have settled" % j["session"]["scene"])
    sess1 = "/api/sessions/" + j1["session"]["id"]
    s, _ = req("PATCH", "/api/classes/" + cid, {"locked": True}, tt)
    check(s == 200, "the teacher locks the controls")
    refused("a student's parameter change while locked: 409", 409, "locked", "PATCH",
            sess1 + "/params", {"mu": 0.3}, j1["control_token"])
    refused("a student's action while locked: 409", 409, "locked", "POST", sess1 + "/actions",
            {"type": "pause"}, j1["control_token"])
    probe = subprocess.run(
        [PROBE, "--port", str(D.wsport), "--session", j1["session"]["id"], "--seconds", "2",
         "--send", json.dumps({"type": "auth", "token": j1["control_token"]}),
         "--send", json.dumps({"type": "action", "action": {"type": "open_hole"}})],
        capture_output=True, text=True, timeout=60 * MULT)
    seen = json.loads(probe.stdout or "{}")
    check("locked" in seen.get("errors", []), "a student's websocket action while locked is "
          "refused (error locked)", seen.get("errors"))
    s, rep = req("POST", "/api/classes/%s/push" % cid, {"params": {"mu": 0.8}}, tt)
    check(s == 200 and sorted(rep["applied"]) == ["team 1", "team 2", "team 3"]
          and rep["refused"] == [], "the teacher's push applies to every group while locked",
          json.dumps(rep))
    s, one = req("GET", sess1)
    check(one["params"]["mu"] == 0.8, "the pushed mu is in a group's session")
    s, rep = req("POST", "/api/classes/%s/push" % cid, {"params": {"mu": 0.6, "hole": 0.5}}, tt)
    by = {r["group"]: r for r in rep.get("refused", [])}
    check(s == 200 and sorted(rep["applied"]) == ["team 1", "team 3"]
          and by.get("team 2", {}).get("code") == "unknown_parameter",
          "a push is all-or-nothing per group: the pour group refuses the silo's hole",
          json.dumps(rep))
    s, two = req("GET", "/api/sessions/" + j2["session"]["id"])
    check(two["params"]["mu"] == 0.8, "the refusing group kept its mu (nothing applied there)")
    s, rep = req("POST", "/api/classes/%s/push" % cid,
                 {"action": {"type": "pause"}, "groups": ["team 1", "nobody"]}, tt)
    by = {r["group"]: r for r in rep.get("refused", [])}
    check(s == 200 and rep["applied"] == ["team 1"] and by["nobody"]["code"] == "unknown_group",
          "a push to named groups reports an unknown one", json.dumps(rep))
    s, one = req("GET", sess1)
    check(one["state"] == "paused", "pause pushed to a group pauses it")
    s, rep = req("POST", "/api/classes/%s/push" % cid, {"action": {"type": "resume"}}, tt)
    check(s == 200 and rep["refused"] == [] and len(rep["applied"]) == 3, "resume all")
    refused("push of params and an action at once: 400", 400, "missing_field", "POST",
            "/api/classes/%s/push" % cid, {"params": {"mu": 1}, "action": {"type": "pause"}}, tt)
    refused("push of an unknown action: 400", 400, "unknown_action", "POST",
            "/api/classes/%s/push" % cid, {"action": {"type": "explode"}}, tt)
    refused("push without the teacher token: 401", 401, "unauthorized", "POST",
            "/api/classes/%s/push" % cid, {"action": {"type": "pause"}})
    s, _ = req("PATCH", "/api/classes/" + cid, {"locked": False}, tt)
    s, r = req("PATCH", sess1 + "/params", {"mu": 0.4}, j1["control_token"])
    check(s == 200, "unlocked, the student changes a parameter again")
    refused("a switch to a scene the class does not allow: 409", 409, "scene_not_allowed",
            "POST", sess1 + "/scene", {"scene": "slump"}, j1["control_token"])
    refused("spotlight on an unknown group: 422", 422, "unknown_group", "PATCH",
            "/api/classes/" + cid, {"spotlight": "team 9"}, tt)
    s, sp = req("PATCH", "/api/classes/" + cid, {"spotlight": "team 2"}, tt)
    check(s == 200 and sp["spotlight"] == {"group": "team 2", "session": j2["session"]["id"]},
          "the teacher spotlights a group", sp.get("spotlight"))
    s, pub = req("GET", "/api/classes/" + cid)
    check(pub["spotlight"]["group"] == "team 2", "students see the spotlight")

    # ---- the dashboard's one stream of every group (schema/stream.md) -----------------------
    def class_probe(path, *send, seconds=3):
        args = [PROBE, "--port", str(D.wsport), "--path", path, "--seconds", str(seconds)]
        for m in send:
            args += ["--send", json.dumps(m)]
        p = subprocess.run(args, capture_output=True, text=True, timeout=60 * MULT)
        return json.loads(p.stdout or "{}")
    cpath = "/ws/classes/" + cid
    live = sorted(j["session"]["id"] for j in (j1, j2, j3))
    seen = class_probe(cpath, {"type": "auth", "token": tt}, {"type": "rate", "fps": 4},
                       seconds=4)
    tagged = seen.get("tagged", {})
    # (the probe may stop between the last tag and its frame)
    check(seen.get("role") == "teacher" and sorted(tagged) == live and seen.get("untagged") == 0
          and 0 <= sum(tagged.values()) - seen.get("frames", -9) <= 1,
          "one class stream carries every group's frames, each right after a tag naming its "
          "session", {k: seen.get(k) for k in ("role", "tagged", "untagged", "frames")})
    # 4 s at 4 a second, and a keyframe that a frame refers to goes with it (not counted)
    check(all(1 <= n <= 4 * 4 * 2 + 2 for n in tagged.values()),
          "each group's frames on it keep to the rate asked (4 a second)", tagged)
    seen = class_probe(cpath, {"type": "auth", "token": j1["control_token"]})
    check("bad_token" in seen.get("errors", []) and seen.get("frames") == 0
          and not seen.get("tagged"), "a student's token does not open the class stream",
          seen.get("errors"))
    seen = class_probe(cpath, {"type": "action", "action": {"type": "pause"}})
    check("unauthenticated" in seen.get("errors", []) and seen.get("frames") == 0,
          "nothing on the class stream before the teacher's token", seen.get("errors"))
    seen = class_probe("/ws/classes/0123456789abcdef", {"type": "auth", "token": tt})
    check(seen.get("connected") == 0, "no stream of a class that does not exist (handshake "
          "refused)", seen.get("close_reason"))

    # ---- the class's runs ------------------------------------------------------------------
    s, runs = req("GET", "/api/runs?class=" + cid)
    groups = sorted(r["group"] for r in runs.get("runs", []))
    check(s == 200 and runs["total"] == 3 and groups == ["team 1", "team 2", "team 3"]
          and all(r["class"] == cid for r in runs["runs"]),
          "/api/runs?class= lists the class's runs with their groups", groups)
    s, text = req("GET", "/api/runs?class=%s&format=csv" % cid)
    rows = list(csv.reader(io.StringIO(text))) if isinstance(text, str) else []
    stretches = sum(len(r["segments"]) for r in runs.get("runs", []))
    check(s == 200 and rows and rows[0][:3] == ["run", "class", "group"] and "param.mu" in rows[0]
          and len(rows) == 1 + stretches and stretches > 3,
          "the class's CSV: a header and a row per stretch of constant parameters of each run "
          "(the pushes made %d)" % stretches, rows[0] if rows else text)
    # the pushed mu is in the rows after the push, the class default before it
    col = rows[0].index("param.mu") if rows else 0
    team1 = [r for r in rows[1:] if r[2] == "team 1"]
    check([r[col] for r in team1][:3] == ["0.5", "0.8", "0.6"],
          "team 1's rows give the mu in force in each stretch: its default, then the pushes",
          [r[col] for r in team1])
    started = [r for r in rows[1:] if r[rows[0].index("started_at")]] if rows else []
    check(started and all(r[rows[0].index("started_at")].endswith("Z")
                          and "T" in r[rows[0].index("started_at")] for r in started)
          and all(len(r[col]) <= 6 for r in rows[1:]),
          "the CSV's times are ISO 8601 and its numbers are as set, not 0.90000000000000002",
          [(r[rows[0].index("started_at")], r[col]) for r in rows[1:3]])
    refused("a bad format: 400", 400, "bad_format", "GET", "/api/runs?class=%s&format=xml" % cid)
    # a restart-only parameter pushed to a group starts its experiment over with it, and the
    # teacher's report names the group only (no API path)
    s, before = req("GET", sess1)
    s, rep = req("POST", "/api/classes/%s/push" % cid, {"params": {"amount": 90},
                                                        "groups": ["team 1"]}, tt)
    s2, after = req("GET", sess1)
    check(s == 200 and rep == {"applied": ["team 1"], "refused": []}
          and after["params"]["amount"] == 90 and after["run_id"] != before["run_id"],
          "a pushed restart parameter (amount) starts the group's experiment over with it",
          json.dumps(rep))
    s, none = req("GET", "/api/runs?class=" + other["id"])
    check(s == 200 and none["total"] == 0, "another class has no runs")

    # ---- a private class -------------------------------------------------------------------
    s, priv = req("POST", "/api/classes", class_body(name="Private", private=True), TEACHER)
    pid, pt = priv["id"], priv["teacher_token"]
    s, pj = req("POST", "/api/join", {"code": priv["code"], "group": "p1"})
    check(s == 201 and len(pj.get("viewer_token", "")) == 64 and pj["session"]["private"],
          "a private class's group gets a private session and its viewer token")
    refused("a private class hides from anyone: 403", 403, "private", "GET", "/api/classes/" + pid)
    s, _ = req("GET", "/api/classes/" + pid, token=pj["viewer_token"])
    check(s == 200, "a member's token shows the private class")
    refused("a private class's runs need the teacher token: 404", 404, "not_found", "GET",
            "/api/runs?class=" + pid)
    refused("a member's token is not the teacher's for the runs list: 404", 404, "not_found",
            "GET", "/api/runs?class=" + pid, token="0" * 64)
    s, pr = req("GET", "/api/runs?class=" + pid, token=pt)
    check(s == 200 and pr["total"] == 1, "the teacher token lists the private class's runs")
    s, _ = req("GET", "/api/runs/%d" % pr["runs"][0]["id"], token=pt)
    check(s == 200, "and reads each of them")

    # ---- the end -----------------------------------------------------------------------------
    s, ended = req("POST", "/api/classes/%s/end" % cid, token=tt)
    check(s == 200 and ended["state"] == "ended" and ended["ended_at"]
          and all(g["session"] is None for g in ended["groups"]),
          "the teacher ends the class: every group's session ends", json.dumps(ended)[:300])
    s, one = req("GET", sess1)
    check(s == 404 or one.get("state") == "ended", "a group's session has ended",
          one.get("state") if isinstance(one, dict) else s)
    s, runs = req("GET", "/api/runs?class=" + cid)
    reasons = sorted(r["end_reason"] or "open" for r in runs["runs"])
    check(reasons == ["finished"] * 3 + ["switched"],
          "every run of the class closed as finished (and the one the push of amount restarted "
          "as switched)", reasons)
    refused("a join after the end: 409", 409, "class_ended", "POST", "/api/join",
            {"code": code, "group": "late"})
    refused("a push after the end: 409", 409, "class_ended", "POST",
            "/api/classes/%s/push" % cid, {"action": {"type": "pause"}}, tt)
    refused("a second end: 409", 409, "class_ended", "POST", "/api/classes/%s/end" % cid,
            token=tt)
    refused("a PATCH after the end: 409", 409, "class_ended", "PATCH", "/api/classes/" + cid,
            {"locked": True}, tt)

    # ---- the end time ------------------------------------------------------------------------
    s, soon = req("POST", "/api/classes", class_body(name="Short", ends_at=iso(time.time() + 4)),
                  TEACHER)
    s, sj = req("POST", "/api/join", {"code": soon["code"], "group": "quick"})
    check(s == 201, "a student joins a class that ends in 4 s")
    deadline = time.time() + 30 * MULT
    state = None
    while time.time() < deadline:
        s, v = req("GET", "/api/classes/" + soon["id"])
        state = v.get("state")
        if state == "ended":
            break
        time.sleep(0.5)
    check(state == "ended", "the class ended by itself at its end time")
    s, sr = req("GET", "/api/runs?class=" + soon["id"])
    check([r["end_reason"] for r in sr["runs"]] == ["finished"],
          "its run closed as finished", [r["end_reason"] for r in sr["runs"]])

    # ---- a restart keeps every class -----------------------------------------------------
    # a group that joins a second after its class began: its joined_at is its own
    time.sleep(1.1)
    s, _ = req("POST", "/api/join", {"code": priv["code"], "group": "p2"})
    s, before = req("GET", "/api/classes/" + pid, token=pt)
    D.stop()
    D = Daemon()
    s, after = req("GET", "/api/classes/" + pid, token=pt)
    joined = {g["name"]: g["joined_at"] for g in before["groups"]}
    check(s == 200 and {g["name"]: g["joined_at"] for g in after["groups"]} == joined
          and joined["p2"] != before["created_at"],
          "a restart keeps each group's joined_at", "%s, after: %s (class %s)" % (
              joined, [(g["name"], g["joined_at"]) for g in after.get("groups", [])],
              before["created_at"]))
    s, again = req("GET", "/api/classes/" + cid, token=tt)
    check(s == 200 and again["state"] == "ended" and again["code"] == code
          and [g["name"] for g in again["groups"]] == ["team 1", "team 2", "team 3"]
          and again["second_join"] == "controller",
          "after a restart the ended class is there with its groups and settings")
    s, runs = req("GET", "/api/runs?class=" + cid)
    check(s == 200 and runs["total"] == 4, "and its results stay queryable")
    s, v = req("GET", "/api/classes/" + pid, token=pt)
    check(s == 200 and v["state"] == "open" and v["groups"][0]["session"] is None,
          "an open class survives the restart; its group's session did not")
    s, back = req("POST", "/api/join", {"code": priv["code"], "group": "p1"})
    check(s == 201 and back["session"]["id"] != pj["session"]["id"],
          "the group rejoins with a new session")
    s, pr = req("GET", "/api/runs?class=" + pid, token=pt)
    p1 = [r for r in pr["runs"] if r["group"] == "p1"]
    check(len(p1) == 2 and sorted(r["end_reason"] or "open" for r in p1)
          == ["open", "stopped"], "the old run closed as stopped, the new one runs",
          [r["end_reason"] for r in p1])
    D.stop()
    allowance()
    memory()
    seeds()
    print("%d passed, %d failed" % (checks.passed, checks.failed))
    if checks.failed:
        print("---- the daemon's stderr (last 40 lines) ----")
        print("".join(open(os.path.join(TMP, "err")).readlines()[-40:]))
    sys.exit(1 if checks.failed else 0)


try:
    main()
except Exception:
    print("---- the daemon's stderr (last 60 lines) ----")
    print("".join(open(os.path.join(TMP, "err")).readlines()[-60:]))
    raise
finally:
    if D and D.proc.poll() is None:
        D.proc.kill()
    subprocess.run(["rm", "-rf", TMP])
