#!/usr/bin/env bash
# A class's start (issue 33): a real grainlabd on this machine, one class, G groups joining it
# within W seconds (evenly spaced, each join on its own thread), and for each group the time from
# sending its join to its session being interactive; and the CPU the start cost.
#
#   bench/class_join.sh [MODE ...]     (default: off cold warm)
#
# Modes: off   --settled-cache-mb 0: every group settles its own grains (the code before issue 33)
#        cold  the cache on, empty: the first group settles, the others wait for it or restore
#        warm  the cache on, holding the class's settled state (a class before it on this node)
#
# Interactive: the session accepts an experiment's action, that is its settling_left is 0 (the
# engine refuses every action but reset while its grains settle, 409 settling). Seen in the join's
# own reply, or else in the teacher's class view, polled every POLL seconds (one request for every
# group's session): the figure is the wall time from sending the join to the reply or poll that
# first shows it, so it is late by at most POLL.
# CPU: the daemon's and its workers' user + system time (/proc: the daemon's own, its live
# workers', and the reaped ones' in its cutime/cstime), from before the first join to the moment
# the last group is interactive, and over the first SPAN seconds.
#
# Environment:
#   GRAINLABD  the daemon (default: <repo>/build/grainlabd)
#   SCENE      the class's scene (default silo); PARAMS its defaults as JSON (default {})
#   CLASS_GROUPS  groups (default 30); WITHIN  seconds the joins are spread over (default 10)
#   POLL       seconds between looks at the class (default 0.1); SPAN  seconds of CPU (default 30)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
daemon="${GRAINLABD:-$repo/build/grainlabd}"
[[ -x "$daemon" ]] || { echo "error: no grainlabd at '$daemon' (build it, or set GRAINLABD=...)" >&2; exit 1; }
scene="${SCENE:-silo}"
params="${PARAMS:-{\}}"
groups="${CLASS_GROUPS:-30}"
within="${WITHIN:-10}"
poll="${POLL:-0.1}"
span="${SPAN:-30}"
[[ "$groups" =~ ^[1-9][0-9]*$ && "$groups" -le 200 ]] || { echo "error: CLASS_GROUPS='$groups' is not a whole number in 1..200" >&2; exit 2; }
modes=("$@")
[[ ${#modes[@]} -gt 0 ]] || modes=(off cold warm)
for m in "${modes[@]}"; do
  [[ "$m" == off || "$m" == cold || "$m" == warm ]] || { echo "error: mode '$m' is not off, cold or warm" >&2; exit 2; }
done

tmp=$(mktemp -d)
dpid=
cleanup() {
  [[ -n "$dpid" ]] && { kill -TERM "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null || true; }
  rm -rf "$tmp"
}
trap cleanup EXIT
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/teacher"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'); $groups groups of $scene $params joining within $within s"
rows=()
for mode in "${modes[@]}"; do
  [[ "$mode" == warm ]] || rm -rf "$tmp/data" # warm keeps the cold run's kept state
  flags=()
  [[ "$mode" == off ]] && flags=(--settled-cache-mb 0)
  "$daemon" --http-port 0 --ws-port 0 --data-dir "$tmp/data" --max-sessions $((groups + 2)) \
    --teacher-token-file "$tmp/teacher" --create-rate 100000 "${flags[@]}" >"$tmp/out" 2>"$tmp/err" &
  dpid=$!
  for _ in $(seq 200); do grep -q '^listening' "$tmp/out" && break; sleep 0.05; done
  port=$(sed -n 's/^listening http=\([0-9]*\).*/\1/p' "$tmp/out")
  [[ -n "$port" ]] || { echo "error: grainlabd did not start:" >&2; cat "$tmp/err" >&2; exit 1; }
  echo "$mode ..." >&2
  row=$(python3 - "$port" "$dpid" "$tmp/teacher" "$scene" "$params" "$groups" "$within" "$poll" \
    "$span" <<'EOF'
import json, os, sys, threading, time, urllib.request

port, dpid, teacher_file, scene = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
params, groups, within = json.loads(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
poll, span = float(sys.argv[8]), float(sys.argv[9])
base = "http://127.0.0.1:%s" % port
teacher = open(teacher_file).read().strip()
tick = os.sysconf("SC_CLK_TCK")

def call(method, path, body=None, token=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)

def stat(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return f

def cpu():
    """The daemon's user + system time, its reaped children's, and its live workers'."""
    f = stat(dpid)
    total = sum(int(x) for x in f[11:15])
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                g = stat(int(p))
            except OSError:
                continue
            if int(g[1]) == dpid:
                total += int(g[11]) + int(g[12])
    return total / tick

cls = call("POST", "/api/classes", {
    "name": "bench", "scenes": [scene], "max_groups": groups, "grain_budget": 20000,
    "defaults": {scene: params} if params else {},
    "ends_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))}, teacher)
sent, ready, sid = {}, {}, {}
lock = threading.Lock()

def join(i, at):
    time.sleep(max(0.0, at - time.time()))
    t = time.time()
    r = call("POST", "/api/join", {"code": cls["code"], "group": "g%02d" % i})
    now = time.time()
    with lock:
        sent[i] = t
        sid[r["session"]["id"]] = i
        if r["session"]["settling_left"] == 0:
            ready[i] = now

c0 = cpu()
t0 = time.time()
threads = [threading.Thread(target=join, args=(i, t0 + within * i / groups)) for i in range(groups)]
for th in threads:
    th.start()
c_ready = None
while True:
    v = call("GET", "/api/classes/" + cls["id"], token=teacher)
    now = time.time()
    with lock:
        for g in v["groups"]:
            s = g.get("session")
            if s and s["id"] in sid and sid[s["id"]] not in ready and s["settling_left"] == 0:
                ready[sid[s["id"]]] = now
        done = len(ready) == groups
    if done and c_ready is None:
        c_ready, t_ready = cpu(), now
    if c_ready is not None and now - t0 >= span:
        break
    if now - t0 > 600:
        sys.exit("not every group was interactive within 600 s")
    time.sleep(poll)
c_span = cpu()
for th in threads:
    th.join()
waits = sorted(ready[i] - sent[i] for i in range(groups))
p50 = waits[len(waits) // 2] if len(waits) % 2 else (waits[len(waits) // 2 - 1] + waits[len(waits) // 2]) / 2
metrics = {}
with urllib.request.urlopen(base + "/metrics", timeout=60) as r:
    for line in r.read().decode().splitlines():
        if line.startswith("grainlab_settled_cache_") and line.split()[0].endswith("_total"):
            metrics[line.split()[0][len("grainlab_settled_cache_"):-len("_total")]] = int(float(line.split()[1]))
print("%.2f %.2f %.2f %.1f %.1f %.1f %s" % (waits[0], p50, waits[-1], t_ready - t0, c_ready - c0,
                                          c_span - c0, ",".join("%s=%d" % kv for kv in sorted(metrics.items()))))
EOF
)
  kill -TERM "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null || true; dpid=
  echo "$mode $row" >&2
  rows+=("$mode $row")
done

echo
echo "join to interactive, per group (s); all: from the first join until every group is interactive;"
echo "CPU: daemon + workers, user + system (s), until all are interactive and over the first $span s"
printf '%6s %6s %6s %6s %8s %10s %10s  %s\n' mode min p50 max all "CPU→all" "CPU ${span}s" "cache"
for row in "${rows[@]}"; do
  read -r mode mn p50 mx all call cspan cache <<<"$row"
  printf '%6s %6s %6s %6s %8s %10s %10s  %s\n' "$mode" "$mn" "$p50" "$mx" "$all" "$call" "$cspan" "$cache"
done
