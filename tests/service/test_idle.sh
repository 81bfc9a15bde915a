#!/usr/bin/env bash
# Session lifetimes (issue 16, item 2): a session nobody watches and no controller changes ends by
# itself after idle-timeout, its run recorded as 'idle'; one with a viewer, or with a controller
# who keeps changing it, lives on.
set -u
daemon=${1:?usage: test_idle.sh path/to/grainlabd path/to/ws_probe}
probe=${2:?usage: test_idle.sh path/to/grainlabd path/to/ws_probe}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
start_daemon "$daemon" --idle-timeout 3

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

post /api/sessions "" '{"scene":"pour","params":{"quality":0}}'
A=$(field id)
RA=$(field run_id)
post /api/sessions "" '{"scene":"pour","params":{"quality":0}}'
B=$(field id)
TB=$(field control_token)
post /api/sessions "" '{"scene":"pour","params":{"quality":0}}'
C=$(field id)
[ -n "$A" ] && [ -n "$B" ] && [ -n "$C" ] && ok "three sessions" || bad "create: $body"
# B: a controller changes it every second; C: one viewer watches it
"$probe" --port "$wsport" --session "$C" --seconds 7 >"$tmp/probe" 2>&1 &
watcher=$!
for _ in $(seq 7); do
  sleep 1
  post "/api/sessions/$B/actions" "$TB" '{"type":"spout","x":0.2,"z":0.1}'
done
get "/api/sessions/$A"
[ "$code" = 404 ] && ok "A, unwatched and unchanged for 3 s, has ended and is gone" || bad "A: $code $body"
get "/api/sessions/$B"
[ "$code" = 200 ] && ok "B, changed by its controller every second, lives on" || bad "B: $code $body"
get "/api/sessions/$C"
[ "$code" = 200 ] && ok "C, watched, lives on" || bad "C: $code $body"
wait "$watcher"
get "/api/runs/$RA"
[ "$(field end_reason)" = idle ] && ok "A's run is recorded as ended: idle" || bad "A's run: $body"
grep -q 'event=session_idle' "$tmp/err" && ok "the log says why" || bad "no session_idle in the log"
# once its viewer has left, C ends too
for _ in $(seq 100); do
  get "/api/sessions/$C"
  [ "$code" = 404 ] && break
  sleep 0.1
done
[ "$code" = 404 ] && ok "C ends once its viewer has left for 3 s" || bad "C after its viewer: $code"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
