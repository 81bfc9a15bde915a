#!/usr/bin/env bash
# grainlabd end to end with a real HTTP client (curl): sessions and their controls, a table of
# bad requests (each must get the right 4xx and a JSON error naming the problem, and change
# nothing), worker isolation (kill -9), the session limit, and a clean SIGTERM.
set -u
daemon=${1:?usage: test_daemon.sh path/to/grainlabd [--test-commands]}
test_commands=${2:-}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

mkdir -p "$tmp/static/sub"
echo '<!doctype html><title>grainlab</title>' >"$tmp/static/index.html"
echo 'secret' >"$tmp/outside.txt"
printf 'PNG\0\0\1binary\0tail' >"$tmp/static/sub/bin.png"
echo '{"name":"grainlab-web","devDependencies":{"playwright-core":"1"}}' >"$tmp/static/package.json"
# node_modules (issue 32): served are only what a page names (its import map, a stylesheet) and
# what that imports; another file of the same library, its package.json, a test tool and a link
# in .bin are not, by any spelling
printf '<!doctype html><link rel="stylesheet" href="/node_modules/uplot/ok.css"><script type="importmap">{ "imports": { "uplot": "/node_modules/uplot/ok.js", "lib/": "/node_modules/lib/" } }</script>' >"$tmp/static/map.html"
mkdir -p "$tmp/static/node_modules/uplot" "$tmp/static/node_modules/lib/deep" \
  "$tmp/static/node_modules/playwright-core" "$tmp/static/node_modules/.bin"
echo 'import { two } from "./two.js"; export const ok = 1;' >"$tmp/static/node_modules/uplot/ok.js"
echo 'export const two = 2;' >"$tmp/static/node_modules/uplot/two.js"
echo 'body { margin: 0 }' >"$tmp/static/node_modules/uplot/ok.css"
echo 'export const unnamed = 1;' >"$tmp/static/node_modules/uplot/unnamed.js"
echo '{"name":"uplot"}' >"$tmp/static/node_modules/uplot/package.json"
echo 'export const deep = 1;' >"$tmp/static/node_modules/lib/deep/x.js"
echo '{"name":"playwright-core"}' >"$tmp/static/node_modules/playwright-core/package.json"
ln -s ../playwright-core/package.json "$tmp/static/node_modules/.bin/tool"
echo 'adminadminadmin-0123456789' >"$tmp/admin"
start_daemon "$daemon" --static-dir "$tmp/static" --admin-token-file "$tmp/admin" \
  --max-sessions 3 --max-grains 4000

# req METHOD PATH TOKEN [BODY]: sets $code and $body
req() {
  local args=(-s --path-as-is -o "$tmp/body" -w '%{http_code}' -X "$1" "$base$2")
  [ -n "$3" ] && args+=(-H "Authorization: Bearer $3")
  [ $# -ge 4 ] && args+=(-H 'Content-Type: application/json' --data-binary "$4")
  code=$(curl "${args[@]}")
  body=$(cat "$tmp/body")
}
field() { python3 -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d=d[k]
print(d)' "$1" <<<"$body"; }

# ---- a session and its controls -------------------------------------------------------------
req POST /api/sessions "" '{"scene":"pour","params":{"quality":0,"mu":0.6},"seed":3,"label":"group A"}'
[ "$code" = 201 ] && ok "create a session: 201" || bad "create: $code $body"
A=$(field id)
TA=$(field control_token)
JA=$(field join_code)
sleep 1.5
req GET "/api/sessions/$A" ""
t=$(field t)
rt=$(field rt_factor)
if awk -v t="$t" -v rt="$rt" 'BEGIN { exit !(t > 0.5 && rt > 0.5 && rt < 1.5) }'; then
  ok "the session runs in real time (t = $t s, rt_factor $rt)"
else
  bad "pacing: t=$t rt=$rt"
fi
[ "$(field label)" = "group A" ] && [ "$(field params.mu)" = 0.6 ] && ok "label and params kept" || bad "label/params: $body"
[ "$(field digest)" = None ] && ok "a running session shows no digest (its state changes every tick)" || bad "digest while running: $body"
! grep -q "$TA" <<<"$body" && ok "GET never shows the control token" || bad "token leaked"
req GET "/api/sessions/$JA" ""
[ "$code" = 200 ] && [ "$(field id)" = "$A" ] && ok "the join code finds the session" || bad "join code: $code"
req PATCH "/api/sessions/$A/params" "$TA" '{"mu":0.8,"mur":0.2}'
[ "$code" = 200 ] && [ "$(field params.mu)" = 0.8 ] && ok "PATCH params" || bad "params: $code $body"
req POST "/api/sessions/$A/actions" "$TA" '{"type":"spout","x":1.5,"z":-1}'
[ "$code" = 200 ] && ok "action spout" || bad "spout: $code $body"
req POST "/api/sessions/$A/actions" "$TA" '{"type":"pause"}'
sleep 0.3
req GET "/api/sessions/$A" ""
s0=$(field steps)
d0=$(field digest)
[ "$(field state)" = paused ] && ok "pause" || bad "pause: $body"
[[ "$d0" =~ ^[0-9a-f]{16}$ ]] && ok "a paused session shows its digest ($d0)" || bad "digest when paused: $body"
req POST "/api/sessions/$A/actions" "$TA" '{"type":"step","n":10}'
s1=$(field steps)
[ "$code" = 200 ] && [ $((s1 - s0)) = 10 ] && ok "step 10 while paused ($s0 -> $s1)" || bad "step: $code $s0 $s1 $body"
d1=$(field digest)
[[ "$d1" =~ ^[0-9a-f]{16}$ ]] && [ "$d1" != "$d0" ] && ok "and the digest of the state it reached" || bad "digest after step: $d0 -> $d1"
# ---- snapshots (issue 19): the paused state's particles, read back with python3-vtk9 against
# its digest; the step is taken to a sample's step, where the measured `alive` is of this state
n=$((60 - s1 % 60))
req POST "/api/sessions/$A/actions" "$TA" "{\"type\":\"step\",\"n\":$n}"
s2=$(field steps)
d2=$(field digest)
alive=$(field measurements.alive)
alive=${alive%.0} # a measurement: a JSON number
for f in csv vtk; do
  scode=$(curl -s -D "$tmp/snap-$f.h" -o "$tmp/snap.$f" -w '%{http_code}' "$base/api/sessions/$A/snapshot?format=$f")
  [ "$scode" = 200 ] && grep -qi "content-disposition: attachment; filename=\"session-$A-step-$s2.$f\"" "$tmp/snap-$f.h" &&
    ok "GET snapshot?format=$f: 200, session-$A-step-$s2.$f ($(wc -c <"$tmp/snap.$f") bytes)" || bad "snapshot $f: $scode $(head -c 300 "$tmp/snap.$f")"
done
if /usr/bin/python3 "$(dirname "$0")/../support/check_snapshot.py" "$tmp/snap.csv" "$tmp/snap.vtk" "$d2" "$alive" >"$tmp/check.out" 2>&1; then
  ok "the snapshots hold the session's $alive grains at step $s2, bit for bit (digest $d2)"
else
  bad "snapshot contents: $(grep -v '^ok' "$tmp/check.out" | head -c 600)"
fi
scode=$(curl -s -o "$tmp/snap.none" -w '%{http_code}' "$base/api/sessions/$A/snapshot")
head -1 "$tmp/snap.none" | grep -q '^id,x_m,' && [ "$scode" = 200 ] && ok "snapshot without a format: CSV" || bad "snapshot, no format: $scode"
req GET "/api/sessions/$A/snapshot?format=xml" ""
[ "$code" = 400 ] && [ "$(field error.code)" = bad_format ] && [ "$(field error.field)" = format ] && ok "snapshot?format=xml: 400 bad_format" || bad "format=xml: $code $body"
req GET "/api/sessions/$A" ""
[ "$(field steps)" = "$s2" ] && [ "$(field digest)" = "$d2" ] && ok "a snapshot changes nothing (step $s2, digest $d2)" || bad "after snapshots: $body"
req POST "/api/sessions/$A/actions" "$TA" '{"type":"cancel"}'
ecode=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["error"]["code"])' <<<"$body" 2>/dev/null)
[ "$code" = 409 ] && [ "$ecode" = nothing_to_cancel ] && ok "cancel without a step: 409" || bad "cancel: $code $body"
# a long step (the budget's most for 4000 bodies summed directly) cancelled while in flight
req POST /api/sessions "" '{"scene":"cluster","params":{"bodies":4000,"theta":0}}'
C=$(field id)
TC=$(field control_token)
req POST "/api/sessions/$C/actions" "$TC" '{"type":"pause"}'
sleep 0.2
req GET "/api/sessions/$C" ""
c0=$(field steps)
req POST "/api/sessions/$C/actions" "$TC" '{"type":"step","n":14400}'
ecode=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["error"]["code"])' <<<"$body" 2>/dev/null)
most=$(grep -o 'at most [0-9]*' <<<"$body" | grep -o '[0-9]*$')
req GET "/api/sessions/$C" ""
[ "$code" = 200 ] && [ "$ecode" = over_budget ] && [ -n "$most" ] && [ "$(field steps)" = "$c0" ] &&
  ok "step 14400 of 4000 bodies summed directly is over the work budget: 422 (at most $most), nothing stepped" ||
  bad "step budget: $ecode $body"
curl -s -o "$tmp/stepped" -w '%{http_code}' -X POST -H "Authorization: Bearer $TC" -H "Content-Type: application/json" \
  --data-binary "{\"type\":\"step\",\"n\":$most}" "$base/api/sessions/$C/actions" >"$tmp/stepcode" &
stepper=$!
sleep 0.5
req GET "/api/sessions/$C" ""
[ "$code" = 200 ] && ok "GET answers while a step is in flight (steps $(field steps))" || bad "GET during step: $code"
req POST "/api/sessions/$C/actions" "$TC" '{"type":"cancel"}'
[ "$code" = 200 ] && ok "cancel a step in flight" || bad "cancel in flight: $code $body"
wait "$stepper"
req GET "/api/sessions/$C" ""
c1=$(field steps)
ecode=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["error"]["code"])' <"$tmp/stepped" 2>/dev/null)
[ "$(cat "$tmp/stepcode")" = 409 ] && [ "$ecode" = cancelled ] && [ $((c1 - c0)) -lt "$most" ] &&
  ok "the step answers 409 cancelled after $((c1 - c0)) of $most steps" ||
  bad "cancelled step: $(cat "$tmp/stepcode") $(cat "$tmp/stepped") $c0 -> $c1 of $most"
req DELETE "/api/sessions/$C" "$TC"
req POST "/api/sessions/$A/actions" "$TA" '{"type":"resume"}'
[ "$code" = 200 ] && ok "resume" || bad "resume: $code"
req PATCH "/api/sessions/$A" "$TA" '{"speed":2}'
[ "$code" = 200 ] && [ "$(field speed)" = 2.0 ] && ok "speed 2" || bad "speed: $code $body"
req GET /metrics ""
grep -q '^grainlab_sessions 1$' <<<"$body" && ok "metrics count the session" || bad "metrics: $body"
req GET / ""
[ "$code" = 200 ] && grep -q grainlab <<<"$body" && ok "static index.html" || bad "static: $code"
for p in /node_modules/uplot/ok.js /./node_modules/uplot/ok.js //node_modules/uplot/ok.js; do
  req GET "$p" ""
  [ "$code" = 200 ] && grep -q 'ok = 1' <<<"$body" && ok "a browser library from node_modules: $p" ||
    bad "node_modules library $p: $code"
done
for p in /node_modules/uplot/two.js /node_modules/uplot/ok.css /node_modules/lib/deep/x.js; do
  req GET "$p" ""
  [ "$code" = 200 ] && ok "named by a page, or imported by what it names: $p" || bad "$p: $code"
done
curl -s -o "$tmp/bin" "$base/sub/bin.png"
cmp -s "$tmp/bin" "$tmp/static/sub/bin.png" && ok "a binary static file comes whole (NULs included)" ||
  bad "binary file: $(od -c "$tmp/bin" | head -2)"
hdr() { curl -s -o /dev/null -D - "$base$1" | tr -d '\r'; }
h_json=$(hdr /api/scenes)
h_page=$(hdr /map.html)
grep -qi '^x-content-type-options: nosniff$' <<<"$h_json" && grep -qi '^x-content-type-options: nosniff$' <<<"$h_page" &&
  ok "JSON and pages say nosniff" || bad "nosniff: $h_json"
grep -qi "^content-security-policy: default-src 'none'; frame-ancestors 'none'$" <<<"$h_json" &&
  ok "JSON replies load nothing and are never framed" || bad "JSON CSP: $h_json"
maphash=$(printf '{ "imports": { "uplot": "/node_modules/uplot/ok.js", "lib/": "/node_modules/lib/" } }' | openssl dgst -sha256 -binary | base64)
csp=$(sed -n 's/^[Cc]ontent-[Ss]ecurity-[Pp]olicy: //p' <<<"$h_page")
grep -qF "script-src 'self' 'sha256-$maphash';" <<<"$csp" && grep -qF "frame-ancestors 'none'" <<<"$csp" &&
  grep -qF "connect-src 'self' ws://127.0.0.1:$wsport wss://127.0.0.1:$wsport;" <<<"$csp" &&
  ok "a page's CSP allows its own scripts, its import map by hash and the websocket port" ||
  bad "page CSP: $csp"
req GET /api/scenes ""
[ "$code" = 200 ] && grep -q '"name":"silo"' <<<"$body" && ok "scene catalogue" || bad "scenes: $code"
python3 -c 'import json,sys
s = {x["name"]: x for x in json.load(sys.stdin)["scenes"]}
assert {n: s[n]["model"] for n in ("pour", "dambreak", "drop", "orbit", "softening", "cluster")} == {"pour": "granular",
  "dambreak": "fluid", "drop": "fluid", "orbit": "gravity", "softening": "gravity", "cluster": "gravity"}
restart = {(n, p["name"]) for n in s for p in s[n]["params"] if p["restart"]}
assert {("pour", "amount"), ("dambreak", "width"), ("cluster", "bodies"), ("orbit", "speed")} <= restart, restart
assert not {("pour", "mu"), ("dambreak", "visc"), ("cluster", "eps"), ("softening", "vcap")} & restart, restart
' <<<"$body" && ok "the catalogue names each scene's model and marks the parameters fixed at the start" ||
  bad "catalogue models/restart: ${body:0:300}"

# ---- bad requests: right status, JSON error naming the problem, nothing changed -------------------
fingerprint() {
  req GET "/api/sessions/$A" ""
  python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["scene"], d["label"], d["run_id"], d["speed"], sorted(d["params"].items()))' <<<"$body"
}
before=$(fingerprint)
S="/api/sessions/$A"
while IFS='|' read -r method path tok data want wcode; do
  [ -z "$method" ] && continue
  case "$tok" in A) tok=$TA ;; none) tok= ;; wrong) tok=0000000000000000000000000000000000000000000000000000000000000000 ;; admin) tok=$(cat "$tmp/admin") ;; esac
  path=${path//@S/$S}
  if [ "$data" = "-" ]; then req "$method" "$path" "$tok"; else req "$method" "$path" "$tok" "$data"; fi
  gotcode=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["error"]["code"])' <<<"$body" 2>/dev/null)
  if [ "$code" = "$want" ] && [ "$gotcode" = "$wcode" ]; then
    ok "$method $path ${data:0:40} -> $code $wcode"
  else
    bad "$method $path ${data:0:60} -> $code $gotcode (want $want $wcode): ${body:0:200}"
  fi
done <<'TABLE'
POST|/api/sessions|none|{"scene":"pour"|400|bad_json
POST|/api/sessions|none|{"scene":"pour",}|400|bad_json
POST|/api/sessions|none|not json|400|bad_json
POST|/api/sessions|none||400|bad_json
POST|/api/sessions|none|[1,2]|400|bad_json
POST|/api/sessions|none|"pour"|400|bad_json
POST|/api/sessions|none|{"scene":"pour","scene":"silo"}|400|bad_json
POST|/api/sessions|none|{"scene":"pour","params":{"mu":NaN}}|400|bad_json
POST|/api/sessions|none|{"scene":"pour","params":{"mu":Infinity}}|400|bad_json
POST|/api/sessions|none|{"scene":"pour","params":{"mu":1e999}}|400|bad_json
POST|/api/sessions|none|{"scene":"sandcastle"}|400|unknown_scene
POST|/api/sessions|none|{"scene":42}|400|wrong_type
POST|/api/sessions|none|{}|400|missing_field
POST|/api/sessions|none|{"scene":"pour","colour":"red"}|400|unknown_field
POST|/api/sessions|none|{"scene":"pour","params":{"viscosity":1}}|400|unknown_parameter
POST|/api/sessions|none|{"scene":"pour","params":{"mu":2}}|422|out_of_range
POST|/api/sessions|none|{"scene":"pour","params":{"mu":-1}}|422|out_of_range
POST|/api/sessions|none|{"scene":"pour","params":{"mu":"0.5"}}|400|wrong_type
POST|/api/sessions|none|{"scene":"pour","params":{"mu":true}}|400|wrong_type
POST|/api/sessions|none|{"scene":"pour","params":[0.5]}|400|wrong_type
POST|/api/sessions|none|{"scene":"pour","params":{"quality":1.5}}|422|out_of_range
POST|/api/sessions|none|{"scene":"silo","params":{"hole":0.1}}|422|out_of_range
POST|/api/sessions|none|{"scene":"pour","params":{"amount":400}}|422|too_many_grains
POST|/api/sessions|none|{"scene":"cluster","params":{"bodies":5000}}|422|too_many_grains
POST|/api/sessions|none|{"scene":"cluster","params":{"bodies":100.5}}|422|out_of_range
POST|/api/sessions|none|{"scene":"orbit","params":{"quality":1}}|400|unknown_parameter
POST|/api/sessions|none|{"scene":"dambreak","params":{"width":5}}|422|out_of_range
POST|/api/sessions|none|{"scene":"softening","params":{"eps":-0.1}}|422|out_of_range
POST|/api/sessions|none|{"scene":"pour","seed":1.5}|400|wrong_type
POST|/api/sessions|none|{"scene":"pour","seed":"7"}|400|wrong_type
POST|/api/sessions|none|{"scene":"pour","label":7}|400|wrong_type
PUT|/api/sessions|none|{}|405|method_not_allowed
DELETE|/api/scenes|none|-|405|method_not_allowed
POST|/healthz|none|{}|405|method_not_allowed
GET|/api/sessions/nosuchsession|none|-|404|not_found
DELETE|/api/sessions/nosuchsession|A|-|404|not_found
GET|/api/nothing|none|-|404|not_found
GET|@S/nothing|none|-|404|not_found
GET|/../../etc/passwd|none|-|404|not_found
GET|/%2e%2e/outside.txt|none|-|404|not_found
GET|/sub/../../outside.txt|none|-|404|not_found
GET|/missing.html|none|-|404|not_found
GET|/node_modules/playwright-core/package.json|none|-|404|not_found
GET|/./node_modules/playwright-core/package.json|none|-|404|not_found
GET|/%2e/node_modules/playwright-core/package.json|none|-|404|not_found
GET|//node_modules/playwright-core/package.json|none|-|404|not_found
GET|/node_modules/uplot/../playwright-core/package.json|none|-|404|not_found
GET|/node_modules/.bin/tool|none|-|404|not_found
GET|/node_modules/uplot/unnamed.js|none|-|404|not_found
GET|/node_modules/uplot/package.json|none|-|404|not_found
GET|/./node_modules/uplot/package.json|none|-|404|not_found
GET|/package.json|none|-|404|not_found
GET|//package.json|none|-|404|not_found
PATCH|@S/params|none|{"mu":0.7}|401|unauthorized
PATCH|@S/params|wrong|{"mu":0.7}|403|forbidden
PATCH|@S/params|admin|{"mu":0.7}|403|forbidden
PATCH|@S/params|A|{"mu":9}|422|out_of_range
PATCH|@S/params|A|{"mu":0.7,"viscosity":1}|400|unknown_parameter
PATCH|@S/params|A|{"mu":0.7,"mur":9}|422|out_of_range
PATCH|@S/params|A|{"amount":50}|409|needs_restart
PATCH|@S/params|A|{"mu":null}|400|wrong_type
PATCH|@S/params|A|{"mu":0.7|400|bad_json
POST|@S/params|A|{"mu":0.7}|405|method_not_allowed
POST|@S/actions|A|{"type":"fly"}|400|unknown_action
POST|@S/actions|A|{}|400|missing_field
POST|@S/actions|A|{"type":"spout","x":1}|400|missing_field
POST|@S/actions|A|{"type":"spout","x":99,"z":0}|422|out_of_range
POST|@S/actions|A|{"type":"spout","x":"1","z":0}|400|wrong_type
POST|@S/actions|A|{"type":"spout","x":1,"z":0,"y":2}|400|unknown_field
POST|@S/actions|A|{"type":"open_hole"}|409|unsupported_action
POST|@S/actions|A|{"type":"pour","on":1}|400|wrong_type
POST|@S/actions|A|{"type":"tool","x":0,"y":1,"z":0,"vx":1}|400|missing_field
POST|@S/actions|A|{"type":"step","n":5}|409|not_paused
POST|@S/actions|none|{"type":"pause"}|401|unauthorized
PATCH|@S|A|{"speed":9}|422|out_of_range
PATCH|@S|A|{"speed":"fast"}|400|wrong_type
PATCH|@S|A|{"label":"new"}|400|read_only
PATCH|@S|A|{"colour":1}|400|unknown_field
POST|@S/scene|A|{"scene":"sandcastle"}|400|unknown_scene
POST|@S/scene|A|{"scene":"silo","params":{"hole":5}}|422|out_of_range
POST|@S/scene|A|{"scene":"silo","label":"x"}|400|unknown_field
DELETE|@S|wrong|-|403|forbidden
DELETE|@S|none|-|401|unauthorized
PUT|/api/sessions/nosuchsession|none|-|404|not_found
GET|/api/sessions/|none|-|404|not_found
POST|@S/nothing|A|{}|404|not_found
PATCH|@S/params/|A|{"mu":0.7}|404|not_found
GET|@S/params|none|-|405|method_not_allowed
PATCH|@S/params|A|{"amount":50,"mu":"x"}|409|needs_restart
PATCH|@S/params|A|{"mu":"x","amount":50}|400|wrong_type
POST|/api/scenes/|none|-|404|not_found
GET|/api/runs/abc|none|-|404|not_found
POST|/api/runs/1/nothing|none|{}|405|method_not_allowed
POST|/api/sessions|none|{"scene":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaé"}|400|unknown_scene
POST|/api/sessions|none|{"scene":"pour","aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaé":1}|400|unknown_field
POST|/api/sessions|none|{"scene":"pour","params":{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaé":"x"}}|400|wrong_type
GET|/api/runs?aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa%C3%A9=1|none|-|400|unknown_field
GET|/api/runs?scene=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa%C3%A9|none|-|400|unknown_scene
GET|/api/sessions/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa%C3%A9|none|-|404|not_found
TABLE
after=$(fingerprint)
[ "$before" = "$after" ] && ok "none of the bad requests changed the session" || bad "session changed: $before / $after"
big=$(head -c 20000 /dev/zero | tr '\0' ' ')
req POST /api/sessions "" "{\"scene\":\"pour\",\"label\":\"$big\"}"
[ "$code" = 413 ] && ok "oversize body -> 413" || bad "oversize: $code"

# ---- schema/openapi.yaml agrees with the routes: documented methods are served, others get 405 --
spec="$(dirname "$0")/../../schema/openapi.yaml"
agree=0
disagree=""
req GET "/api/sessions/$A" ""
RUN_A=$(field run_id)
while read -r path methods; do
  p=${path//\{id\}/$A}
  p=${p//\{run\}/$RUN_A}
  for m in GET POST PATCH DELETE PUT; do
    req "$m" "$p" "" '{}'
    ecode=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["error"]["code"])' <<<"$body" 2>/dev/null)
    if grep -qw "$m" <<<"$methods"; then
      if [ "$code" = 405 ] || [ "$ecode" = not_found ]; then
        disagree+=" $m $path ($code)"
      fi
    elif [ "$code" != 405 ]; then
      disagree+=" $m $path ($code, not documented)"
    fi
    agree=$((agree + 1))
  done
done < <(awk '/^paths:/ { on = 1; next }
              on && /^  \/[^ ]*:$/ { if (p) print p, m; p = substr($1, 1, length($1) - 1); m = ""; next }
              on && /^    (get|post|patch|delete|put):$/ { m = m " " toupper(substr($1, 1, length($1) - 1)) }
              END { if (p) print p, m }' "$spec")
[ -z "$disagree" ] && [ "$agree" -ge 45 ] && ok "openapi.yaml and the routes agree ($agree path/method checks)" || bad "openapi disagrees:$disagree"
before=$(fingerprint)

# ---- scene switch -------------------------------------------------------------------------------
req GET "$S" ""
run0=$(field run_id)
req POST "$S/scene" "$TA" '{"scene":"silo","params":{"quality":0,"hole":0.9}}'
[ "$code" = 200 ] && [ "$(field scene)" = silo ] && [ "$(field run_id)" -gt "$run0" ] && ok "switch to silo starts a new run" || bad "switch: $code $body"
# no experiment under the settle drag: refused with the seconds left, as long as the grains settle
req POST "$S/actions" "$TA" '{"type":"open_hole"}'
left=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["error"].get("seconds_left", 0))' <<<"$body" 2>/dev/null)
if [ "$code" = 409 ] && [ "$(field error.code)" = settling ] && awk -v l="$left" 'BEGIN { exit !(l > 0 && l < 20) }'; then
  ok "open_hole while the grains settle: 409 settling, at most $left s left"
else
  bad "open_hole while settling: $code $body"
fi
req PATCH "$S/params" "$TA" '{"hole":0.8}'
[ "$code" = 409 ] && [ "$(field error.code)" = settling ] && ok "a parameter change while settling: 409 settling" || bad "hole while settling: $code $body"
settled=""
for _ in $(seq 300); do # the grains rest within a few seconds of simulated time
  req GET "$S" ""
  [ "$(field settling_left)" = 0.0 ] && settled=yes && break
  sleep 0.1
done
[ -n "$settled" ] && ok "the silo settles (settling_left 0 at t = $(field t) s)" || bad "the silo never settled: $body"
req PATCH "$S/params" "$TA" '{"hole":0.8}'
[ "$code" = 200 ] && [ "$(field params.hole)" = 0.8 ] && ok "the hole changes live once settled" || bad "hole once settled: $code $body"
req PATCH "$S/params" "$TA" '{"hole":1.5}'
[ "$code" = 422 ] && grep -q "too wide for this silo" <<<"$body" && ok "a hole wider than the silo takes live: $(field error.message)" || bad "hole 1.5 live: $code $body"
req POST "$S/actions" "$TA" '{"type":"open_hole"}'
[ "$code" = 200 ] && ok "open_hole in the silo" || bad "open_hole: $code $body"

# ---- isolation: kill -9 one worker ----------------------------------------------------------------
req POST /api/sessions "" '{"scene":"pour","params":{"quality":0}}'
B=$(field id)
sleep 0.3
wpid=$(pgrep -n -P "$dpid" grainlab-worke)
kill -KILL "$wpid"
failed=""
for _ in $(seq 20); do
  sleep 0.1
  req GET "/api/sessions/$B" ""
  [ "$(field state)" = failed ] && failed=$(field reason) && break
done
[ -n "$failed" ] && ok "kill -9 of its worker fails session B within 2 s: $failed" || bad "B not failed: $body"
grep -q "signal 9" <<<"$failed" && ok "the reason names the signal" || bad "reason: $failed"
req GET "$S" ""
t0=$(field t)
sleep 0.5
req GET "$S" ""
t1=$(field t)
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b > a) }' && ok "session A keeps stepping ($t0 -> $t1 s)" || bad "A stopped: $t0 $t1"
req GET /healthz ""
[ "$code" = 200 ] && ok "healthz stays 200" || bad "healthz $code"
req POST "/api/sessions/$B/actions" "$(cat "$tmp/admin")" '{"type":"pause"}'
[ "$code" = 403 ] && ok "admin token cannot control (only list and end)" || bad "admin control: $code"

# ---- limits broken on purpose (test builds): only that session ends ---------------------------
if [ "$test_commands" = --test-commands ]; then
  req DELETE "/api/sessions/$B" "$(cat "$tmp/admin")"
  for kind in hog:memory syscall:forbidden hang:heartbeat; do
    req POST /api/sessions "" '{"scene":"pour","params":{"quality":0}}'
    C=$(field id)
    TC=$(field control_token)
    req POST "/api/sessions/$C/actions" "$TC" "{\"type\":\"test_${kind%%:*}\"}"
    req GET "/api/sessions/$C" ""
    reason=$(field reason 2>/dev/null)
    if [ "$(field state)" = failed ] && grep -q "${kind#*:}" <<<"$reason"; then
      ok "test_${kind%%:*} fails only its session: $reason"
    else
      bad "test_${kind%%:*}: $body"
    fi
    req GET "$S" ""
    [ "$(field state)" = running ] || [ "$(field state)" = asleep ] && ok "session A still $(field state)" || bad "A: $body"
    req DELETE "/api/sessions/$C" "$TC"
  done
  req POST /api/sessions "" '{"scene":"pour","params":{"quality":0}}'
  B=$(field id)
fi

# ---- the session limit: only live sessions hold a slot ------------------------------------------
# fill: create sessions until the limit refuses one; their ids and control tokens land in
# $extra_ids/$extra_tokens, the refusal in $code/$body
extra_ids=()
extra_tokens=()
fill() {
  for _ in 1 2 3 4; do
    req POST /api/sessions "" '{"scene":"tilt","params":{"quality":0}}'
    [ "$code" = 201 ] || return
    extra_ids+=("$(field id)")
    extra_tokens+=("$(field control_token)")
  done
}
req GET /api/sessions "$(cat "$tmp/admin")"
live=$(python3 -c 'import json,sys; print(sum(s["state"] not in ("failed", "ended") for s in json.load(sys.stdin)["sessions"]))' <<<"$body")
fill
wc_=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["error"]["code"])' <<<"$body" 2>/dev/null)
[ "$code" = 429 ] && [ "$wc_" = too_many_sessions ] && [ $((live + ${#extra_ids[@]})) = 3 ] &&
  ok "with $live live (a failed one holds no slot), ${#extra_ids[@]} more, then 429 too_many_sessions" ||
  bad "limit: $live live + ${#extra_ids[@]} made, then $code $body"
req DELETE "/api/sessions/$B" "$(cat "$tmp/admin")"
[ "$code" = 200 ] && ok "admin ends session B" || bad "admin delete: $code $body"
req GET "/api/sessions/$B" ""
[ "$code" = 404 ] && ok "B is gone" || bad "B still there: $code"
fill
last=$((${#extra_ids[@]} - 1))
req POST "/api/sessions/${extra_ids[$last]}/actions" "${extra_tokens[$last]}" '{"type":"finish"}'
req POST /api/sessions "" '{"scene":"pour","params":{"quality":0}}'
[ "$code" = 201 ] && ok "a finished session gives its slot back at once" || bad "after finish: $code $body"
D=$(field id)
TD=$(field control_token)
wpid=$(pgrep -n -P "$dpid" grainlab-worke)
kill -KILL "$wpid"
for _ in $(seq 40); do
  req GET "/api/sessions/$D" ""
  [ "$(field state)" = failed ] && break
  sleep 0.05
done
req POST /api/sessions "" '{"scene":"tilt","params":{"quality":0}}'
[ "$code" = 201 ] && ok "a failed session gives its slot back at once" || bad "after a failure: $code $body"
extra_ids+=("$(field id)")
extra_tokens+=("$(field control_token)")
req POST "/api/sessions/$D/scene" "$TD" '{"scene":"silo","params":{"quality":0}}'
ecode=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["error"]["code"])' <<<"$body" 2>/dev/null)
[ "$code" = 429 ] && [ "$ecode" = too_many_sessions ] &&
  ok "a failed session starts again only with a free slot (429)" || bad "revive at the limit: $code $body"
req DELETE "/api/sessions/$D" "$TD"
last=$((${#extra_ids[@]} - 1))
req DELETE "/api/sessions/${extra_ids[$last]}" "${extra_tokens[$last]}"
unset "extra_ids[$last]" "extra_tokens[$last]"
req POST /api/sessions "" '{"scene":"pour","params":{"quality":0}}'
D=$(field id)
TD=$(field control_token)
req POST "/api/sessions/$D/actions" "$TD" '{"type":"finish"}'
req POST "/api/sessions/$D/scene" "$TD" '{"scene":"silo","params":{"quality":0}}'
ecode=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["error"]["code"])' <<<"$body" 2>/dev/null)
req GET "/api/sessions/$D" ""
[ "$ecode" = session_failed ] && [ "$(field state)" = ended ] && [ "$(field scene)" = pour ] &&
  ok "a scene switch after finish is refused (409, the stream is closed) and changes nothing" ||
  bad "switch after finish: $ecode $body"
req DELETE "/api/sessions/$D" "$TD"

# a replay refused at the session limit frees the run's event script (the ASan build's leak check
# at exit, below, fails otherwise)
fill
req POST "/api/runs/$RUN_A/replay" "" "{}"
ecode=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["error"]["code"])' <<<"$body" 2>/dev/null)
[ "$code" = 429 ] && [ "$ecode" = too_many_sessions ] && ok "a replay at the limit: 429" || bad "replay at the limit: $code $body"
req POST "/api/runs/$RUN_A/fork" "" '{"params":{"mu":0.3}}'
[ "$code" = 429 ] && ok "a fork at the limit: 429" || bad "fork at the limit: $code $body"
for i in "${!extra_ids[@]}"; do
  req DELETE "/api/sessions/${extra_ids[$i]}" "${extra_tokens[$i]}"
done

# a scene switch racing a DELETE: whichever wins, no worker is left running for a deleted session
race=${GRAINLAB_RACE_ROUNDS:-30}
for _ in $(seq "$race"); do
  req POST /api/sessions "" '{"scene":"pour","params":{"quality":0}}'
  R=$(field id)
  TR=$(field control_token)
  curl -s -o /dev/null -X DELETE -H "Authorization: Bearer $TR" "$base/api/sessions/$R" &
  p1=$!
  curl -s -o /dev/null -X POST -H "Authorization: Bearer $TR" -H 'Content-Type: application/json' --data-binary '{"scene":"tilt","params":{"quality":0}}' "$base/api/sessions/$R/scene" &
  p2=$!
  wait "$p1" "$p2" # not the daemon, also a child of this shell
done
sleep 0.5
req GET /api/sessions ""
live=$(python3 -c 'import json,sys; print(len(json.load(sys.stdin)["sessions"]))' <<<"$body")
nworkers=$(pgrep -c -P "$dpid" grainlab-worke)
[ "$nworkers" = "$live" ] && ok "$race switch/DELETE races: $nworkers workers for $live sessions" ||
  bad "switch/DELETE races left $nworkers workers for $live sessions"

# ---- SIGTERM ----------------------------------------------------------------------------------------
workers=$(pgrep -P "$dpid" | tr '\n' ' ')
# twice: the second arrives while the daemon is ending its sessions, and must not kill it
kill -TERM "$dpid"
sleep 0.02
kill -TERM "$dpid" 2>/dev/null
for _ in $(seq 100); do
  kill -0 "$dpid" 2>/dev/null || break
  sleep 0.05
done
if ! kill -0 "$dpid" 2>/dev/null; then
  wait "$dpid"
  rc=$?
  [ "$rc" = 0 ] && ok "SIGTERM: exit 0 within 5 s" || bad "exit status $rc"
  left=""
  for w in $workers; do kill -0 "$w" 2>/dev/null && left+=" $w"; done
  [ -z "$workers" ] && bad "no workers seen before SIGTERM"
  [ -z "$left" ] && ok "none of its workers ($workers) is left" || bad "workers left behind:$left"
  open_runs=$(sqlite3 "$tmp/data/grainlab.db" 'SELECT count(*) FROM runs WHERE ended_at IS NULL')
  all_runs=$(sqlite3 "$tmp/data/grainlab.db" 'SELECT count(*) FROM runs')
  [ "$open_runs" = 0 ] && [ "$all_runs" -gt 0 ] && ok "every run ($all_runs) is closed" ||
    bad "runs left open: $open_runs of $all_runs"
  dpid=
else
  bad "daemon still running 5 s after SIGTERM"
fi

# ---- configuration: a config file, and bad settings refused before anything starts --------------
cat >"$tmp/conf" <<CONF
# a test configuration
http-port = 0
ws-port = 0
data-dir = $tmp/data2
max-sessions = 1
CONF
"$daemon" --config "$tmp/conf" >"$tmp/out2" 2>"$tmp/err2" &
d2=$!
for _ in $(seq 100); do grep -q '^listening' "$tmp/out2" && break; sleep 0.05; done
port2=$(sed -n 's/^listening http=\([0-9]*\) ws=.*/\1/p' "$tmp/out2")
base="http://127.0.0.1:$port2"
req POST /api/sessions "" '{"scene":"pour","params":{"quality":0}}'
c1=$code
req POST /api/sessions "" '{"scene":"pour","params":{"quality":0}}'
[ "$c1" = 201 ] && [ "$code" = 429 ] && [ -d "$tmp/data2" ] && ok "--config sets ports, data dir and max-sessions 1" || bad "config: $c1 $code"
kill -TERM "$d2"
wait "$d2"
for args in "--http-port 70000" "--bind nowhere" "--max-sessions 0" "--worker-memory-mb 1" "--colour blue" "--config $tmp/missing"; do
  # shellcheck disable=SC2086
  timeout 5 "$daemon" $args >"$tmp/o" 2>"$tmp/e"
  rc=$?
  [ "$rc" = 2 ] && [ "$(wc -l <"$tmp/e")" = 1 ] && [ ! -s "$tmp/o" ] && ok "grainlabd $args: exit 2, $(cat "$tmp/e")" || bad "grainlabd $args: exit $rc $(cat "$tmp/e")"
done
echo "bad-line" >"$tmp/conf2"
timeout 5 "$daemon" --config "$tmp/conf2" >/dev/null 2>"$tmp/e"
[ $? = 2 ] && ok "a config line that is not 'name = value' is refused" || bad "bad config accepted"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
