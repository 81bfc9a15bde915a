#!/usr/bin/env bash
# Session lifetimes (issue 16, item 2): a session nobody watches and no controller changes ends by
# itself after idle-timeout, its run recorded as 'idle'; one with a viewer, or with a controller
# who keeps changing it, lives on.
set -u
daemon=${1:?usage: test_idle.sh path/to/grainlabd path/to/ws_probe}
probe=${2:?usage: test_idle.sh path/to/grainlabd path/to/ws_probe}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
start_daemon "$daemon" --idle-timeout 15

# post PATH TOKEN BODY / get PATH: set $code and $body
post() {
  code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X POST "$base$1" -H "Authorization: Bearer $2" \
    -H 'Content-Type: application/json' --data-binary "$3")
  body=$(cat "$tmp/body")
}
get() {
  code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$base$1")
  body=$(cat "$tmp/body")
}
field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1" <<<"$body"; }

# B: a controller changes it every second; C: one viewer watches it; A: neither. Each is looked
# after from the moment it exists, so a slow machine cannot make B or C idle by accident.
post /api/sessions "" '{"scene":"pour","params":{"quality":0}}'
read -r B TB < <(python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["id"], d["control_token"])' <<<"$body")
(
  while [ ! -e "$tmp/stop" ]; do
    curl -s -o /dev/null -w "%{http_code} " -X POST "$base/api/sessions/$B/actions" -H "Authorization: Bearer $TB" \
      -H 'Content-Type: application/json' --data-binary '{"type":"spout","x":0.2,"z":0.1}' >>"$tmp/spouts"
    sleep 1
  done
) &
controller=$!
post /api/sessions "" '{"scene":"pour","params":{"quality":0}}'
C=$(field id)
"$probe" --port "$wsport" --session "$C" --seconds 600 >"$tmp/probe" 2>&1 &
watcher=$!
t0=$(date +%s.%N) # before A exists: its idle clock starts later than this
post /api/sessions "" '{"scene":"pour","params":{"quality":0}}'
A=$(field id)
RA=$(field run_id)
[ -n "$A" ] && [ -n "$B" ] && [ -n "$C" ] && ok "three sessions" || bad "create: $body"
for _ in $(seq 600); do
  get "/api/sessions/$A"
  [ "$code" = 404 ] && break
  sleep 0.1
done
took=$(echo "$(date +%s.%N) - $t0" | bc)
[ "$code" = 404 ] && awk -v t="$took" 'BEGIN { exit !(t >= 14) }' &&
  ok "A, unwatched and unchanged, ended after $took s (idle-timeout 15, checked once a second)" ||
  bad "A: $code after $took s"
get "/api/sessions/$B"
[ "$code" = 200 ] && ok "B, changed by its controller every second, lives on" || bad "B: $code $body (spouts: $(cat "$tmp/spouts"))"
get "/api/sessions/$C"
[ "$code" = 200 ] && ok "C, watched, lives on" || bad "C: $code $body"
get "/api/runs/$RA"
[ "$(field end_reason)" = idle ] && ok "A's run is recorded as ended: idle" || bad "A's run: $body"
grep -q 'event=session_idle' "$tmp/err" && ok "the log says why" || bad "no session_idle in the log"
# once their controller and viewer have gone, B and C end too
touch "$tmp/stop"
kill "$watcher" 2>/dev/null
wait "$controller" "$watcher" 2>/dev/null
for _ in $(seq 600); do
  get "/api/sessions/$B"
  b=$code
  get "/api/sessions/$C"
  [ "$b" = 404 ] && [ "$code" = 404 ] && break
  sleep 0.1
done
[ "$b" = 404 ] && [ "$code" = 404 ] && ok "B and C end once their controller and viewer have gone" ||
  bad "B, C after: $b $code"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
