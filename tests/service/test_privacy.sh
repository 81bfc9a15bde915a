#!/usr/bin/env bash
# A private session's record is as private as the session (issue 16, item 4): its runs, events,
# samples, replays and forks need its viewer or control token or the admin's (404 otherwise, so
# run ids cannot be probed), also after it ended and across a restart; the store keeps only the
# tokens' SHA-256; /metrics names no private session; and a run's events come a page at a time.
set -u
# the system python3 first: a version manager's shim costs a second per call, and this test makes many
PATH=/usr/bin:$PATH
daemon=${1:?usage: test_privacy.sh grainlabd}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
echo 'privacy-admin-token-0123456789' >"$tmp/admin"
ADMIN=$(cat "$tmp/admin")
start_daemon "$daemon" --static-dir "$tmp" --admin-token-file "$tmp/admin"
db="$tmp/data/grainlab.db"

j() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
# create SCENE PRIVATE LABEL: sets sid, token, vtoken, run
create() {
  curl -s -X POST "$base/api/sessions" \
    -H "Content-Type: application/json" --data-binary "{\"scene\":\"$1\",\"params\":{\"amount\":10},\"private\":$2,\"label\":\"$3\"}" >"$tmp/created"
  sid=$(j 'd["id"]' <"$tmp/created")
  token=$(j 'd["control_token"]' <"$tmp/created")
  vtoken=$(j 'd.get("viewer_token", "")' <"$tmp/created")
  run=$(j 'd["run_id"]' <"$tmp/created")
}
# get PATH [TOKEN]: sets code and body
get() {
  if [ -n "${2:-}" ]; then
    code=$(curl -s -o "$tmp/body" -w '%{http_code}' -H "Authorization: Bearer $2" "$base$1")
  else
    code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$base$1")
  fi
  body=$(cat "$tmp/body")
}
# post PATH DATA [TOKEN]: sets code and body
post() {
  code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X POST ${3:+-H "Authorization: Bearer $3"} \
    -H "Content-Type: application/json" --data-binary "$2" "$base$1")
  body=$(cat "$tmp/body")
}
# ids TOKEN: the run ids GET /api/runs lists with that token ("" none), sorted
ids() {
  get '/api/runs?sort=id&limit=500' "$1"
  echo "$body" | j '[r["id"] for r in d["runs"]]'
}

create pour false "public"
P=$sid PT=$token PR=$run PV=$vtoken
create pour true "secret"
Q=$sid QT=$token QV=$vtoken QR=$run
create pour true "other"
O=$sid OT=$token OR=$run
[ -z "$PV" ] && [ ${#QV} = 64 ] && ok "a private session has a viewer token, a public one none" || bad "viewer tokens: '$PV' '$QV'"
sleep 1
curl -s -o /dev/null -X POST "$base/api/sessions/$Q/actions" -H "Authorization: Bearer $QT" -H "Content-Type: application/json" --data-binary '{"type":"spout","x":0.2,"z":0.1}'
# a third event that does not hang on how far the pile got (a state change did, on a fast machine)
curl -s -o /dev/null -X PATCH "$base/api/sessions/$Q/params" -H "Authorization: Bearer $QT" -H "Content-Type: application/json" --data-binary '{"mu":0.6}'

# a private session's particles, like its stream, need its viewer token (issue 19's snapshots)
get "/api/sessions/$Q/snapshot?format=csv"
[ "$code" = 404 ] || [ "$code" = 403 ] && ! grep -q '^id,' "$tmp/body" && ok "a private session's snapshot without a token: $code" || bad "private snapshot, no token: $code $(head -c 200 "$tmp/body")"
get "/api/sessions/$Q/snapshot?format=csv" "$QV"
[ "$code" = 200 ] && head -1 "$tmp/body" | grep -q '^id,x_m,' && ok "and with its viewer token: 200, CSV" || bad "private snapshot with viewer token: $code $(head -c 200 "$tmp/body")"

# ---- /metrics names no private session (while they are live) ------------------------------------
curl -s "$base/metrics" >"$tmp/metrics"
grep -q "session=\"$P\"" "$tmp/metrics" && ok "/metrics names the public session" || bad "/metrics lacks $P"
if grep -q -e "$Q" -e "$O" "$tmp/metrics"; then
  bad "/metrics names a private session: $(grep -e "$Q" -e "$O" "$tmp/metrics" | head -3)"
else
  ok "/metrics names no private session id"
fi
grep -qx 'grainlab_sessions 3' "$tmp/metrics" && ok "/metrics still counts all 3 sessions" || bad "session count: $(grep '^grainlab_sessions ' "$tmp/metrics")"

# ---- who sees which run in the list ----------------------------------------------------------
check_list() { # NAME TOKEN WANT
  local got
  got=$(ids "$2")
  [ "$got" = "$3" ] && ok "GET /api/runs $1: $got" || bad "GET /api/runs $1: $got, want $3"
}
check_list "anonymous lists the public run only" "" "[$PR]"
check_list "with a wrong token: the public run only" "0000000000000000000000000000000000000000000000000000000000000000" "[$PR]"
check_list "with the viewer token: also that session's run" "$QV" "[$PR, $QR]"
check_list "with the control token: also that session's run" "$QT" "[$PR, $QR]"
check_list "with the other session's token: its run, not the first's" "$OT" "[$PR, $OR]"
check_list "with the admin token: every run" "$ADMIN" "[$PR, $QR, $OR]"
get "/api/runs?session=$Q"
[ "$code" = 200 ] && [ "$(echo "$body" | j 'd["total"]')" = 0 ] && ok "?session=<private id> anonymous: total 0" || bad "session filter: $code $body"

# ---- one run, its samples, replay and fork: 404 without the right token ------------------------
while IFS='|' read -r what path; do
  path=${path//@Q/$QR}
  for who in none wrong other viewer control admin; do
    case $who in
      none) t= want=404 ;;
      wrong) t=0000000000000000000000000000000000000000000000000000000000000000 want=404 ;;
      other) t=$OT want=404 ;;
      viewer) t=$QV want=200 ;;
      control) t=$QT want=200 ;;
      admin) t=$ADMIN want=200 ;;
    esac
    get "$path" "$t"
    if [ "$code" = "$want" ]; then
      ok "$what with $who token: $code"
    else
      bad "$what with $who token: $code, want $want: ${body:0:200}"
    fi
  done
done <<'EOF'
GET run|/api/runs/@Q
GET samples|/api/runs/@Q/samples
GET samples CSV|/api/runs/@Q/samples?format=csv
EOF
get "/api/runs/$QR"
[ "$(echo "$body" | j '(d["error"]["code"], d["error"]["message"])')" = "$(curl -s "$base/api/runs/999999" | j '(d["error"]["code"], d["error"]["message"].replace("999999", "'"$QR"'"))')" ] &&
  ok "a hidden run's 404 reads as a missing run's" || bad "hidden vs missing: $body"
get "/api/runs/$PR"
[ "$code" = 200 ] && ok "a public run needs no token" || bad "public run: $code"

# the session ends; its tokens still open its run
curl -s -o /dev/null -X DELETE "$base/api/sessions/$Q" -H "Authorization: Bearer $QT"
for t in "$QV" "$QT"; do
  get "/api/runs/$QR" "$t"
  [ "$code" = 200 ] && [ "$(echo "$body" | j 'd["end_reason"]')" = deleted ] && ok "after the session ended, its token still reads its run" ||
    bad "ended session's run: $code ${body:0:200}"
done
get "/api/runs/$QR"
[ "$code" = 404 ] && ok "after the session ended, anonymous still gets 404" || bad "ended anonymous: $code"
# its final state as a snapshot (a replay of it): the same rule
for who in none other; do
  t=
  [ "$who" = other ] && t=$OT
  get "/api/runs/$QR/snapshot?format=csv" "$t"
  [ "$code" = 404 ] && ok "a private run's snapshot, $who token: 404" || bad "private run snapshot, $who token: $code ${body:0:200}"
done
get "/api/runs/$QR/snapshot?format=csv" "$QV"
[ "$code" = 200 ] && head -1 "$tmp/body" | grep -q '^id,x_m,' && ok "and with its viewer token: 200, CSV" || bad "private run snapshot with viewer token: $code ${body:0:200}"

# replay and fork
for kind in replay fork; do
  post "/api/runs/$QR/$kind" '{}'
  [ "$code" = 404 ] && ok "POST $kind of a private run, anonymous: 404" || bad "anonymous $kind: $code $body"
  post "/api/runs/$QR/$kind" '{}' "$OT"
  [ "$code" = 404 ] && ok "POST $kind of a private run, another session's token: 404" || bad "other $kind: $code $body"
  post "/api/runs/$QR/$kind" '{"private":false}' "$QV"
  [ "$code" = 422 ] && [ "$(echo "$body" | j 'd["error"]["code"]')" = private_run ] &&
    ok "POST $kind of a private run as a public session: 422 private_run" || bad "public $kind: $code $body"
  post "/api/runs/$QR/$kind" '{}' "$QV"
  if [ "$code" = 201 ] && [ "$(echo "$body" | j '(d["private"], len(d["viewer_token"]))')" = "(True, 64)" ]; then
    ok "POST $kind with the viewer token: 201, a private session"
  else
    bad "viewer $kind: $code $body"
  fi
  ns=$(echo "$body" | j 'd["id"]')
  nt=$(echo "$body" | j 'd["control_token"]')
  curl -s -o /dev/null -X DELETE "$base/api/sessions/$ns" -H "Authorization: Bearer $nt"
done
curl -s -o /dev/null -X DELETE "$base/api/sessions/$P" -H "Authorization: Bearer $PT"
post "/api/runs/$PR/replay" '{}'
[ "$code" = 201 ] && [ "$(echo "$body" | j 'd["private"]')" = False ] && ok "a public run replays anonymously, as a public session" || bad "public replay: $code $body"
curl -s -o /dev/null -X DELETE "$base/api/sessions/$(echo "$body" | j 'd["id"]')" -H "Authorization: Bearer $(echo "$body" | j 'd["control_token"]')"

# ---- the store keeps hashes, never the tokens -------------------------------------------------
want_hash=$(printf %s "$QV" | sha256sum | cut -c1-64)
[ "$(sqlite3 "$db" "SELECT viewer_hash FROM sessions WHERE id = '$Q'")" = "$want_hash" ] &&
  [ "$(sqlite3 "$db" "SELECT control_hash FROM sessions WHERE id = '$Q'")" = "$(printf %s "$QT" | sha256sum | cut -c1-64)" ] &&
  ok "sessions keep the SHA-256 of the viewer and control tokens" || bad "hashes: $(sqlite3 "$db" "SELECT * FROM sessions WHERE id = '$Q'")"
sqlite3 "$db" 'PRAGMA wal_checkpoint' >/dev/null
if cat "$tmp/data/"grainlab.db* | grep -a -q -e "$QV" -e "$QT" -e "$PT"; then
  bad "a token is in the database files in clear"
else
  ok "no token in clear in the database files"
fi
grep -q -e "$QV" -e "$QT" "$tmp/err" "$tmp/out" && bad "a token is in the log" || ok "no token in the log"

# ---- across a restart -------------------------------------------------------------------------
kill -TERM "$dpid"
wait "$dpid"
dpid=
start_daemon "$daemon" --static-dir "$tmp" --admin-token-file "$tmp/admin"
check_list "after a restart, anonymous: public runs (and the public replay's)" "" "$(sqlite3 "$db" "SELECT json_group_array(r.id) FROM (SELECT r.id FROM runs r JOIN sessions s ON s.id = r.session_id WHERE s.private = 0 ORDER BY r.id) r" | tr -d ' ' | sed 's/,/, /g')"
get "/api/runs/$QR" "$QV"
[ "$code" = 200 ] && ok "after a restart, the viewer token still reads the run" || bad "after restart: $code $body"
get "/api/runs/$OR"
[ "$code" = 404 ] && ok "after a restart, anonymous: 404 for the other private run" || bad "after restart anon: $code"

# ---- a run's events, a page at a time ----------------------------------------------------------
get "/api/runs/$QR" "$QV"
total=$(echo "$body" | j 'd["events_total"]')
all=$(echo "$body" | j '[e["id"] for e in d["events"]]')
[ "$total" -ge 3 ] && [ "$(echo "$body" | j 'len(d["events"]) == d["events_total"] and d["events_next"] is None')" = True ] &&
  ok "one page holds all $total events: events_next null" || bad "events: ${body:0:400}"
got=()
after=0
for _ in $(seq 20); do
  get "/api/runs/$QR?events_limit=2&events_after=$after" "$QV"
  [ "$code" = 200 ] || break
  got+=($(echo "$body" | j '" ".join(str(e["id"]) for e in d["events"])'))
  [ "$(echo "$body" | j 'len(d["events"]) <= 2')" = True ] || bad "a page of more than 2"
  after=$(echo "$body" | j 'd["events_next"]')
  [ "$after" = None ] && break
done
[ "[$(echo "${got[@]}" | sed 's/ /, /g')]" = "$all" ] && ok "pages of 2, followed by events_next, give the same $total events in order" ||
  bad "paged ${got[*]} vs all $all"
while IFS='|' read -r query; do
  get "/api/runs/$PR?$query"
  [ "$code" = 400 ] && echo "$body" | j 'd["error"]["code"]' >/dev/null 2>&1 && ok "GET run ?$query: 400 $(echo "$body" | j 'd["error"]["code"]')" ||
    bad "GET run ?$query: $code $body"
done <<'EOF'
events_limit=0
events_limit=1001
events_limit=2.5
events_after=-1
events_after=abc
colour=red
events_limit=1&events_limit=2
EOF

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
