#!/usr/bin/env bash
# How many groups one machine holds: a real grainlabd on this machine, K default sessions of one
# scene started together, their real-time factor over the dynamic phase.
#
#   bench/class.sh [K ...]          (default: 1 2 4 8 12 16 24 30)
#
# Environment:
#   GRAINLABD  the daemon (default: <repo>/build/grainlabd, the README build)
#   SCENES     "silo", "pour" or both (default: "silo pour")
#   SECONDS_DYN  wall seconds of the dynamic phase measured (default 20)
#   WATCH      1: the sessions are the groups of one class, each watched by one viewer at full
#              rate (ws_load, every frame decoded) and all of them by the teacher's dashboard at
#              4 frames/s per tile (one class stream, /ws/classes/ID). Both run on this machine
#              and count against its CPU. Default 0: a plain session each, nobody watching.
#   GRAINLAB   the CLI whose `bench` gives the engine's one-core rate (default: <repo>/build/grainlab)
#   WS_LOAD    the viewers (default: <repo>/build/ws_load, built with the tests)
#
# The daemon's share (silo): the grain-steps the K sessions made per wall second, over what the
# machine's cores would make at the engine's one-core rate of the same flow, `grainlab bench`
# measured in the same run (pinned, best of three, before the first K and after the last; the
# mean). It says how much of
# the machine went into the engine's own work: 1 less the daemon's, the pacing's and the
# processes' cost. At a K the machine is not saturated by it says only that the CPU idled; the
# idle column is the share of the cores' time the kernel counted idle over the window.
#
# silo: every session settles (state leaves "settling"), then each gets open_hole at once and the
# next SECONDS_DYN wall seconds are the flow. pour: the pour starts with the session, so the
# dynamic phase is the first SECONDS_DYN wall seconds (grains are poured for 7.5 s of simulated
# time and then run down the pile). Each session's rt factor over the phase is its simulated time
# gained divided by the wall time; a K "holds" when every session's is >= 0.95. Nobody watches:
# the sessions encode no frames, as in a class whose teacher's dashboard is closed (a tile at
# rate 4 costs little: bench/README.md, "A class at once").
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
daemon="${GRAINLABD:-$repo/build/grainlabd}"
cli="${GRAINLAB:-$repo/build/grainlab}"
load="${WS_LOAD:-$repo/build/ws_load}"
watch="${WATCH:-0}"
[[ -x "$daemon" ]] || { echo "error: no grainlabd at '$daemon' (build it, or set GRAINLABD=...)" >&2; exit 1; }
[[ -x "$cli" ]] || { echo "error: no grainlab CLI at '$cli' (build it, or set GRAINLAB=...)" >&2; exit 1; }
[[ "$watch" == 0 || "$watch" == 1 ]] || { echo "error: WATCH='$watch' is neither 0 nor 1" >&2; exit 2; }
[[ "$watch" == 0 || -x "$load" ]] || { echo "error: WATCH=1 needs ws_load at '$load' (build the tests, or set WS_LOAD=...)" >&2; exit 1; }
scenes="${SCENES:-silo pour}"
for s in $scenes; do
  [[ "$s" == silo || "$s" == pour ]] || { echo "error: SCENES may name only silo and pour, not '$s'" >&2; exit 2; }
done
dyn="${SECONDS_DYN:-20}"
[[ "$dyn" =~ ^[1-9][0-9]*$ ]] || { echo "error: SECONDS_DYN='$dyn' is not a positive whole number" >&2; exit 2; }
ks=("$@")
[[ ${#ks[@]} -gt 0 ]] || ks=(1 2 4 8 12 16 24 30)
for k in "${ks[@]}"; do
  [[ "$k" =~ ^[1-9][0-9]*$ && "$k" -le 200 ]] || { echo "error: K='$k' is not a whole number in 1..200" >&2; exit 2; }
done

tmp=$(mktemp -d)
dpid=
cleanup() {
  [[ -n "$dpid" ]] && { kill -TERM "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null || true; }
  rm -rf "$tmp"
}
trap cleanup EXIT

cores=$(nproc)
echo "machine: $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
# the engine's one-core rate of the silo's flow (grain-steps per second), as bench/README.md's
# "flowing silo" measures it: pinned to the last CPU and the best of three runs, because unpinned
# on a VM the same binary's rate moved between 4.4 M and 6.2 M from run to run (a process moved
# between vCPUs starts cold), and the share's denominator must be the engine's real rate
engine_rate() {
  local best=0 r
  for _ in 1 2 3; do
    r=$(taskset -c "$((cores - 1))" "$cli" bench --scene silo --grains 3000 --fill scene \
      --action open_hole --after 1 --steps 2400 --threads 1 |
      python3 -c 'import json, sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["grain_steps_per_s"])')
    best=$(python3 -c "import sys; print(max(float(sys.argv[1]), float(sys.argv[2])))" "$best" "$r")
  done
  echo "$best"
}
printf '%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$tmp/teacher"
rows=()
rate_before=0
rate_after=0
for scene in $scenes; do
  if [[ "$scene" == silo ]]; then
    rate_before=$(engine_rate)
    echo "engine, one core, flowing silo: $rate_before grain-steps/s" >&2
  fi
  for k in "${ks[@]}"; do
    rm -rf "$tmp/data"
    "$daemon" --http-port 0 --ws-port 0 --data-dir "$tmp/data" --max-sessions "$k" \
      --max-sessions-per-client "$k" --create-rate 100000 --teacher-token-file "$tmp/teacher" \
      --max-viewers 4 --max-connections-per-ip 60000 >"$tmp/out" 2>&1 &
    dpid=$!
    for _ in $(seq 200); do grep -q '^listening' "$tmp/out" && break; sleep 0.05; done
    port=$(sed -n 's/^listening http=\([0-9]*\).*/\1/p' "$tmp/out")
    wsport=$(sed -n 's/^listening http=[0-9]* ws=\([0-9]*\)$/\1/p' "$tmp/out")
    [[ -n "$port" ]] || { echo "error: grainlabd did not start:" >&2; cat "$tmp/out" >&2; exit 1; }
    echo "$scene K=$k ..." >&2
    row=$(python3 - "$port" "$scene" "$k" "$dyn" "$watch" "$wsport" "$tmp/teacher" "$load" <<'EOF'
import base64, json, os, socket, struct, subprocess, sys, threading, time, urllib.request

port, scene, k, dyn = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
watch, wsport, load = sys.argv[5] == "1", int(sys.argv[6]), sys.argv[8]
teacher = open(sys.argv[7]).read().strip()
base = "http://127.0.0.1:%s" % port

def call(method, path, body=None, token=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)

sessions = []
if watch:
    ends = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    cls = call("POST", "/api/classes", {"name": "bench", "scenes": [scene], "max_groups": k,
                                        "grain_budget": 3000, "defaults": {}, "ends_at": ends},
               teacher)
    for g in range(k):
        j = call("POST", "/api/join", {"code": cls["code"], "group": "g%d" % g})
        sessions.append((j["session"]["id"], j["control_token"]))
else:
    for _ in range(k):
        s = call("POST", "/api/sessions", {"scene": scene})
        sessions.append((s["id"], s["control_token"]))

tiles = {"frames": 0, "error": None}

def dashboard():
    """The teacher's dashboard: one class stream, 4 frames/s per tile, every frame read."""
    try:
        c = socket.create_connection(("127.0.0.1", wsport))
        key = base64.b64encode(os.urandom(16)).decode()
        c.sendall(("GET /ws/classes/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                   "Sec-WebSocket-Version: 13\r\n\r\n" % (cls["id"], key)).encode())
        f = c.makefile("rb")
        while f.readline() not in (b"\r\n", b""):
            pass
        for msg in ({"type": "auth", "token": cls["teacher_token"]}, {"type": "rate", "fps": 4}):
            data, mask = json.dumps(msg).encode(), os.urandom(4)
            c.sendall(bytes([0x81, 0x80 | len(data)]) + mask +
                      bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
        while True:
            head = f.read(2)
            if len(head) < 2:
                return
            n = head[1] & 0x7F
            if n == 126:
                n = struct.unpack(">H", f.read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", f.read(8))[0]
            f.read(n)
            tiles["frames"] += (head[0] & 0x0F) == 2
    except OSError as e:
        tiles["error"] = str(e)

viewers = None
if watch:
    viewers = subprocess.Popen([load], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    viewers.stdin.write("port %d\n" % wsport)
    for sid, _ in sessions:
        viewers.stdin.write("view %s 1\n" % sid)
    viewers.stdin.flush()
    threading.Thread(target=dashboard, daemon=True).start()

def clocks():
    out = []
    for sid, _ in sessions:
        s = call("GET", "/api/sessions/" + sid)
        out.append((s["t"], s["measurements"]["state"], s["measurements"].get("alive") or 0))
    return out

if scene == "silo":
    # settled: every session past "settling" (the daemon paces them all the while)
    deadline = time.time() + 600
    while any(st == "settling" for _, st, _ in clocks()):
        if time.time() > deadline:
            sys.exit("the silos did not settle in 600 s")
        time.sleep(0.5)
    for sid, tok in sessions:
        call("POST", "/api/sessions/%s/actions" % sid, {"type": "open_hole"}, tok)
def cpu_idle():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[3] + v[4], sum(v)

t0 = time.time()
c0 = clocks()
i0 = cpu_idle()
f0 = tiles["frames"]
if watch:
    viewers.stdin.write("measure %s w\n" % dyn)
    viewers.stdin.flush()
time.sleep(dyn)
t1 = time.time()
i1 = cpu_idle()
c1 = clocks()
f1 = tiles["frames"]
idle = (i1[0] - i0[0]) / max(1, i1[1] - i0[1])
rts = [(b[0] - a[0]) / (t1 - t0) for a, b in zip(c0, c1)]
# grain-steps: simulated steps gained by each session times its grains (the mean of both ends)
work = sum((b[0] - a[0]) * 240.0 * 0.5 * (a[2] + b[2]) for a, b in zip(c0, c1)) / (t1 - t0)
states = sorted(set(st for _, st, _ in c1))
fps = "-"
if watch:
    got = {}
    while got.get("event") != "measure":
        got = json.loads(viewers.stdout.readline())
    per = [v["fps"] for v in got["viewers"]] or [0.0]
    fps = "%.1f/%.1f/%.2f" % (min(per), sum(per) / len(per), (f1 - f0) / dyn / k)
    viewers.stdin.write("quit\n")
    viewers.stdin.flush()
    viewers.wait(timeout=30)
    if tiles["error"]:
        fps += "(dashboard:%s)" % tiles["error"].replace(" ", "_")
print("%d %.3f %.3f %s %.0f %.3f %s %s" % (k, min(rts), sum(rts) / len(rts),
                                           "yes" if min(rts) >= 0.95 else "no", work, idle, fps,
                                           ",".join(states)))
EOF
)
    kill -TERM "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null || true; dpid=
    echo "$scene $row" >&2
    rows+=("$scene $row")
  done
  if [[ "$scene" == silo ]]; then
    rate_after=$(engine_rate)
    echo "engine, one core, flowing silo: $rate_after grain-steps/s" >&2
  fi
done

echo
if [[ "$watch" == 1 ]]; then
  echo "K groups of one class, each watched at full rate and by the teacher's tiles at 4 frames/s (viewers on this machine); rt = simulated s per wall s over ${dyn} s of the dynamic phase (silo: after open_hole; pour: from the start)"
else
  echo "K default sessions started together, nobody watching; rt = simulated s per wall s over ${dyn} s of the dynamic phase (silo: after open_hole; pour: from the start)"
fi
rate=$(python3 -c "print(0.5 * ($rate_before + $rate_after))")
[[ "$rate_before" != 0 ]] && echo "engine, one core, flowing silo: $rate_before before, $rate_after after: mean $rate grain-steps/s; $cores cores"
printf '%6s %4s %8s %8s %6s %12s %7s %6s %22s  %s\n' scene K "min rt" "mean rt" holds "grain-st/s" share idle "fps viewer min/mean/tile" "states at the end"
for row in "${rows[@]}"; do
  read -r scene k mn mean holds work idle fps states <<<"$row"
  share=-
  [[ "$scene" == silo ]] && share=$(python3 -c "print('%.3f' % ($work / ($cores * $rate)))")
  printf '%6s %4s %8s %8s %6s %12s %7s %6s %22s  %s\n' "$scene" "$k" "$mn" "$mean" "$holds" "$work" "$share" "$idle" "$fps" "$states"
done
for scene in $scenes; do
  best=0
  for row in "${rows[@]}"; do
    read -r s k _ _ holds _ _ _ _ <<<"$row"
    [[ "$s" == "$scene" && "$holds" == yes && "$k" -gt "$best" ]] && best=$k
  done
  echo "$scene: the largest K tried at which every session holds rt >= 0.95: $best"
done
