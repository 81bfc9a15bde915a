#!/usr/bin/env bash
# The websocket stream under load: one 3000-grain session (a pile poured at 400 grains/s, watched
# once the pour has ended and it flows out and settles) at 60 frames/s, watched by 50, 100 and 200
# local viewers (ws_probe) for 10 s each: frames/s per viewer, bytes per grain per frame, frame
# age (publication to receipt) p50/p99, the daemon's CPU and the session's real-time factor.
#
#   bench/stream.sh [VIEWER-COUNTS...]     (default: 50 100 200; after the README build)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
daemon="${GRAINLABD:-$repo/build/grainlabd}"
probe="${WS_PROBE:-$repo/build/ws_probe}"
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(50 100 200)
tmp=$(mktemp -d)
"$daemon" --http-port 0 --ws-port 0 --data-dir "$tmp/data" --max-viewers 1000 --max-connections-per-ip 10000 >"$tmp/out" 2>"$tmp/err" &
dpid=$!
trap 'kill -TERM $dpid 2>/dev/null; wait $dpid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do grep -q listening "$tmp/out" && break; sleep 0.05; done
port=$(sed -n 's/^listening http=\([0-9]*\).*/\1/p' "$tmp/out")
wsport=$(sed -n 's/^listening http=[0-9]* ws=\([0-9]*\)$/\1/p' "$tmp/out")
base="http://127.0.0.1:$port"
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
printf '| viewers | fps per viewer (min / mean) | bytes/grain keyframe | bytes/grain average | age p50 ms | age p99 ms | daemon CPU %% | worker CPU %% | rt factor |\n'
printf '|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for k in "${counts[@]}"; do
  curl -s -X POST "$base/api/sessions" -H 'Content-Type: application/json' -d '{"scene":"pour","params":{"rate":400}}' >"$tmp/created"
  id=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' <"$tmp/created")
  token=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["control_token"])' <"$tmp/created")
  sleep 9 # 3000 grains in 7.5 s: from here the pile flows out and settles
  worker=$(pgrep -P "$dpid" | tail -1)
  d0=$(ticks "$dpid")
  w0=$(ticks "$worker")
  t0=$(date +%s.%N)
  "$probe" --port "$wsport" --session "$id" --viewers "$k" --seconds 10 >"$tmp/probe"
  t1=$(date +%s.%N)
  d1=$(ticks "$dpid")
  w1=$(ticks "$worker")
  rt=$(curl -s "$base/api/sessions/$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["rt_factor"])')
  python3 - "$tmp/probe" "$k" "$d0" "$d1" "$w0" "$w1" "$t0" "$t1" "$hz" "$rt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
k = int(sys.argv[2]); d0, d1, w0, w1 = map(float, sys.argv[3:7]); t0, t1 = map(float, sys.argv[7:9])
hz = float(sys.argv[9]); rt = float(sys.argv[10]); span = t1 - t0
assert d["connected"] == k, "only %d of %d viewers connected" % (d["connected"], k)
print("| %d | %.1f / %.1f | %.2f | %.2f | %.2f | %.2f | %.0f | %.0f | %.3f |" % (
    k, d["fps_min"], d["fps_mean"], d["key_bytes_per_grain"], d["bytes_per_grain"],
    d["age_p50_ms"], d["age_p99_ms"], 100 * (d1 - d0) / hz / span, 100 * (w1 - w0) / hz / span, rt))
PY
  curl -s -o /dev/null -X DELETE "$base/api/sessions/$id" -H "Authorization: Bearer $token"
done
