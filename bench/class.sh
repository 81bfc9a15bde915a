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
[[ -x "$daemon" ]] || { echo "error: no grainlabd at '$daemon' (build it, or set GRAINLABD=...)" >&2; exit 1; }
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

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
rows=()
for scene in $scenes; do
  for k in "${ks[@]}"; do
    rm -rf "$tmp/data"
    "$daemon" --http-port 0 --ws-port 0 --data-dir "$tmp/data" --max-sessions "$k" \
      --max-sessions-per-client "$k" --create-rate 100000 >"$tmp/out" 2>&1 &
    dpid=$!
    for _ in $(seq 200); do grep -q '^listening' "$tmp/out" && break; sleep 0.05; done
    port=$(sed -n 's/^listening http=\([0-9]*\).*/\1/p' "$tmp/out")
    [[ -n "$port" ]] || { echo "error: grainlabd did not start:" >&2; cat "$tmp/out" >&2; exit 1; }
    echo "$scene K=$k ..." >&2
    row=$(python3 - "$port" "$scene" "$k" "$dyn" <<'EOF'
import json, sys, time, urllib.request

port, scene, k, dyn = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
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
for _ in range(k):
    s = call("POST", "/api/sessions", {"scene": scene})
    sessions.append((s["id"], s["control_token"]))

def clocks():
    out = []
    for sid, _ in sessions:
        s = call("GET", "/api/sessions/" + sid)
        out.append((s["t"], s["measurements"]["state"]))
    return out

if scene == "silo":
    # settled: every session past "settling" (the daemon paces them all the while)
    deadline = time.time() + 600
    while any(st == "settling" for _, st in clocks()):
        if time.time() > deadline:
            sys.exit("the silos did not settle in 600 s")
        time.sleep(0.5)
    for sid, tok in sessions:
        call("POST", "/api/sessions/%s/actions" % sid, {"type": "open_hole"}, tok)
t0 = time.time()
c0 = clocks()
time.sleep(dyn)
t1 = time.time()
c1 = clocks()
rts = [(b[0] - a[0]) / (t1 - t0) for a, b in zip(c0, c1)]
states = sorted(set(st for _, st in c1))
print("%d %.3f %.3f %s %s" % (k, min(rts), sum(rts) / len(rts), "yes" if min(rts) >= 0.95 else "no",
                              ",".join(states)))
EOF
)
    kill -TERM "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null || true; dpid=
    echo "$scene $row" >&2
    rows+=("$scene $row")
  done
done

echo
echo "K default sessions started together, nobody watching; rt = simulated s per wall s over ${dyn} s of the dynamic phase (silo: after open_hole; pour: from the start)"
printf '%6s %4s %8s %8s %6s  %s\n' scene K "min rt" "mean rt" holds "states at the end"
for row in "${rows[@]}"; do
  read -r scene k mn mean holds states <<<"$row"
  printf '%6s %4s %8s %8s %6s  %s\n' "$scene" "$k" "$mn" "$mean" "$holds" "$states"
done
for scene in $scenes; do
  best=0
  for row in "${rows[@]}"; do
    read -r s k _ _ holds _ <<<"$row"
    [[ "$s" == "$scene" && "$holds" == yes && "$k" -gt "$best" ]] && best=$k
  done
  echo "$scene: the largest K tried at which every session holds rt >= 0.95: $best"
done
