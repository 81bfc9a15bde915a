#!/usr/bin/env bash
# The store under the fastest-sampled scene (issue 19): K dam breaks at their 60 Hz sample rate in
# a real grainlabd for S seconds; reports the samples written per second (grainlabd's /metrics)
# (records committed: grainlab_store_write_latency_seconds_count) and each run's stored size (its rows of samples and events, from SQLite's dbstat).
# Usage: bash bench/store_rate.sh [K [SECONDS [SCENE]]]   (defaults: 4 20 dambreak; build/ first)
set -euo pipefail
k=${1:-4} secs=${2:-20} scene=${3:-dambreak}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
"$here/build/grainlabd" --http-port 0 --ws-port 0 --data-dir "$tmp/data" --max-sessions-per-client 1000 \
  --create-rate 100000 >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 200); do grep -q '^listening' "$tmp/out" && break; sleep 0.05; done
base="http://127.0.0.1:$(sed -n 's/^listening http=\([0-9]*\).*/\1/p' "$tmp/out")"
written() { curl -s "$base/metrics" | sed -n "s/^grainlab_store_write_latency_seconds_count \([0-9]*\)$/\1/p"; }
ids=()
for _ in $(seq "$k"); do
  ids+=("$(curl -s -X POST "$base/api/sessions" -H 'Content-Type: application/json' \
    --data-binary "{\"scene\":\"$scene\"}" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["id"] + " " + d["control_token"] + " " + str(d["run_id"]))')")
done
w0=$(written)
t0=$(date +%s.%N)
sleep "$secs"
w1=$(written)
t1=$(date +%s.%N)
for s in "${ids[@]}"; do
  read -r id tok run <<<"$s"
  curl -s -o /dev/null -X POST "$base/api/sessions/$id/actions" -H "Authorization: Bearer $tok" \
    -H 'Content-Type: application/json' --data-binary '{"type":"finish"}'
  last=$run
done
kill -TERM "$pid"
wait "$pid" || true
db="$tmp/data/grainlab.db"
python3 - "$db" "$k" "$w0" "$w1" "$t0" "$t1" "$last" "$scene" <<'PY'
import sqlite3, sys
db, k, w0, w1, t0, t1, run, scene = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7]), sys.argv[8]
c = sqlite3.connect(db)
every, end_t = c.execute("SELECT sample_steps, end_t FROM runs WHERE id = ?", (run,)).fetchone()
n = c.execute("SELECT count(*) FROM samples WHERE run_id = ?", (run,)).fetchone()[0]
# the samples' bytes as stored: each row's share of the table's pages (dbstat), by the rows' payload
pages = c.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'samples'").fetchone()[0] or 0
payload_all = c.execute("SELECT sum(length(measures) + length(state) + 16) FROM samples").fetchone()[0] or 1
payload = c.execute("SELECT sum(length(measures) + length(state) + 16) FROM samples WHERE run_id = ?", (run,)).fetchone()[0] or 0
size = pages * payload / payload_all
rate = (w1 - w0) / (t1 - t0)
print(f"{k} {scene} sessions, {t1 - t0:.1f} s: store wrote {rate:.0f} records/s ({rate / k:.0f} per session; samples every {every} steps = {every / 240:.4f} s)")
print(f"run {run}: {end_t:.1f} s simulated, {n} samples, {size / 1024:.0f} KiB of samples stored ({size / max(end_t, 1e-9) / 1024:.1f} KiB per simulated second, {size / max(n, 1):.0f} B per sample)")
PY
