#!/usr/bin/env python3
"""A class out of the box (issue 31) against a real grainlabd: with no token configured it makes
a teacher token in its data directory, prints a /teach link carrying it that creates a class, and
keeps it across a restart; --teacher-link 0 and a configured token file turn that off; --classroom
binds every address, answers the machine's own addresses as Host names, and prints the address
students open, while settings given on the command line stand.

usage: test_classroom.py path/to/grainlabd path/to/web_client"""
import http.client
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import checks  # noqa: E402
from checks import check  # noqa: E402

EXE, CLIENT = sys.argv[1], sys.argv[2]
MULT = float(os.environ.get("GRAINLAB_TIMEOUT_MULTIPLIER", "1"))
TMP = tempfile.mkdtemp(prefix="grainlab-classroom-")
DATA = os.path.join(TMP, "data")


class Daemon:
    """grainlabd with its first lines of output: listening, teacher (perhaps), students."""

    def __init__(self, *flags):
        self.err = open(os.path.join(TMP, "err"), "a")
        self.proc = subprocess.Popen(
            [EXE, "--http-port", "0", "--ws-port", "0", "--data-dir", DATA, "--static-dir",
             CLIENT] + list(flags),
            stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.lines = []
        while not self.lines or not self.lines[-1].startswith("students:"):
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("grainlabd exited: " + " | ".join(self.lines))
            self.lines.append(line.strip())
        self.port = int(re.search(r"http=(\d+)", self.lines[0]).group(1))

    def line(self, what):
        return next((x for x in self.lines if x.startswith(what + ":")), None)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60 * MULT)


def make_class(port, token):
    body = {"name": "Physics 3B", "scenes": ["pour"], "max_groups": 2, "grain_budget": 20000,
            "ends_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))}
    status, reply, _ = checks.request(port, "POST", "/api/classes", body, token,
                                      timeout=60 * MULT)
    return status, reply


def get_as(port, host, path):
    """GET path with the Host header a browser on the network would send."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60 * MULT)
    conn.request("GET", path, headers={"Host": "%s:%d" % (host, port)})
    r = conn.getresponse()
    r.read()
    conn.close()
    return r.status


def main():
    # ---- first start: a token made, a link printed, and the link makes a class ----------------
    d = Daemon()
    link = d.line("teacher")
    m = re.fullmatch(r"teacher: http://127\.0\.0\.1:%d/teach#token=([0-9a-f]{32})" % d.port,
                     link or "")
    check(m is not None, "the first start prints a /teach link with a teacher token", d.lines)
    token = m.group(1) if m else ""
    path = os.path.join(DATA, "teacher.token")
    mode = stat.S_IMODE(os.stat(path).st_mode) if os.path.exists(path) else None
    check(mode == 0o600 and open(path).read().strip() == token,
          "the token is kept in DATA_DIR/teacher.token, readable by its owner only", oct(mode or 0))
    check(d.line("students") == "students: http://127.0.0.1:%d/join" % d.port,
          "the students' address is printed", d.line("students"))
    s, _, _ = checks.request(d.port, "GET", "/teach")
    check(s == 200, "the link's page is served", s)
    s, c = make_class(d.port, token)
    check(s == 201 and len(c.get("code", "")) == 6, "the link's token creates a class", s)
    s, _ = make_class(d.port, "0" * 32)
    check(s == 403, "another token does not", s)
    d.stop()

    # ---- a restart keeps the token ----------------------------------------------------------
    d = Daemon()
    check((d.line("teacher") or "").endswith("#token=" + token),
          "a restart prints a link with the same token", d.line("teacher"))
    s, _ = make_class(d.port, token)
    check(s == 201, "its token still creates classes", s)
    d.stop()

    # ---- turned off: by the flag, or by a configured token file -------------------------------
    d = Daemon("--teacher-link", "0")
    s, _ = make_class(d.port, token)
    check(d.line("teacher") is None and s == 403,
          "--teacher-link 0: no link printed, the kept token creates nothing",
          "%s %d" % (d.lines, s))
    d.stop()
    own = os.path.join(TMP, "own.token")
    with open(own, "w") as f:
        f.write("teacher-" + os.urandom(16).hex() + "\n")
    d = Daemon("--teacher-token-file", own)
    s, _ = make_class(d.port, token)
    check(d.line("teacher") is None and s == 403,
          "a teacher-token-file replaces the made token: no link, the kept token refused",
          "%s %d" % (d.lines, s))
    d.stop()

    # ---- classroom: every address, the machine's names answered, the students' address -------
    d = Daemon("--classroom", "1")
    students = re.fullmatch(r"students: http://([0-9.]+):%d/join" % d.port,
                            d.line("students") or "")
    check(students is not None, "--classroom prints the address students open", d.lines)
    lan = students.group(1) if students else "127.0.0.1"
    check(get_as(d.port, lan, "/join") == 200,
          "a browser on the network, naming %s, is answered" % lan)
    check(get_as(d.port, "evil.example", "/join") == 403, "a foreign Host name is still refused")
    if lan != "127.0.0.1":
        conn = http.client.HTTPConnection(lan, d.port, timeout=60 * MULT)
        conn.request("GET", "/healthz")
        check(conn.getresponse().status == 200, "it listens on %s, not only on loopback" % lan)
        conn.close()
    d.stop()
    d = Daemon("--classroom", "1", "--bind", "127.0.0.1", "--allowed-hosts", "localhost")
    check(d.line("students") == "students: http://127.0.0.1:%d/join" % d.port,
          "a bind given with --classroom stands", d.line("students"))
    check(get_as(d.port, "127.0.0.1", "/join") == 403,
          "allowed-hosts given with --classroom stands: 127.0.0.1 is no longer answered")
    d.stop()
    return checks.failed


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
