#!/usr/bin/env bash
# The store's queries at scale: 10 000 stored runs and 2 million samples (synthetic rows, written
# straight into a database grainlabd created and migrated), then through the REST API on
# loopback: filtered run lists and a run's CSV export, 200 requests each, p50/p99 latency.
# With GRAINLABD_BEFORE (another grainlabd, e.g. built at an older commit), both daemons get their
# own database filled alike and the requests alternate between them, so a before/after comparison
# shares the machine's load (the project VM's is shared): two columns per figure.
#
#   bench/store.sh      (after the README build; needs sqlite3 and python3)
#   GRAINLABD_BEFORE=/tmp/old/grainlabd bench/store.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
daemon="${GRAINLABD:-$repo/build/grainlabd}"
before="${GRAINLABD_BEFORE:-}"
tmp=$(mktemp -d)
pids=() # daemons still running
cleanup() {
  set +e
  for p in "${pids[@]}"; do
    kill -TERM "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
# start BINARY DIR: a daemon on DIR/grainlab.db; its HTTP port in $port
start() {
  mkdir -p "$2"
  "$1" --http-port 0 --ws-port 0 --data-dir "$2" >"$2.out" 2>"$2.err" &
  dpid=$!
  pids+=("$dpid")
  for _ in $(seq 100); do grep -q listening "$2.out" && break; sleep 0.05; done
  port=$(sed -n 's/^listening http=\([0-9]*\).*/\1/p' "$2.out")
}
stop() {
  kill -TERM "$dpid"
  wait "$dpid"
  local left=()
  for p in "${pids[@]}"; do
    [ "$p" = "$dpid" ] || left+=("$p")
  done
  pids=("${left[@]}")
}
# fill DIR: the synthetic record, written into the schema the daemon that made DIR migrated to
fill() {
  # samples in the daemon's schema: a column per measurement up to version 3, one JSON object of
  # them from version 4 (schema/migrations/004), so the same script measures either binary
  if [ "$(sqlite3 "$1/grainlab.db" 'PRAGMA user_version')" -ge 4 ]; then
    samples="INSERT INTO samples (run_id, steps, t, state, measures)
SELECT r.id, k.j * 60, k.j * 0.25, 'running',
       printf('{\"angle\":%!.17g,\"top\":1.5,\"cx\":0.01,\"cz\":-0.02,\"over_max\":0.001,\"flowing\":0.1,\"alive\":3000.0}', 25.0 + k.j % 7)
FROM runs r, k;"
  else
    samples="INSERT INTO samples (run_id, steps, t, state, angle, top, cx, cz, over_max, flowing, alive)
SELECT r.id, k.j * 60, k.j * 0.25, 'running', 25.0 + k.j % 7, 1.5, 0.01, -0.02, 0.001, 0.1, 3000
FROM runs r, k;"
  fi
  t0=$(date +%s.%N)
  {
    cat <<'SQL'
PRAGMA journal_mode = WAL;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
INSERT INTO sessions (id, join_code, label, private, created_at, ended_at)
SELECT printf('%016x', i), 'ABCDEF', 'group ' || (i % 40), 0, 1.7e9 + i * 600, 1.7e9 + i * 600 + 590 FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
INSERT INTO runs (id, session_id, label, scene, seed, grains, engine_version, params, started_at,
                  ended_at, end_reason, end_steps, end_t, digest)
SELECT i, printf('%016x', 1 + i % 1000), 'group ' || (i % 40),
       CASE i % 4 WHEN 0 THEN 'pour' WHEN 1 THEN 'silo' WHEN 2 THEN 'slump' ELSE 'tilt' END,
       i, 3000, '0.1.0',
       json_object('mu', 0.1 + (i % 90) / 100.0, 'mur', (i % 30) / 100.0, 'coh', 0.0,
                   'amount', 100.0, 'quality', 2.0, 'hole', 0.6 + (i % 11) / 10.0),
       1.7e9 + i * 60, 1.7e9 + i * 60 + 50, 'deleted', 12000, 50.0, printf('%016x', i * 7919)
FROM n;
INSERT INTO run_params (run_id, name, value)
SELECT r.id, j.key, j.value FROM runs r, json_each(r.params) j;
INSERT INTO run_results (run_id, name, value)
SELECT id, 'angle', 20 + (id * 37 % 200) / 10.0 FROM runs WHERE scene IN ('pour', 'tilt');
INSERT INTO run_results (run_id, name, value)
SELECT id, 'mean_flow', 500 + (id * 53 % 2000) FROM runs WHERE scene = 'silo';
INSERT INTO run_results (run_id, name, value)
SELECT id, 'front', 2 + (id * 29 % 300) / 100.0 FROM runs WHERE scene = 'slump';
WITH RECURSIVE k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < 199)
SQL
    echo "$samples"
    echo "COMMIT;"
  } | sqlite3 "$1/grainlab.db"
  t1=$(date +%s.%N)
  echo "schema version $(sqlite3 "$1/grainlab.db" "PRAGMA user_version"), filled: $(sqlite3 "$1/grainlab.db" 'SELECT count(*) FROM runs') runs, $(sqlite3 "$1/grainlab.db" 'SELECT count(*) FROM samples') samples in $(python3 -c "print('%.1f' % ($t1 - $t0))") s; file $(du -m "$1/grainlab.db" | cut -f1) MiB"
}
start "$daemon" "$tmp/after"
stop
fill "$tmp/after"
ports=()
start "$daemon" "$tmp/after"
ports+=("$port")
if [ -n "$before" ]; then
  start "$before" "$tmp/before"
  stop
  fill "$tmp/before"
  start "$before" "$tmp/before"
  ports=("$port" "${ports[@]}")
fi
python3 - "${ports[@]}" <<'PY'
import http.client, sys, time
conns = [http.client.HTTPConnection("127.0.0.1", int(p)) for p in sys.argv[1:]]
def timed(path, conn, headers={}):
    t = time.perf_counter()
    conn.request("GET", path, headers=headers)
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200, (path, r.status, body[:200])
    return (time.perf_counter() - t) * 1000, len(body)
queries = [
    ("newest 50", "/api/runs"),
    ("scene + label", "/api/runs?scene=pour&label=group%208"),
    ("parameter range, sorted by it", "/api/runs?scene=silo&param.hole.min=1.0&param.hole.max=1.2&sort=-param.hole"),
    ("two parameter ranges", "/api/runs?param.mu.min=0.4&param.mu.max=0.6&param.mur.max=0.1"),
    ("result range, sorted by result", "/api/runs?result.angle.min=35&sort=-result.angle&limit=100"),
    ("time range, page 20", "/api/runs?from=1700100000&to=1700500000&limit=50&offset=1000"),
]
two = len(conns) == 2
if two:
    print("| request | p50 ms before | p50 ms after | p99 ms before | p99 ms after | bytes before | bytes after |")
    print("|---|---:|---:|---:|---:|---:|---:|")
else:
    print("| request | p50 ms | p99 ms | bytes |")
    print("|---|---:|---:|---:|")
for name, path in queries + [("run 4321 as CSV (200 samples)", "/api/runs/4321/samples?format=csv"),
                             ("run 4321 with its events", "/api/runs/4321")]:
    ms = [[] for _ in conns]
    for c in conns:
        timed(path, c)  # warm
    for _ in range(200):  # alternating, so both see the same moments of the machine's load
        for i, c in enumerate(conns):
            ms[i].append(timed(path, c)[0])
    for m in ms:
        m.sort()
    size = [timed(path, c)[1] for c in conns]
    if two:
        print("| %s | %.2f | %.2f | %.2f | %.2f | %d | %d |" % (name, ms[0][99], ms[1][99], ms[0][197], ms[1][197], size[0], size[1]))
    else:
        print("| %s | %.2f | %.2f | %d |" % (name, ms[0][99], ms[0][197], size[0]))
PY
