#!/usr/bin/env bash
# The SQLite store end to end: what a session's runs leave in DATA_DIR/grainlab.db, the run
# queries (filters, sorting, paging, and a table of bad input), samples as JSON and CSV, a
# headless replay reproducing each run's recorded digest (parameter changes and actions over REST
# and the websocket included), the fluid and gravity models' runs (their own measurements,
# live and restart-only parameters, replays), and crash safety under kill -9.
set -u
daemon=${1:?usage: test_store.sh grainlabd grainlab ws_probe [--test-commands]}
cli=${2:?usage: test_store.sh grainlabd grainlab ws_probe [--test-commands]}
probe=${3:?usage: test_store.sh grainlabd grainlab ws_probe [--test-commands]}
test_commands=${4:-}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
start_daemon "$daemon" --static-dir "$tmp"
db="$tmp/data/grainlab.db"
[ -f "$db" ] && ok "the database is DATA_DIR/grainlab.db" || bad "no $db"

# one catalogue: the CLI prints what GET /api/scenes serves, byte for byte
if [ "$("$cli" scenes)" = "$(curl -s "$base/api/scenes")" ] && "$cli" scenes | grep -q '"name":"pour"'; then
  ok "grainlab scenes prints the JSON of GET /api/scenes"
else
  bad "grainlab scenes and GET /api/scenes differ: $(diff <("$cli" scenes) <(curl -s "$base/api/scenes") | head -c 400)"
fi

j() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
# create SCENE PARAMS [LABEL]: sets sid, token, run
create() {
  curl -s -X POST "$base/api/sessions" \
    -H 'Content-Type: application/json' --data-binary "{\"scene\":\"$1\",\"params\":$2,\"seed\":11,\"label\":\"${3:-}\"}" >"$tmp/created"
  sid=$(j 'd["id"]' <"$tmp/created")
  token=$(j 'd["control_token"]' <"$tmp/created")
  run=$(j 'd["run_id"]' <"$tmp/created")
}
auth() { echo "Authorization: Bearer $1"; }
# get PATH: sets code and body
get() {
  code=$(curl -s -o "$tmp/body" -w '%{http_code}' "${@:2}" "$base$1")
  body=$(cat "$tmp/body")
}
replay_check() { # NAME RUN
  local rec rep
  rec=$(curl -s "$base/api/runs/$2" | j 'd["digest"]')
  rep=$("$cli" replay --db "$db" --run "$2" | j 'd["digest"]')
  if [ -n "$rec" ] && [ "$rec" != None ] && [ "$rec" = "$rep" ]; then
    ok "$1: grainlab replay reproduces the recorded digest $rec"
  else
    bad "$1: recorded digest '$rec', replay '$rep'"
  fi
}

# ---- a run with changes over REST and the websocket, then deleted --------------------------
create pour '{"amount":10}' "lab A"
A=$sid
AT=$token
RA=$run
sleep 1
curl -s -o /dev/null -X PATCH "$base/api/sessions/$A/params" -H "$(auth "$AT")" -H 'Content-Type: application/json' --data-binary '{"mu":0.8,"mur":0.2}'
curl -s -o /dev/null -X POST "$base/api/sessions/$A/actions" -H "$(auth "$AT")" \
  -H 'Content-Type: application/json' --data-binary '{"type":"spout","x":0.3,"z":-0.2}'
"$probe" --port "$wsport" --session "$A" --seconds 1.5 --send "{\"type\":\"auth\",\"token\":\"$AT\"}" \
  --send '{"type":"action","action":{"type":"spout","x":-0.25,"z":0.15}}' >/dev/null
curl -s -o /dev/null -X POST "$base/api/sessions/$A/actions" -H "$(auth "$AT")" -H 'Content-Type: application/json' --data-binary '{"type":"pause"}'
curl -s -o /dev/null -X POST "$base/api/sessions/$A/actions" -H "$(auth "$AT")" -H 'Content-Type: application/json' --data-binary '{"type":"step","n":37}'
curl -s -o /dev/null -X POST "$base/api/sessions/$A/actions" -H "$(auth "$AT")" -H 'Content-Type: application/json' --data-binary '{"type":"resume"}'
sleep 0.5
curl -s -o /dev/null -X DELETE "$base/api/sessions/$A" -H "$(auth "$AT")"
get "/api/runs/$RA"
[ "$code" = 200 ] && ok "GET /api/runs/{id}: 200" || bad "GET run: $code $body"
echo "$body" | j 'd["end_reason"] == "deleted" and d["label"] == "lab A" and d["scene"] == "pour" and d["seed"] == 11 and d["grains"] == 300 and d["engine_version"] != "" and d["ended_at"] > d["started_at"]' |
  grep -q True && ok "the run: scene, seed, label, grains, engine version, times, end reason 'deleted'" ||
  bad "run record: $body"
echo "$body" | j '[e["kind"] for e in d["events"]]' >"$tmp/kinds"
grep -q "'parameter_changed'" "$tmp/kinds" && grep -q "'action'" "$tmp/kinds" && grep -q "'run_started'" "$tmp/kinds" &&
  ok "events recorded with their steps: $(tr -d '\n' <"$tmp/kinds" | head -c 200)" || bad "events: $(cat "$tmp/kinds")"
echo "$body" | j 'sum(1 for e in d["events"] if e["kind"] == "action" and e["detail"].get("via") == "websocket")' |
  grep -qx 1 && ok "the websocket's action is in the record" || bad "no websocket action in the record"
# the pile's angle is not a result to ask for: the spout moves at whatever step the requests
# arrive, and a pile spread by two moves may have no fitted slope (an ASan run had none)
echo "$body" | j 'd["params"]["mu"] == 0.5 and d["results"].get("alive") == 300 and d["results"].get("top", 0) > 0 and d["samples"] >= 8' |
  grep -q True && ok "start parameters, final results (alive, top) and samples recorded" || bad "params/results: $body"
replay_check "deleted run, with REST and websocket changes, pause and step" "$RA"

# ---- samples: JSON and CSV ----------------------------------------------------------------------
get "/api/runs/$RA/samples"
echo "$body" | j 'd["columns"][:3] == ["t","steps","state"] and "angle" in d["columns"] and len(d["rows"]) >= 8 and all(abs(r[0]*4 - round(r[0]*4)) < 1e-9 for r in d["rows"])' |
  grep -q True && ok "samples as JSON, every 0.25 s" || bad "samples JSON: ${body:0:300}"
rows_json=$(echo "$body" | j 'len(d["rows"])')
curl -s -D "$tmp/headers" -o "$tmp/csv" "$base/api/runs/$RA/samples?format=csv"
head -1 "$tmp/csv" | grep -q '^t,steps,state,angle,top' && ok "CSV with ?format=csv: $(head -1 "$tmp/csv" | tr -d '\r')" ||
  bad "CSV header: $(head -1 "$tmp/csv")"
[ $(($(wc -l <"$tmp/csv") - 1)) = "$rows_json" ] && ok "CSV and JSON hold the same $rows_json samples" ||
  bad "CSV rows $(($(wc -l <"$tmp/csv") - 1)) vs JSON $rows_json"
grep -qi '^content-type: text/csv' "$tmp/headers" && grep -qi "attachment; filename=\"run-$RA.csv\"" "$tmp/headers" &&
  ok "CSV served as a download" || bad "CSV headers: $(cat "$tmp/headers")"
curl -s -H 'Accept: text/csv' "$base/api/runs/$RA/samples" | head -1 | grep -q '^t,steps' &&
  ok "CSV with Accept: text/csv" || bad "Accept: text/csv did not give CSV"

# ---- a switched run; a failed one ---------------------------------------------------------------
create silo '{"quality":0,"hole":1.1}' "lab B"
B=$sid
BT=$token
RB=$run
sleep 1
curl -s -o /dev/null -X POST "$base/api/sessions/$B/actions" -H "$(auth "$BT")" -H 'Content-Type: application/json' --data-binary '{"type":"open_hole"}'
sleep 2
curl -s -o "$tmp/switched" -X POST "$base/api/sessions/$B/scene" -H "$(auth "$BT")" \
  -H 'Content-Type: application/json' --data-binary '{"scene":"pour","params":{"amount":10}}'
RB2=$(j 'd["run_id"]' <"$tmp/switched")
get "/api/runs/$RB"
echo "$body" | j 'd["end_reason"]' | grep -qx switched && ok "a switched run ends 'switched'" || bad "switched: $body"
replay_check "switched silo run with the hole opened" "$RB"
# ---- a stored run's final state as a snapshot (issue 19): replayed in a worker of its own to the
# recorded end; read back with python3-vtk9, every value hashes to the recorded digest
rdigest=$(curl -s "$base/api/runs/$RB" | j 'd["digest"]')
rsteps=$(curl -s "$base/api/runs/$RB" | j 'd["end_steps"]')
grains=$("$cli" replay --db "$db" --run "$RB" | j 'd["grains"]')
for f in csv vtk; do
  code=$(curl -s -D "$tmp/rsnap-$f.h" -o "$tmp/rsnap.$f" -w '%{http_code}' "$base/api/runs/$RB/snapshot?format=$f")
  [ "$code" = 200 ] && grep -qi "filename=\"run-$RB-step-$rsteps.$f\"" "$tmp/rsnap-$f.h" &&
    ok "GET /api/runs/{id}/snapshot?format=$f: 200, $(wc -c <"$tmp/rsnap.$f") bytes, named after the run's end step" ||
    bad "run snapshot $f: $code $(head -c 300 "$tmp/rsnap.$f")"
done
if /usr/bin/python3 "$(dirname "$0")/../support/check_snapshot.py" "$tmp/rsnap.csv" "$tmp/rsnap.vtk" "$rdigest" "$grains" >"$tmp/check.out" 2>&1; then
  ok "the run's snapshot holds its $grains grains at its end, bit for bit (recorded digest $rdigest)"
else
  bad "run snapshot contents: $(grep -v '^ok' "$tmp/check.out" | head -c 600)"
fi
# issue 32: the run was replayed once; both its snapshots are kept with it, named by its recorded
# end digest, and 15 more asks at once (either format) are answered from them, without a replay
replays() { curl -s "$base/metrics" | sed -n 's/^grainlab_snapshot_replays_total //p'; }
kept=$(find "$tmp/data/snapshots" -name "run-$RB-$rdigest-$rsteps.*" | sed 's/.*\.//' | sort | tr '\n' ' ')
[ "$kept" = "csv vtk " ] && [ "$(replays)" = 1 ] &&
  ok "one replay made the run's two snapshots, kept as run-$RB-$rdigest-$rsteps.csv|vtk" ||
  bad "kept snapshots: '$kept', replays $(replays): $(ls "$tmp/data/snapshots")"
asks=()
for i in $(seq 15); do
  f=$([ $((i % 2)) = 0 ] && echo csv || echo vtk)
  curl -s -o "$tmp/again-$i.$f" -w '%{http_code}\n' "$base/api/runs/$RB/snapshot?format=$f" >"$tmp/again-$i.code" &
  asks+=($!)
done
wait "${asks[@]}"
same=0
for i in $(seq 15); do
  f=$([ $((i % 2)) = 0 ] && echo csv || echo vtk)
  [ "$(cat "$tmp/again-$i.code")" = 200 ] && cmp -s "$tmp/again-$i.$f" "$tmp/rsnap.$f" && same=$((same + 1))
done
[ "$same" = 15 ] && [ "$(replays)" = 1 ] &&
  ok "15 more asks at once: 15 times 200 with the same bytes, and still 1 replay" ||
  bad "kept snapshots served: $same of 15 the same, replays $(replays)"
# ---- replays share replay-slots (2) workers, one per address at a time (issue 32) --------------
# three finished runs of 60 s each (paused, then stepped 14 400 steps at once, so that their length
# does not hang on how fast this machine runs them); a replay is held mid-way by stopping its
# worker (SIGSTOP), so that what waits behind it is seen for certain, then let go
pool_runs=() pool_sids=() pool_toks=()
for i in 1 2 3; do
  create pour '{"quality":0}' "pool $i"
  pool_runs+=("$run") pool_sids+=("$sid") pool_toks+=("$token")
  for a in '{"type":"pause"}' '{"type":"step","n":14400}'; do
    curl -s -o /dev/null -X POST "$base/api/sessions/$sid/actions" -H "$(auth "$token")" \
      -H 'Content-Type: application/json' --data-binary "$a"
  done
done
for i in 0 1 2; do
  for _ in $(seq 600); do # 60 s: a loaded machine steps slowly
    get "/api/sessions/${pool_sids[$i]}"
    [ "$(j 'd["steps"] >= 14400' <<<"$body")" = True ] && break
    sleep 0.1
  done
  curl -s -o /dev/null -X DELETE "$base/api/sessions/${pool_sids[$i]}" -H "$(auth "${pool_toks[$i]}")"
done
workers() { pgrep -P "$dpid" -f grainlab-worker | sort; }
# held_replay RUN ADDRESS OUT: asks for RUN's snapshot from ADDRESS in the background, stops the
# replay's worker as soon as it appears; sets held_pid (the worker) and ask_pid (the curl)
held_replay() {
  local before
  before=$(workers)
  curl -s --interface "$2" -o "$3" -w '%{http_code}' "$base/api/runs/$1/snapshot" >"$3.code" &
  ask_pid=$!
  held_pid=
  for _ in $(seq 1000); do
    held_pid=$(comm -13 <(echo "$before") <(workers) | head -1)
    [ -n "$held_pid" ] && kill -STOP "$held_pid" && break
    sleep 0.005
  done
}
ask() { curl -s --interface "$2" -o "$tmp/pool.body" -w '%{http_code}' "$base/api/runs/$1/snapshot"; }
held_replay "${pool_runs[0]}" 127.0.0.1 "$tmp/pool1"
a_pid=$held_pid a_ask=$ask_pid
mine=$(ask "${pool_runs[1]}" 127.0.0.1)
mine_code=$(j 'd["error"]["code"]' <"$tmp/pool.body" 2>/dev/null)
held_replay "${pool_runs[1]}" 127.0.0.2 "$tmp/pool2"
b_pid=$held_pid b_ask=$ask_pid
full=$(ask "${pool_runs[2]}" 127.0.0.3)
full_code=$(j 'd["error"]["code"]' <"$tmp/pool.body" 2>/dev/null)
kill -CONT "$a_pid" "$b_pid" 2>/dev/null
wait "$a_ask" "$b_ask"
after=$(ask "${pool_runs[2]}" 127.0.0.3)
[ -n "$a_pid" ] && [ -n "$b_pid" ] && [ "$mine $mine_code" = "429 replay_busy" ] &&
  [ "$full $full_code" = "429 replay_busy" ] && [ "$(cat "$tmp/pool1.code") $(cat "$tmp/pool2.code")" = "200 200" ] &&
  [ "$after" = 200 ] &&
  ok "replays: an address's second waits for its first (429), a third address waits while both slots replay (429), then all three are made" ||
  bad "replay pool: workers '$a_pid' '$b_pid', same address $mine $mine_code, pool full $full $full_code, held ones $(cat "$tmp/pool1.code") $(cat "$tmp/pool2.code"), after $after"
get "/api/runs/$RB2/snapshot"
[ "$code" = 409 ] && echo "$body" | j 'd["error"]["code"]' | grep -qx not_replayable && ok "a run still going has no final snapshot: 409" || bad "live run snapshot: $code $body"
get "/api/runs/999999/snapshot"
[ "$code" = 404 ] && ok "an unknown run's snapshot: 404" || bad "unknown run snapshot: $code $body"
get "/api/runs/$RB/snapshot?format=ply"
[ "$code" = 400 ] && echo "$body" | j 'd["error"]["code"]' | grep -qx bad_format && ok "a run snapshot in another format: 400 bad_format" || bad "format=ply: $code $body"
if [ -n "$test_commands" ]; then
  curl -s -o /dev/null -X POST "$base/api/sessions/$B/actions" -H "$(auth "$BT")" -H 'Content-Type: application/json' --data-binary '{"type":"test_syscall"}'
  sleep 0.3
  get "/api/runs/$RB2"
  echo "$body" | j 'd["end_reason"]' | grep -qx failed && ok "a run whose worker dies ends 'failed'" || bad "failed: $body"
fi

# ---- a stored run replayed live, and forked with new parameters --------------------------------
want_digest=$(curl -s "$base/api/runs/$RA" | j 'd["digest"]')
want_steps=$(curl -s "$base/api/runs/$RA" | j 'd["end_steps"]')
code=$(curl -s -o "$tmp/replay" -w '%{http_code}' -X POST "$base/api/runs/$RA/replay" -H 'Content-Type: application/json' --data-binary '{}')
[ "$code" = 201 ] && ok "POST /api/runs/{id}/replay: 201, a live session" || bad "replay: $code $(cat "$tmp/replay")"
R=$(j 'd["id"]' <"$tmp/replay")
RT=$(j 'd["control_token"]' <"$tmp/replay")
RR=$(j 'd["run_id"]' <"$tmp/replay")
"$probe" --port "$wsport" --session "$R" --seconds 2 >"$tmp/replay_view"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["frames"] > 15 else 1)' "$tmp/replay_view" &&
  ok "the replay is watchable like any other session" || bad "replay stream: $(cat "$tmp/replay_view")"
for _ in $(seq 100); do
  [ "$(curl -s "$base/api/sessions/$R" | j 'd["state"]')" = paused ] && break
  sleep 0.1
done
got=$(curl -s "$base/api/sessions/$R" | j '(d["state"], d["steps"], d["digest"])')
[ "$got" = "('paused', $want_steps, '$want_digest')" ] &&
  ok "the replay pauses where the run ended, in the very same state: $got" || bad "replay ended as $got, want $want_steps $want_digest"
curl -s -o /dev/null -X DELETE "$base/api/sessions/$R" -H "$(auth "$RT")"
replay_check "the replay's own run" "$RR"
code=$(curl -s -o "$tmp/fork" -w '%{http_code}' -X POST "$base/api/runs/$RA/fork" -H 'Content-Type: application/json' --data-binary '{"params":{"mu":0.3},"label":"forked"}')
[ "$code" = 201 ] && ok "POST /api/runs/{id}/fork: 201" || bad "fork: $code $(cat "$tmp/fork")"
F=$(j 'd["id"]' <"$tmp/fork")
FT=$(j 'd["control_token"]' <"$tmp/fork")
FR=$(j 'd["run_id"]' <"$tmp/fork")
sleep 1.5
got=$(curl -s "$base/api/sessions/$F" | j '(d["state"] in ("running", "asleep"), d["steps"] > '"$want_steps"', d["params"]["mu"], d["label"])')
[ "$got" = "(True, True, 0.3, 'forked')" ] && ok "the fork went past the run's end at once and runs on with mu 0.3" ||
  bad "fork state: $got"
curl -s -o /dev/null -X DELETE "$base/api/sessions/$F" -H "$(auth "$FT")"
get "/api/runs/$FR"
echo "$body" | j '[(e["steps"], e["detail"].get("via")) for e in d["events"] if e["kind"] == "parameter_changed"][-1]' |
  grep -qx "($want_steps, 'fork')" && ok "the fork's record: the new parameter at the run's end step ($want_steps)" ||
  bad "fork events: ${body:0:600}"
replay_check "the fork's own run" "$FR"
while IFS='|' read -r want path data; do
  code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X POST "$base$path" -H 'Content-Type: application/json' --data-binary "$data")
  [ "$code" = "$want" ] && ok "POST $path $data: $code $(j 'd["error"]["code"]' <"$tmp/body")" ||
    bad "POST $path $data: $code $(cat "$tmp/body")"
done <<EOF
400|/api/runs/$RA/fork|{"params":{"nosuch":1}}
422|/api/runs/$RA/fork|{"params":{"mu":99}}
409|/api/runs/$RA/fork|{"params":{"amount":50}}
400|/api/runs/$RA/fork|{"params":{"mu":"high"}}
400|/api/runs/$RA/fork|{"params":[1]}
400|/api/runs/$RA/replay|{"params":{"mu":0.3}}
400|/api/runs/$RA/replay|{"label":5}
404|/api/runs/999999/replay|{}
404|/api/runs/999999/fork|{}
EOF
code=$(curl -s -o /dev/null -w '%{http_code}' "$base/api/runs/$RA/replay")
[ "$code" = 405 ] && ok "GET .../replay: 405" || bad "GET replay: $code"

# ---- the controller finishes an experiment ------------------------------------------------------
create pour '{"amount":10}' "finish"
sleep 1.5
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X POST "$base/api/sessions/$sid/actions" -H "$(auth "$token")" \
  -H 'Content-Type: application/json' --data-binary '{"type":"finish"}')
get "/api/runs/$run"
echo "$body" | j 'd["end_reason"] == "finished" and d["end_steps"] > 0 and "angle" in d["results"]' | grep -q True &&
  [ "$code" = 200 ] && ok "finish: the run ends 'finished' with its results" || bad "finish: $code $body"
[ "$(curl -s "$base/api/sessions/$sid" | j 'd["state"]')" = ended ] && ok "finish: the session has ended" || bad "finish: session state"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/api/sessions/$sid/actions" -H "$(auth "$token")" -H 'Content-Type: application/json' --data-binary '{"type":"resume"}')
[ "$code" = 409 ] && ok "finish: a finished session takes no more changes (409)" || bad "resume after finish: $code"
replay_check "finished run" "$run"
curl -s -o /dev/null -X DELETE "$base/api/sessions/$sid" -H "$(auth "$token")"

# ---- queries: filters, sorting, paging ----------------------------------------------------------
for mu in 0.3 0.6 0.9; do
  create pour "{\"amount\":10,\"mu\":$mu}" "sweep"
  sleep 1.2
  curl -s -o /dev/null -X DELETE "$base/api/sessions/$sid" -H "$(auth "$token")"
done
count() { get "$1"; echo "$body" | j 'd["total"]'; }
[ "$(count '/api/runs?label=sweep')" = 3 ] && ok "filter by label" || bad "label filter: $body"
[ "$(count '/api/runs?label=sweep&param.mu.min=0.5')" = 2 ] && ok "filter by a parameter's minimum" || bad "param min: $body"
[ "$(count '/api/runs?label=sweep&param.mu.min=0.5&param.mu.max=0.7')" = 1 ] && ok "filter by a parameter range" || bad "param range: $body"
[ "$(count '/api/runs?scene=silo')" = 1 ] && ok "filter by scene" || bad "scene filter: $body"
[ "$(count '/api/runs?end_reason=switched')" = 1 ] && ok "filter by end reason" || bad "end_reason filter: $body"
[ "$(count '/api/runs?label=sweep&result.alive.min=1')" = 3 ] && ok "filter by a result" || bad "result filter: $body"
[ "$(count '/api/runs?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z')" -ge 8 ] && ok "filter by time range (ISO 8601)" || bad "time range: $body"
[ "$(count '/api/runs?to=946684800')" = 0 ] && ok "filter by time range (Unix seconds)" || bad "time range unix: $body"
get '/api/runs?label=sweep&sort=-param.mu'
echo "$body" | j '[r["params"]["mu"] for r in d["runs"]]' | grep -qx '\[0.9, 0.6, 0.3\]' && ok "sort by a parameter, descending" || bad "sort: ${body:0:300}"
get '/api/runs?label=sweep&sort=param.mu&limit=1&offset=1'
echo "$body" | j '(len(d["runs"]), d["runs"][0]["params"]["mu"], d["total"])' | grep -qx '(1, 0.6, 3)' && ok "paging: limit and offset" || bad "paging: ${body:0:300}"

# ---- bad queries: 4xx with a JSON error, and the database untouched -----------------------------
while IFS='|' read -r want query; do
  get "/api/runs?$query"
  if [ "$code" = "$want" ] && echo "$body" | j 'd["error"]["code"]' >/dev/null 2>&1; then
    ok "bad query '$query': $code $(echo "$body" | j 'd["error"]["code"]')"
  else
    bad "bad query '$query': $code $body"
  fi
done <<'EOF'
400|colour=red
400|limit=0
400|limit=501
400|limit=1.5
400|limit=abc
400|offset=-1
400|sort=name
400|sort=started_at;DROP%20TABLE%20runs
400|param.mu=0.5
400|param.mu.min=abc
400|param.mu.min=nan
400|param.mu.min=1e999
400|param.mu;DROP%20TABLE%20runs.min=1
400|result.x%27%20OR%201=1--.max=1
400|scene=pour%27%20OR%20%271%27=%271
400|scene=nosuch
400|end_reason=gone
400|from=yesterday
400|label=a&label=b
400|label=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
EOF
get '/api/runs?label=%27%3B%20DELETE%20FROM%20runs%3B--'
[ "$code" = 200 ] && [ "$(echo "$body" | j 'd["total"]')" = 0 ] && ok "a label is only ever a bound value: no match, nothing run" ||
  bad "label injection: $code $body"
for p in "/api/runs/0" "/api/runs/999999" "/api/runs/abc" "/api/runs/1/nothing" "/api/runs/999999/samples"; do
  get "$p"
  [ "$code" = 404 ] && ok "GET $p: 404" || bad "GET $p: $code"
done
# a granular world's `step n` goes to the worker in calls of ~80 steps (its cost budget), some of
# which span two samples: every one is recorded, none only the last of its call
curl -s -X POST "$base/api/sessions" -H 'Content-Type: application/json' --data-binary '{"scene":"pour","params":{"amount":10}}' >"$tmp/stepper"
G=$(j 'd["id"]' <"$tmp/stepper") GT=$(j 'd["control_token"]' <"$tmp/stepper") GR=$(j 'd["run_id"]' <"$tmp/stepper")
curl -s -o /dev/null -X POST "$base/api/sessions/$G/actions" -H "$(auth "$GT")" -H 'Content-Type: application/json' --data-binary '{"type":"pause"}'
curl -s -o /dev/null -X POST "$base/api/sessions/$G/actions" -H "$(auth "$GT")" -H 'Content-Type: application/json' --data-binary '{"type":"step","n":1200}'
curl -s -o /dev/null -X DELETE "$base/api/sessions/$G" -H "$(auth "$GT")"
get "/api/runs/$GR/samples"
echo "$body" | python3 -c '
import json, sys
d = json.load(sys.stdin)
steps = [r[1] for r in d["rows"]]
gaps = [(a, b) for a, b in zip(steps, steps[1:]) if b - a != d["sample_steps"]]
assert d["sample_steps"] == 60 and steps[-1] >= 1200 and not gaps, (d["sample_steps"], steps[-3:], gaps[:3])
' && ok "a paused step of 1200 steps records each of its $(echo "$body" | j 'len(d["rows"])') samples (every 60 steps, no gap)" ||
  bad "step 1200 samples: ${body:0:300}"
get "/api/runs/$RA/samples?format=xml"
[ "$code" = 400 ] && ok "samples?format=xml: 400" || bad "format=xml: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$base/api/runs/$RA")
[ "$code" = 405 ] && ok "DELETE /api/runs/{id}: 405" || bad "DELETE run: $code"
[ "$(count '/api/runs')" -ge 6 ] && ok "every run is still there" || bad "runs lost: $body"

# ---- the fluid and gravity models: their own samples, live and restart-only changes, replays ----
# poll SESSION SECONDS PYTHON-EXPR: until the expression over GET /api/sessions/SESSION (as d)
# holds, at most SECONDS (generous: a loop that waits, not a timing assertion)
poll() {
  for _ in $(seq $(($2 * 10))); do
    curl -s "$base/api/sessions/$1" | j "$3" 2>/dev/null | grep -qx True && return 0
    sleep 0.1
  done
  return 1
}
# SCENE|START PARAMS|LIVE PARAM|VALUE|RESTART-ONLY PARAM|VALUE|RESTART PARAMS|THE MODEL'S OWN COLUMNS
while IFS='|' read -r scene params live lval fixed fval restart cols; do
  create "$scene" "$params" "models"
  M=$sid
  MT=$token
  RM=$run
  poll "$M" 60 'd["t"] >= 1.0' || bad "$scene: the session did not reach t = 1 s"
  code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X PATCH "$base/api/sessions/$M/params" -H "$(auth "$MT")" \
    -H 'Content-Type: application/json' --data-binary "{\"$live\":$lval}")
  [ "$code" = 200 ] && [ "$(j "d['params']['$live']" <"$tmp/body")" = "$lval" ] &&
    ok "$scene: '$live' changes live" || bad "$scene: PATCH $live: $code $(cat "$tmp/body")"
  # a restart-only parameter after a live one: refused, and neither changes (not even the first)
  before=$(curl -s "$base/api/sessions/$M" | j '(d["run_id"], sorted(d["params"].items()))')
  code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X PATCH "$base/api/sessions/$M/params" -H "$(auth "$MT")" \
    -H 'Content-Type: application/json' --data-binary "{\"$live\":0,\"$fixed\":$fval}")
  after=$(curl -s "$base/api/sessions/$M" | j '(d["run_id"], sorted(d["params"].items()))')
  [ "$code" = 409 ] && [ "$(j '(d["error"]["code"], d["error"]["field"])' <"$tmp/body")" = "('needs_restart', '$fixed')" ] &&
    [ "$before" = "$after" ] && ok "$scene: '$fixed' is refused live (409 needs_restart) and nothing changed" ||
    bad "$scene: PATCH $fixed: $code $(cat "$tmp/body"); before $before after $after"
  poll "$M" 60 'd["t"] >= 2.0' || bad "$scene: the session did not reach t = 2 s"
  # one call of many samples (a paused `step n` of 10 intervals): each of them is recorded
  curl -s -o /dev/null -X POST "$base/api/sessions/$M/actions" -H "$(auth "$MT")" -H 'Content-Type: application/json' --data-binary '{"type":"pause"}'
  every=$(curl -s "$base/api/scenes" | j "[s['sample_steps'] for s in d['scenes'] if s['name'] == '$scene'][0]")
  curl -s -o /dev/null -X POST "$base/api/sessions/$M/actions" -H "$(auth "$MT")" -H 'Content-Type: application/json' --data-binary "{\"type\":\"step\",\"n\":$((10 * every))}"
  curl -s -o /dev/null -X DELETE "$base/api/sessions/$M" -H "$(auth "$MT")"
  get "/api/runs/$RM/samples"
  echo "$body" | python3 -c '
import json, math, sys
d, cols = json.load(sys.stdin), sys.argv[1].split(",")
assert all(c in d["columns"] for c in cols), d["columns"]
assert "angle" not in d["columns"] and "flow" not in d["columns"], d["columns"]
rows = d["rows"]
assert len(rows) >= 8, len(rows)
at = [d["columns"].index(c) for c in cols]
bad = [r for r in rows for i in at if not (isinstance(r[i], (int, float)) and math.isfinite(r[i]))]
assert not bad, bad[:3]
# each scene samples at its own interval (as the catalogue says), every sample kept: none lost when a call took several
every = d["sample_steps"]
assert every == int(sys.argv[2]) and abs(d["sample_seconds"] - every / 240) < 1e-15, (every, sys.argv[2])
steps = [r[1] for r in rows]
gaps = [(a, b) for a, b in zip(steps, steps[1:]) if b - a != every]
assert not gaps and all(abs(r[0] - r[1] / 240) < 1e-12 for r in rows), gaps[:3]
' "$cols" "$(curl -s "$base/api/scenes" | j "[s['sample_steps'] for s in d['scenes'] if s['name'] == '$scene'][0]")" &&
    ok "$scene: $(echo "$body" | j 'len(d["rows"])') samples, every $(echo "$body" | j 'd["sample_steps"]') steps without a gap, each with finite $cols" ||
    bad "$scene samples: ${body:0:400}"
  get "/api/runs/$RM"
  echo "$body" | j '[e["detail"]["params"] for e in d["events"] if e["kind"] == "parameter_changed"]' |
    grep -qx "\[{'$live': $lval}\]" && ok "$scene: the record holds the one accepted change" ||
    bad "$scene: changes in the record: $(echo "$body" | j '[e for e in d["events"] if e["kind"] == "parameter_changed"]')"
  replay_check "$scene run with a live change" "$RM"
  code=$(curl -s -o "$tmp/replay" -w '%{http_code}' -X POST "$base/api/runs/$RM/replay" -H 'Content-Type: application/json' --data-binary '{}')
  R=$(j 'd["id"]' <"$tmp/replay")
  RT=$(j 'd["control_token"]' <"$tmp/replay")
  want=$(curl -s "$base/api/runs/$RM" | j '(d["end_steps"], d["digest"])')
  poll "$R" 120 'd["state"] == "paused"'
  got=$(curl -s "$base/api/sessions/$R" | j '(d["steps"], d["digest"])')
  [ "$code" = 201 ] && [ "$got" = "$want" ] && ok "$scene: POST .../replay pauses at the run's end in the same state $got" ||
    bad "$scene: replay $code ended at $got, want $want"
  curl -s -o /dev/null -X DELETE "$base/api/sessions/$R" -H "$(auth "$RT")"
  code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X POST "$base/api/runs/$RM/fork" -H 'Content-Type: application/json' --data-binary "{\"params\":{\"$fixed\":$fval}}")
  [ "$code" = 409 ] && ok "$scene: a fork cannot change '$fixed' (409)" || bad "$scene: fork with $fixed: $code $(cat "$tmp/body")"
  # the controller's way to change it: a restart of the scene with it
  create "$scene" "$params" "models"
  code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X POST "$base/api/sessions/$sid/scene" -H "$(auth "$token")" \
    -H 'Content-Type: application/json' --data-binary "{\"scene\":\"$scene\",\"params\":$restart}")
  [ "$code" = 200 ] && [ "$(j "(d['params']['$fixed'], d['run_id'] > $run)" <"$tmp/body")" = "($fval, True)" ] &&
    ok "$scene: a restart sets '$fixed' = $fval (a new run)" || bad "$scene: restart with $fixed: $code $(cat "$tmp/body")"
  curl -s -o /dev/null -X DELETE "$base/api/sessions/$sid" -H "$(auth "$token")"
done <<'EOF'
dambreak|{"quality":0,"width":0.4}|visc|2.0|width|0.5|{"quality":0,"width":0.5}|front,height,kinetic,potential,energy
cluster|{"bodies":300}|eps|0.05|bodies|100.0|{"bodies":100}|kinetic,potential,energy,energy_drift,angular_momentum,virial
EOF
get "/api/runs?scene=dambreak&label=models&sort=id"
echo "$body" | j '[(r["grains"], r["params"]["width"]) for r in d["runs"]]' | grep -qx '\[(512, 0.4), (512, 0.4), (512, 0.5)\]' &&
  ok "the dam-break's runs: the first, and the second session's two (width 0.5 after the restart)" || bad "dambreak runs: ${body:0:600}"
get "/api/runs?scene=cluster&label=models&sort=id"
echo "$body" | j '[r["grains"] for r in d["runs"]]' | grep -qx '\[300, 300, 100\]' &&
  ok "the cluster's runs: 300 bodies, then 100 after the restart" || bad "cluster runs: ${body:0:600}"

# ---- a silo's record of what happened (issue 30): the hole set live, changed while it drains, ---
# ---- then a Reset: stretches of constant parameters, each with its own results; a new run ------
create silo '{"quality":1}' "record"
S=$sid
ST=$token
R1=$run
patch() { curl -s -o "$tmp/patch" -w '%{http_code}' -X PATCH "$base/api/sessions/$S/params" -H "$(auth "$ST")" -H 'Content-Type: application/json' --data-binary "$1"; }
act() { curl -s -o "$tmp/act" -w '%{http_code}' -X POST "$base/api/sessions/$S/actions" -H "$(auth "$ST")" -H 'Content-Type: application/json' --data-binary "$1"; }
for _ in $(seq 300); do
  [ "$(curl -s "$base/api/sessions/$S" | j 'd["settling_left"]')" = 0.0 ] && break
  sleep 0.1
done
[ "$(patch '{"hole":0.8}')" = 200 ] && [ "$(act '{"type":"open_hole"}')" = 200 ] && ok "the silo settled: hole 0.8 set live, then opened" || bad "hole/open: $(cat "$tmp/patch" "$tmp/act")"
sleep 4
[ "$(patch '{"hole":1.0}')" = 200 ] && ok "the hole widened to 1.0 m while it drains" || bad "hole 1.0: $(cat "$tmp/patch")"
sleep 2.5
[ "$(act '{"type":"reset"}')" = 200 ] && ok "Reset" || bad "reset: $(cat "$tmp/act")"
R2=$(curl -s "$base/api/sessions/$S" | j 'd["run_id"]')
sleep 1
curl -s -o /dev/null -X DELETE "$base/api/sessions/$S" -H "$(auth "$ST")"
get "/api/runs/$R1"
echo "$body" >"$tmp/r1"
get "/api/runs/$R2"
echo "$body" >"$tmp/r2"
curl -s "$base/api/runs/$R1/samples?format=csv" >"$tmp/r1.csv"
curl -s "$base/api/runs?label=record&format=csv" >"$tmp/record.csv"
python3 - "$tmp" "$R1" "$R2" <<'PY' >"$tmp/record.out" 2>&1
import csv, io, json, sys
tmp, r1, r2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
a, b = json.load(open(tmp + "/r1")), json.load(open(tmp + "/r2"))
def say(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
segs = a["segments"]
say(a["end_reason"] == "reset" and b["reset_of"] == r1 and b["segments"][0]["params"]["hole"] == 1.0,
    "Reset ended run %d ('reset') and started run %d from it, with the hole in force (1.0)" % (r1, r2))
say([s["params"]["hole"] for s in segs] == [0.9, 0.8, 1.0] and segs[1]["changed"] == {"hole": 0.8}
    and segs[0]["from_steps"] == 0 and segs[0]["to_steps"] == segs[1]["from_steps"]
    and segs[-1]["to_steps"] == a["end_steps"] and a["params"]["hole"] == 0.9 and a["params_end"]["hole"] == 1.0,
    "run %d: three stretches, hole 0.9, 0.8, 1.0, end to end, start and end parameters" % r1)
m1 = segs[1]["results"].get("mean_flow")
m2 = segs[2]["results"].get("mean_flow")
say(m1 is not None and m1 > 0 and m2 != m1,
    "each stretch has its own mean flow, its window started again at the change (%s, %s kg/s)" % (m1, m2))
say(segs[1]["results"]["beverloo"] < segs[2]["results"]["beverloo"],
    "Beverloo's prediction follows the hole in force")
rows = list(csv.DictReader(open(tmp + "/r1.csv", newline="")))
holes = [(float(r["t"]), float(r["param.hole"])) for r in rows]
ch = segs[1]["from_t"]
say(all(h == (0.9 if t <= ch + 1e-9 else h) for t, h in holes) and {h for _, h in holes} == {0.9, 0.8, 1.0},
    "the run's samples CSV gives the hole in force at every sample (%d rows)" % len(rows))
rec = [r for r in csv.DictReader(open(tmp + "/record.csv", newline="")) if r["run"] == str(r1)]
say([(r["segment"], r["param.hole"], r["changed"]) for r in rec] == [("1", "0.9", ""), ("2", "0.8", "hole=0.8"), ("3", "1", "hole=1")]
    and rec[1]["result.mean_flow"] != "", "the runs CSV has a row per stretch, with what changed and its results")
PY
while read -r line; do case $line in ok*) ok "${line#ok   }" ;; *) bad "${line#FAIL }" ;; esac; done <"$tmp/record.out"
replay_check "a run that ended in a Reset" "$R1"
replay_check "the run a Reset started" "$R2"

# ---- the file: schema version, WAL, STRICT tables, integrity -----------------------------------
[ "$(sqlite3 "$db" 'PRAGMA user_version')" = 12 ] && ok "schema version 12 (PRAGMA user_version)" || bad "user_version: $(sqlite3 "$db" 'PRAGMA user_version')"
# samples hold one JSON object of measurements (schema/migrations/004), finite numbers only
[ "$(sqlite3 "$db" "SELECT count(*) FROM samples WHERE NOT json_valid(measures) OR json_type(measures) != 'object'")" = 0 ] &&
  [ "$(sqlite3 "$db" "SELECT count(*) FROM samples s, json_each(s.measures) j WHERE j.type != 'real'")" = 0 ] &&
  ok "every sample's measures are a JSON object of REAL numbers" || bad "samples.measures"
[ "$(sqlite3 "$db" 'PRAGMA journal_mode')" = wal ] && ok "WAL mode" || bad "journal mode"
[ "$(sqlite3 "$db" "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE '%STRICT%'")" = 0 ] &&
  ok "every table is STRICT" || bad "non-STRICT tables"
[ "$(sqlite3 "$db" 'PRAGMA foreign_key_check' | wc -l)" = 0 ] && ok "foreign keys hold" || bad "foreign key violations"

# ---- crash safety: kill -9 while 5 sessions write samples ---------------------------------------
for i in 1 2 3 4 5; do
  create pour '{"amount":10}' "crash"
done
sleep 3
get '/api/sessions'
echo "$body" | j '{s["run_id"]: s["t"] for s in d["sessions"] if s["label"] == "crash"}' >"$tmp/t_at_kill"
open_runs=$(echo "$body" | j 'len([s for s in d["sessions"] if s["state"] != "failed"])')
kill_at=$(date +%s.%N)
kill -KILL "$dpid"
wait "$dpid" 2>/dev/null
dpid=
sleep 2 # the restart comes later than the crash, as it does for an operator
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] && ok "after kill -9: integrity_check ok" || bad "integrity_check"
python3 - "$db" "$tmp/t_at_kill" <<'PY' && ok "after kill -9: every sample older than 1 s before the kill is there, without gaps" || bad "samples lost in the crash"
import ast, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
t_at = ast.literal_eval(open(sys.argv[2]).read())
assert len(t_at) == 5, t_at
for run, t in t_at.items():
    rows = [r[0] for r in db.execute("SELECT t FROM samples WHERE run_id = ? ORDER BY steps", (run,))]
    want = [k / 4 for k in range(int((t - 1.0) * 4) + 1)]
    assert rows[:len(want)] == want, (run, t, rows)
PY
start_daemon "$daemon" --static-dir "$tmp"
grep -q "$open_runs run(s) left open by an earlier stop closed as interrupted" "$tmp/err" &&
  ok "restart: the $open_runs open runs are closed" ||
  bad "restart log: $(cat "$tmp/err")"
[ "$(count '/api/runs?label=crash&end_reason=interrupted')" = 5 ] && ok "restart: the 5 runs read 'interrupted'" || bad "interrupted: $body"
# issue 32: each ends where its record ends, at the daemon's last sign of life (not the restart 2 s
# later), at its last sample, whose measurements are its results and close its last stretch
python3 - "$db" "$tmp/t_at_kill" "$kill_at" <<'PY' && ok "restart: each interrupted run ends within 1 s before the kill, at its last sample, with that sample's results" || bad "interrupted runs' ends"
import ast, json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
kill_at = float(sys.argv[3])
for run in ast.literal_eval(open(sys.argv[2]).read()):
    ended_at, steps, t, segments = db.execute(
        "SELECT ended_at, end_steps, end_t, segments FROM runs WHERE id = ?", (run,)).fetchone()
    last = db.execute("SELECT steps, t, measures FROM samples WHERE run_id = ? ORDER BY steps DESC "
                      "LIMIT 1", (run,)).fetchone()
    results = dict(db.execute("SELECT name, value FROM run_results WHERE run_id = ?", (run,)))
    measures = {k: v for k, v in json.loads(last[2]).items() if isinstance(v, (int, float))}
    assert kill_at - 1.0 <= ended_at <= kill_at + 0.1, (run, ended_at, kill_at)
    assert (steps, t) == last[:2] and t > 0, (run, steps, t, last)
    assert results == measures and results, (run, results, measures)
    stretch = json.loads(segments)[-1]
    assert (stretch["to_steps"], stretch["to_t"], stretch["results"]) == (steps, t, json.loads(last[2])), stretch
PY
int_run=$(python3 -c 'import ast,sys; print(min(ast.literal_eval(open(sys.argv[1]).read())))' "$tmp/t_at_kill")
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X POST "$base/api/runs/$int_run/replay" -H 'Content-Type: application/json' --data-binary '{}')
[ "$code" = 201 ] && ok "an interrupted run replays up to its last sample: 201" || bad "replay interrupted: $code $(cat "$tmp/body")"
curl -s -o /dev/null -X DELETE "$base/api/sessions/$(j 'd["id"]' <"$tmp/body")" -H "Authorization: Bearer $(j 'd["control_token"]' <"$tmp/body")"
create pour '{"amount":10}' "after"
[ "$run" -gt "$FR" ] && ok "run ids go on after the restart ($run)" || bad "run id reused: $run"

# ---- an orderly stop finishes every run --------------------------------------------------------
sleep 1
kill -TERM "$dpid"
wait "$dpid"
dpid=
[ "$(sqlite3 "$db" "SELECT end_reason FROM runs WHERE id = $run")" = stopped ] && ok "SIGTERM: the open run is 'stopped'" ||
  bad "after SIGTERM: $(sqlite3 "$db" "SELECT end_reason FROM runs WHERE id = $run")"
replay_check_file() {
  local rec rep
  rec=$(sqlite3 "$db" "SELECT digest FROM runs WHERE id = $1")
  rep=$("$cli" replay --db "$db" --run "$1" | j 'd["digest"]')
  [ -n "$rec" ] && [ "$rec" = "$rep" ] && ok "stopped run: replay reproduces $rec" || bad "stopped run: '$rec' vs '$rep'"
}
replay_check_file "$run"
"$cli" replay --db "$db" --run 999999 2>"$tmp/replay_err"
[ $? = 2 ] && grep -q "no such run" "$tmp/replay_err" && ok "replay of an unknown run: exit 2, '$(cat "$tmp/replay_err")'" ||
  bad "replay unknown run: $(cat "$tmp/replay_err")"

# ---- a version-1 database is migrated: 'finished' (its name for a shutdown) becomes 'stopped', ---
# ---- samples gain the fluid and gravity columns (version 3), then move into one JSON object -----
old="$tmp/old"
mkdir -p "$old"
sqlite3 "$old/grainlab.db" <"$(dirname "$0")/../../schema/migrations/001_init.sql"
sqlite3 "$old/grainlab.db" "PRAGMA user_version = 1;
  INSERT INTO sessions VALUES ('s1', 'ABCDEF', 'old', 0, 1.7e9, 1.7e9 + 60);
  INSERT INTO runs (id, session_id, label, scene, seed, grains, engine_version, params, started_at,
                    ended_at, end_reason, end_steps, end_t, digest)
  VALUES (7, 's1', 'old', 'pour', 1, 300, '0.1.0', '{\"mu\":0.5}', 1.7e9, 1.7e9 + 60, 'finished', 2400, 10.0, 'ab');
  INSERT INTO run_params VALUES (7, 'mu', 0.5);
  INSERT INTO samples (run_id, steps, t, state) VALUES (7, 0, 0.0, 'filling');
  INSERT INTO samples (run_id, steps, t, state, angle, top, alive, over_max)
  VALUES (7, 60, 0.25, 'running', 0.1 + 0.2, 25.0, 300, -1.5e-7);"
"$daemon" --http-port 0 --ws-port 0 --data-dir "$old" "${per_client_limits[@]}" >"$tmp/out3" 2>"$tmp/err3" &
opid=$!
for _ in $(seq 100); do grep -q listening "$tmp/out3" && break; sleep 0.05; done
port3=$(sed -n 's/^listening http=\([0-9]*\).*/\1/p' "$tmp/out3")
curl -s "http://127.0.0.1:$port3/api/runs/7/samples?format=csv" >"$tmp/old_csv"
kill -TERM "$opid"
wait "$opid"
[ "$(sqlite3 "$old/grainlab.db" 'PRAGMA user_version')" = 12 ] &&
  [ "$(sqlite3 "$old/grainlab.db" 'SELECT quote(state_version), quote(segments), quote(reset_of) FROM runs WHERE id = 7')" = 'NULL|NULL|NULL' ] &&
  [ "$(sqlite3 "$old/grainlab.db" "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'runs'")" = 2 ] &&
  [ "$(sqlite3 "$old/grainlab.db" 'SELECT sample_steps FROM runs WHERE id = 7')" = 60 ] &&
  [ "$(sqlite3 "$old/grainlab.db" 'SELECT end_reason FROM runs WHERE id = 7')" = stopped ] &&
  [ "$(sqlite3 "$old/grainlab.db" 'SELECT measures FROM samples WHERE run_id = 7 ORDER BY steps')" = '{}
{"angle":0.30000000000000004,"top":25.0,"over_max":-1.4999999999999999e-07,"alive":300.0}' ] &&
  [ "$(sqlite3 "$old/grainlab.db" "SELECT json_extract(measures, '$.angle') = 0.1 + 0.2 AND json_extract(measures, '$.over_max') = -1.5e-7 FROM samples WHERE steps = 60")" = 1 ] &&
  [ "$(sqlite3 "$old/grainlab.db" 'PRAGMA foreign_key_check' | wc -l)" = 0 ] &&
  ok "a version-1 database migrates to 10: the run reads 'stopped', sampled every 60 steps, no state version or stretches recorded, the outbox's triggers on runs made again, its samples stay, exactly, as JSON objects" ||
  bad "migration 1 -> 5: $(sqlite3 "$old/grainlab.db" 'PRAGMA user_version; SELECT end_reason FROM runs; SELECT measures FROM samples') $(cat "$tmp/err3")"
printf 't,steps,state,angle,top,cx,cz,over_max,flowing,alive\r\n0,0,filling,,,,,,,\r\n0.25,60,running,0.30000000000000004,25,,,-1.4999999999999999e-07,,300\r\n' >"$tmp/want_csv"
cmp -s "$tmp/old_csv" "$tmp/want_csv" && ok "the migrated run's CSV: the same columns and numbers as before" ||
  bad "migrated CSV: $(cat -A "$tmp/old_csv")"
# a run recorded before runs kept their engine's state version is not replayed, and says why
"$cli" replay --db "$old/grainlab.db" --run 7 2>"$tmp/replay_err"
[ $? = 2 ] && grep -q "recorded before runs kept their engine's state version" "$tmp/replay_err" &&
  ok "replay of a run from before state versions: exit 2, '$(cat "$tmp/replay_err")'" || bad "replay of an old run: $(cat "$tmp/replay_err")"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
