#!/usr/bin/env bash
# grainlabd figures: sessions started per second, REST requests per second on loopback (wrk),
# and the daemon's memory idle, with 0 and with 20 sessions (workers counted separately).
#
#   bench/daemon.sh      (needs curl and wrk: apt-get install wrk)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
daemon="${GRAINLABD:-$repo/build/grainlabd}"
command -v wrk >/dev/null || { echo "error: wrk is missing (apt-get install wrk)" >&2; exit 1; }
tmp=$(mktemp -d)
"$daemon" --http-port 0 --ws-port 0 --data-dir "$tmp/data" --max-sessions 64 --max-sessions-per-client 64 --create-rate 100000 >"$tmp/out" 2>&1 &
dpid=$!
trap 'kill -TERM $dpid 2>/dev/null; wait $dpid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do grep -q listening "$tmp/out" && break; sleep 0.05; done
port=$(sed -n 's/^listening http=\([0-9]*\).*/\1/p' "$tmp/out")
base="http://127.0.0.1:$port"
rss() { awk '/VmRSS/ { print $2 }' "/proc/$1/status"; }
sleep 0.5
echo "daemon RSS idle, 0 sessions: $(rss $dpid) KiB"

# sessions started per second: 20 creations back to back (each spawns and sandboxes a worker)
start=$(date +%s.%N)
for i in $(seq 20); do
  curl -s -o /dev/null -w '' -X POST "$base/api/sessions" \
    -H 'Content-Type: application/json' -d '{"scene":"silo","params":{"quality":0}}'
done
end=$(date +%s.%N)
python3 -c "import sys; print('sessions started per second: %.1f' % (20 / (float(sys.argv[2]) - float(sys.argv[1]))))" "$start" "$end"
sleep 20 # let the silos settle and fall asleep
workers=$(pgrep -P "$dpid" | tr '\n' ' ')
wsum=0
for w in $workers; do wsum=$((wsum + $(rss "$w"))); done
echo "daemon RSS with 20 sessions: $(rss $dpid) KiB; their 20 workers: $wsum KiB in all"

# REST throughput: a session's JSON and the health check, 2 threads, 32 connections, 10 s each
id=$(curl -s "$base/api/sessions" | python3 -c 'import json,sys; print(json.load(sys.stdin)["sessions"][0]["id"])')
echo "GET /healthz:"
wrk -t2 -c32 -d10s "$base/healthz" | grep -E "Requests/sec|Latency"
echo "GET /api/sessions/{id}:"
wrk -t2 -c32 -d10s "$base/api/sessions/$id" | grep -E "Requests/sec|Latency"
