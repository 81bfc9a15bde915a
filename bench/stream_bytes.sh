#!/usr/bin/env bash
# Bytes per grain per frame of the websocket stream, as one full-rate viewer (ws_probe) receives
# them over whole runs, per frame drawn at 60 a second (the bytes of each 1/60 s of simulated time;
# since issue 33 a session sends 15 frames a second and the client draws between them): the default silo (its fill and settle, a second at rest, open_hole, the
# flow, drained and at rest), the default pour (filling, then the pile at rest) and the default
# dam break. Per run: frames, the average over every frame (keyframes included), the average per
# state of the scene, over the frames in which no grain moved ("at rest"), and the keyframes'
# share of the average. Real time: about 2.5 minutes.
#
#   bench/stream_bytes.sh [SCENARIO...]     (silo pour dambreak; after the README build)
#
# GRAINLABD and WS_PROBE name other binaries (a build of another commit, for a before/after).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
daemon="${GRAINLABD:-$repo/build/grainlabd}"
probe="${WS_PROBE:-$repo/build/ws_probe}"
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(silo pour dambreak)
tmp=$(mktemp -d)
"$daemon" --http-port 0 --ws-port 0 --data-dir "$tmp/data" >"$tmp/out" 2>"$tmp/err" &
dpid=$!
trap 'kill -TERM $dpid 2>/dev/null; wait $dpid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do grep -q listening "$tmp/out" && break; sleep 0.05; done
port=$(sed -n 's/^listening http=\([0-9]*\).*/\1/p' "$tmp/out")
wsport=$(sed -n 's/^listening http=[0-9]* ws=\([0-9]*\)$/\1/p' "$tmp/out")
base="http://127.0.0.1:$port"
field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

printf '| run | frames (per s simulated) | bytes/grain per 1/60 s, all | at rest (frames) | per state (frames) | keyframes |\n'
printf '|---|---:|---:|---:|---|---:|\n'
for run in "${runs[@]}"; do
  case "$run" in
  silo) body='{"scene":"silo"}' end=(--end-after done 15 --seconds 150) ;;
  pour) body='{"scene":"pour"}' end=(--end-after done 10 --seconds 150) ;;
  dambreak) body='{"scene":"dambreak"}' end=(--seconds 20) ;;
  *) echo "unknown scenario $run (silo, pour, dambreak)" >&2; exit 2 ;;
  esac
  curl -s -X POST "$base/api/sessions" -H 'Content-Type: application/json' -d "$body" >"$tmp/created"
  id=$(field id <"$tmp/created")
  token=$(field control_token <"$tmp/created")
  "$probe" --port "$wsport" --session "$id" --frame-log "$tmp/$run.log" "${end[@]}" >"$tmp/$run.json" &
  ppid=$!
  if [ "$run" = silo ]; then
    # the hole opens once the grains have settled and rested for a second
    for _ in $(seq 600); do
      [ "$(curl -s "$base/api/sessions/$id" | field settling_left)" = 0.0 ] && break
      sleep 0.1
    done
    sleep 1
    curl -s -o /dev/null -X POST "$base/api/sessions/$id/actions" -H "Authorization: Bearer $token" \
      -H 'Content-Type: application/json' -d '{"type":"open_hole"}'
  fi
  wait $ppid
  curl -s -o /dev/null -X DELETE "$base/api/sessions/$id" -H "Authorization: Bearer $token"
  python3 - "$run" "$tmp/$run.log" "$tmp/$run.json" <<'PY'
import json, sys
run, log, summary = sys.argv[1:4]
s = json.load(open(summary))
assert s["decode_errors"] == 0, "%d frames did not decode" % s["decode_errors"]
rows = [l.split() for l in open(log)]
# t kind count bytes moved state flowing; each frame stands for the simulated time since the one
# before (the first: one 1/60 s), drawn at 60 a second
for i, r in enumerate(rows):
    r.append(max(float(r[0]) - float(rows[i - 1][0]), 0.0) * 60 if i else 1.0)
def per(sel):
    f = [r for r in rows if sel(r)]
    g = sum(int(r[2]) * r[7] for r in f)
    return len(f), (sum(int(r[3]) for r in f) / g if g else float("nan"))
n, avg = per(lambda r: True)
grains = sum(int(r[2]) * r[7] for r in rows)
key = sum(int(r[3]) for r in rows if r[1] == "1") / grains
states = []
for st in dict.fromkeys(r[5] for r in rows):
    k, b = per(lambda r: r[5] == st)
    states.append("%s %.3f (%d)" % (st, b, k))
k, rest = per(lambda r: r[4] == "0")
span = float(rows[-1][0]) - float(rows[0][0])
print("| %s | %d (%.1f) | %.3f | %.3f (%d) | %s | %.3f (%.0f %%) |" % (
    run, n, (n - 1) / span, avg, rest, k, ", ".join(states), key, 100 * key / avg))
PY
done
