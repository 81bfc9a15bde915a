"""What the Python service tests share: one line per check, measured against expected, the count
of passes and failures for the exit status, and one HTTP request on loopback."""

import http.client
import json
import time

passed = 0
failed = 0


def check(cond, what, detail=""):
    """Prints "ok" or "FAIL", the check and what was seen; returns cond."""
    global passed, failed
    if cond:
        passed += 1
        print("ok   " + what + (": " + str(detail) if detail != "" else ""))
    else:
        failed += 1
        print("FAIL " + what + (": " + str(detail)[:600] if detail != "" else ""))
    return cond


def request(port, method, path, body=None, token=None, raw=None, ctype="application/json",
            timeout=60):
    """One request to 127.0.0.1:port, body as JSON (or raw bytes/text as ctype), the token as a
    Bearer; returns (status, JSON or text, headers)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {}
    data = raw if raw is not None else (json.dumps(body) if body is not None else None)
    if data is not None:
        headers["Content-Type"] = ctype
    if token:
        headers["Authorization"] = "Bearer " + token
    conn.request(method, path, body=data, headers=headers)
    r = conn.getresponse()
    text = r.read().decode()
    conn.close()
    try:
        return r.status, json.loads(text), dict(r.getheaders())
    except ValueError:
        return r.status, text, dict(r.getheaders())


def wait_settled(port, session_id, token=None, seconds=120):
    """Waits (at most `seconds` of wall time) until the session's grains have settled: no
    experiment may start before (409 settling). Returns the session, or None on time out."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        status, s, _ = request(port, "GET", "/api/sessions/" + session_id, token=token)
        if status == 200 and s.get("settling_left", 0) == 0:
            return s
        time.sleep(0.1)
    return None
