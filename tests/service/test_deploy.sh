#!/usr/bin/env bash
# deploy/ for real: the systemd unit passes systemd-analyze verify; a real nginx with
# deploy/nginx.conf in front of a real daemon carries REST calls and a websocket session (and
# keeps /metrics and the admin API off the public origin); an online backup while sessions run
# restores with its runs; logs are one structured line each; every metric is grainlab_*.
set -u
daemon=${1:?usage: test_deploy.sh grainlabd grainlab ws_probe}
cli=${2:?usage: test_deploy.sh grainlabd grainlab ws_probe}
probe=${3:?usage: test_deploy.sh grainlabd grainlab ws_probe}
deploy="$(cd "$(dirname "$0")/../../deploy" && pwd)"
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
j() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

# ---- systemd ------------------------------------------------------------------------------------
mkdir -p "$tmp/unit"
sed "s|/usr/local/bin/grainlabd|$(readlink -f "$daemon")|" "$deploy/grainlabd.service" >"$tmp/unit/grainlabd.service"
if out=$(systemd-analyze verify "$tmp/unit/grainlabd.service" 2>&1); then
  ok "systemd-analyze verify grainlabd.service: clean"
else
  bad "systemd-analyze verify: $out"
fi
missing=""
for key in DynamicUser=yes StateDirectory=grainlab ProtectSystem=strict ProtectHome=yes PrivateTmp=yes \
  NoNewPrivileges=yes RestrictAddressFamilies= SystemCallFilter= MemoryMax= Restart=on-failure; do
  grep -q "^$key" "$deploy/grainlabd.service" || missing+=" $key"
done
[ -z "$missing" ] && ok "the unit is hardened (DynamicUser, StateDirectory, ProtectSystem=strict, ..., Restart=on-failure)" ||
  bad "the unit lacks$missing"
# the unit's syscall filter must let a worker sandbox itself: setrlimit and seccomp
systemd-analyze syscall-filter @resources | grep -qw setrlimit &&
  systemd-analyze syscall-filter @system-service | grep -q '@resources' &&
  grep -q '^SystemCallFilter=.*seccomp' "$deploy/grainlabd.service" &&
  ok "the unit's SystemCallFilter allows what a worker needs (setrlimit via @system-service, seccomp)" ||
  bad "the unit's SystemCallFilter would stop the workers"

# ---- nginx: one origin in front of the daemon ------------------------------------------------------
echo 'adminadminadmin-0123456789' >"$tmp/admin"
start_daemon "$daemon" --static-dir "$(cd "$(dirname "$0")/../../web_client" && pwd)" --ws-public-port 0 \
  --admin-token-file "$tmp/admin"
nport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$tmp/nginx"
sed -e "s|listen 80;|listen 127.0.0.1:$nport;|" -e "s|127.0.0.1:8080|127.0.0.1:$port|" \
  -e "s|127.0.0.1:8081|127.0.0.1:$wsport|" "$deploy/nginx.conf" >"$tmp/nginx/site.conf"
n="$tmp/nginx"
{
  [ "$(id -u)" = 0 ] && echo "user root;"
  echo "worker_processes 1; pid $n/nginx.pid; error_log $n/error.log;"
  echo "events { worker_connections 256; }"
  echo "http { access_log $n/access.log; client_body_temp_path $n/body; proxy_temp_path $n/proxy;"
  echo "  fastcgi_temp_path $n/fcgi; uwsgi_temp_path $n/uwsgi; scgi_temp_path $n/scgi;"
  echo "  include /etc/nginx/mime.types; include $n/site.conf; }"
} >"$n/nginx.conf"
nginx -t -c "$n/nginx.conf" -p "$n" >"$n/t.log" 2>&1 && ok "nginx -t accepts deploy/nginx.conf" ||
  bad "nginx -t: $(cat "$n/t.log")"
nginx -c "$n/nginx.conf" -p "$n" -g 'daemon off;' 2>"$n/stderr" &
npid=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$nport/healthz" && break; sleep 0.05; done
front="http://127.0.0.1:$nport"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$front/api/scenes")
[ "$code" = 200 ] && grep -q '"silo"' "$tmp/body" && ok "through nginx: GET /api/scenes" || bad "nginx /api/scenes: $code"
code=$(curl -s -o "$tmp/created" -w '%{http_code}' -X POST "$front/api/sessions" \
  -H 'Content-Type: application/json' --data-binary '{"scene":"pour","params":{"amount":10}}')
[ "$code" = 201 ] && ok "through nginx: POST /api/sessions" || bad "nginx create: $code $(cat "$tmp/created")"
sid=$(j 'd["id"]' <"$tmp/created")
token=$(j 'd["control_token"]' <"$tmp/created")
# the probe joins first: its headless twin can replay the run only from within its first second,
# and on a loaded two-core runner (the browser test beside it) each request takes its time
"$probe" --port "$nport" --session "$sid" --seconds 3 --verify >"$tmp/ws"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["connected"] == 1 and d["first_kind"] == 1 and d["frames"] > 30 and d["decode_errors"] == 0 and d["verified"] == d["frames"] and d["max_err_steps"] <= 0.5 + 1e-6 and d["measurements"] >= 8 else 1)' "$tmp/ws"; then
  ok "through nginx: a websocket session, every frame decoded and checked against the headless re-run"
else
  bad "nginx websocket: $(cat "$tmp/ws")"
fi
code=$(curl -s -o /dev/null -w '%{http_code}' "$front/")
[ "$code" = 200 ] && ok "through nginx: the client's landing page" || bad "nginx /: $code"
[ "$(curl -s "$front/api/config" | j 'd["ws_port"]')" = 0 ] &&
  ok "behind the proxy the client is told to use its own origin for /ws/" || bad "config: $(curl -s "$front/api/config")"
# (the change comes after the stream check: the probe's headless twin starts from the
# session's parameters as it finds them when it joins)
code=$(curl -s -o /dev/null -w '%{http_code}' -X PATCH "$front/api/sessions/$sid/params" \
  -H "Authorization: Bearer $token" -H 'Content-Type: application/json' --data-binary '{"mu":0.7}')
[ "$code" = 200 ] && ok "through nginx: PATCH with the control token" || bad "nginx PATCH: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "$front/metrics")
[ "$code" = 403 ] && ok "through nginx: /metrics is not public (403)" || bad "nginx /metrics: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$front/api/admin/backup" -H "Authorization: Bearer $(cat "$tmp/admin")")
[ "$code" = 403 ] && ok "through nginx: the admin API is not public (403)" || bad "nginx admin: $code"
head -c 20000 /dev/zero | tr '\0' x >"$tmp/big"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$front/api/sessions" -H 'Content-Type: application/json' --data-binary @"$tmp/big")
[ "$code" = 413 ] && ok "through nginx: a 20 kB body is refused (413)" || bad "nginx body limit: $code"
kill -TERM "$npid"
wait "$npid" 2>/dev/null

# ---- an online backup while sessions run, and its restore ----------------------------------------
curl -s -o /dev/null -X POST "$base/api/sessions" -H 'Content-Type: application/json' --data-binary '{"scene":"silo","params":{"quality":0}}'
sleep 1.5
code=$(curl -s -o "$tmp/backup" -w '%{http_code}' -X POST "$base/api/admin/backup" -H "Authorization: Bearer $(cat "$tmp/admin")")
[ "$code" = 201 ] && ok "POST /api/admin/backup while 2 sessions run: $(cat "$tmp/backup")" || bad "backup: $code $(cat "$tmp/backup")"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/api/admin/backup" -H "Authorization: Bearer $token")
[ "$code" = 403 ] && ok "a control token cannot make a backup (403)" || bad "backup with control token: $code"
copy=$(j 'd["path"]' <"$tmp/backup")
[ "$(sqlite3 "$copy" 'PRAGMA integrity_check')" = ok ] && ok "the copy passes integrity_check" || bad "copy integrity"
"$cli" backup --db "$tmp/data/grainlab.db" --out "$tmp/cli-copy.db" >"$tmp/cli-backup" &&
  [ "$(j 'd["runs"]' <"$tmp/cli-backup")" = 2 ] && ok "grainlab backup (CLI) while the daemon writes: 2 runs" ||
  bad "CLI backup: $(cat "$tmp/cli-backup")"
mkdir -p "$tmp/restore"
cp "$copy" "$tmp/restore/grainlab.db"
"$daemon" --http-port 0 --ws-port 0 --data-dir "$tmp/restore" >"$tmp/rout" 2>"$tmp/rerr" &
rpid=$!
for _ in $(seq 100); do grep -q listening "$tmp/rout" && break; sleep 0.05; done
rport=$(sed -n 's/^listening http=\([0-9]*\).*/\1/p' "$tmp/rout")
got=$(curl -s "http://127.0.0.1:$rport/api/runs" |
  j '(d["total"], sorted(r["scene"] for r in d["runs"]), sorted(r["end_reason"] for r in d["runs"]))')
[ "$got" = "(2, ['pour', 'silo'], ['interrupted', 'interrupted'])" ] &&
  ok "a daemon started on the restored copy finds both runs (open in the copy, so closed as interrupted)" ||
  bad "restore: $got"
kill -TERM "$rpid"
wait "$rpid"

# ---- logs and metrics ----------------------------------------------------------------------------
curl -s "$base/metrics" >"$tmp/metrics"
bad_names=$(grep -v '^#' "$tmp/metrics" | grep -cv '^grainlab_')
[ "$bad_names" = 0 ] && ok "every metric is grainlab_* ($(grep -vc '^#' "$tmp/metrics") series)" ||
  bad "$bad_names series not named grainlab_*"
absent=""
for series in grainlab_sessions grainlab_viewers grainlab_workers grainlab_steps_total grainlab_session_rt_factor \
  grainlab_ws_frames_sent_total grainlab_ws_frames_skipped_total grainlab_http_responses_total \
  grainlab_store_queue_length grainlab_store_write_latency_seconds_sum; do
  grep -q "^$series" "$tmp/metrics" || absent+=" $series"
done
[ -z "$absent" ] &&
  ok "sessions, viewers, workers, steps, rt factor per session, frames sent and dropped, responses by status, store queue and latency" ||
  bad "missing from /metrics:$absent"
kill -TERM "$dpid"
wait "$dpid"
dpid=
unstructured=$(grep -cvE '^ts=[0-9T:.-]+Z level=(debug|info|warn|error) event=[a-z_]+ msg=".*"$' "$tmp/err")
[ "$unstructured" = 0 ] && ok "every log line is structured ($(wc -l <"$tmp/err") lines: ts, level, event, msg)" ||
  bad "$unstructured unstructured log lines: $(grep -vE '^ts=' "$tmp/err" | head -3)"
grep -q 'event=stopped' "$tmp/err" && ok "graceful shutdown logs that every run closed and the store flushed" ||
  bad "no 'stopped' log line"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
