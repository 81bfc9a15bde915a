#!/usr/bin/env bash
# The websocket stream end to end, with a real websocket client (ws_probe, libwebsockets): every
# decoded position against a headless re-run of the same scene, seed and timed changes; rising
# sequence numbers; a late joiner's keyframe; a stalled viewer that slows neither the session nor
# another viewer; controllers and viewers; malformed messages; a rate (a dashboard tile's few
# frames a second); force chains; water and N-body sessions (no floor); viewer counts.
set -u
daemon=${1:?usage: test_stream.sh path/to/grainlabd path/to/ws_probe}
probe=${2:?usage: test_stream.sh path/to/grainlabd path/to/ws_probe}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
start_daemon "$daemon" --static-dir "$tmp" --max-viewers 6

# create SCENE PARAMS-JSON: sets $sid and $token
create() {
  curl -s -X POST "$base/api/sessions" -H 'Content-Type: application/json' --data-binary "{\"scene\":\"$1\",\"params\":$2,\"seed\":7}" \
    >"$tmp/created"
  sid=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' <"$tmp/created")
  token=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["control_token"])' <"$tmp/created")
}
# expect NAME FILE PYTHON-EXPRESSION: the expression over the probe's JSON (as d) must hold
expect() {
  if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
    "$2" "$3" 2>/dev/null; then
    ok "$1"
  else
    bad "$1: $3 does not hold for $(head -c 1500 "$2")"
  fi
}
session_field() { curl -s "$base/api/sessions/$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$2"; }
metric() { curl -s "$base/metrics" | sed -n "s/^$1 //p"; }

# ---- positions against a headless twin, with an action over the socket and a REST change ------
create pour '{"amount":10}'
P=$sid
PT=$token
# the REST change comes once the probe has joined (a change before it would be unknown to its twin)
(for _ in $(seq 100); do [ "$(session_field "$P" viewers)" -ge 1 ] 2>/dev/null && break; sleep 0.05; done
  sleep 1 && curl -s -o /dev/null -X PATCH "$base/api/sessions/$P/params" \
  -H "Authorization: Bearer $PT" -H 'Content-Type: application/json' --data-binary '{"mu":0.7}') &
patchpid=$!
"$probe" --port "$wsport" --session "$P" --seconds 5 --verify \
  --send "{\"type\":\"auth\",\"token\":\"$PT\"}" \
  --send '{"type":"action","action":{"type":"spout","x":0.4,"z":-0.2}}' --send-after 1.5 \
  >"$tmp/verify" &
vpid=$!
sleep 3
"$probe" --port "$wsport" --session "$P" --seconds 2.5 >"$tmp/late" &
lpid=$!
# both probes are in once the session counts two (a probe may take a while to start under load)
for _ in $(seq 40); do [ "$(session_field "$P" viewers)" = 2 ] && break; sleep 0.05; done
viewers_rest=$(session_field "$P" viewers)
viewers_metric=$(metric grainlab_viewers)
wait "$vpid" "$lpid" "$patchpid"
expect "a viewer connects and the stream opens with a keyframe" "$tmp/verify" \
  'd["connected"] == 1 and d["first_kind"] == 1'
expect "sequence numbers rise" "$tmp/verify" 'd["seq_increasing"] and d["frames"] > 40'
expect "every frame decodes, predicted frames among them (a viewer that gets every frame)" "$tmp/verify" \
  'd["decode_errors"] == 0 and d["decoded"] == d["frames"] and d["kinds"]["predicted"] > 0'
expect "every position within half a grid step (extent/65535) of the headless re-run, after an action over the socket and a REST change" \
  "$tmp/verify" '"verify_error" not in d and d["verified"] == d["frames"] and d["max_err_steps"] <= 0.5 + 1e-6'
expect "the controller authenticates and its action and the change come back as events at their steps" \
  "$tmp/verify" 'd["role"] == "controller" and "action" in d["events"] and "parameter_changed" in d["events"]'
expect "measurements at 4 Hz of simulated time, every key" "$tmp/verify" \
  'd["measurements"] >= 8 and d["measure_keys_missing"] == 0'
expect "a late joiner's first frame is a keyframe, and it decodes what follows" "$tmp/late" \
  'd["first_kind"] == 1 and d["frames"] > 10 and d["decode_errors"] == 0 and d["seq_increasing"]'
[ "$viewers_rest" = 2 ] && ok "two viewers in the session's REST state" ||
  bad "REST viewers: $viewers_rest"
[ "$viewers_metric" = 2 ] && ok "two viewers in /metrics" || bad "/metrics grainlab_viewers: $viewers_metric"
sleep 0.3
[ "$(session_field "$P" viewers)" = 0 ] && ok "no viewers once they have gone" ||
  bad "viewers after leaving: $(session_field "$P" viewers)"

# ---- a viewer cannot control; bad messages are refused one by one ------------------------------
spout_before=$(curl -s "$base/api/sessions/$P" | python3 -c 'import json,sys; print(json.load(sys.stdin)["params"]["spout_x"])')
rejected_before=$(metric grainlab_ws_messages_rejected_total)
"$probe" --port "$wsport" --session "$P" --viewers 2 --seconds 3 \
  --send '{"type":"action","action":{"type":"spout","x":-1,"z":1}}' \
  --send '{"type":"auth","token":"0000000000000000000000000000000000000000000000000000000000000000"}' \
  --send '{"type":"action","action":{"type":"spout","x":-1,"z":1}}' \
  --send 'this is not json' --send 'binary:' --send 'big:10000' --send '[1,2,3]' \
  --send '{"type":"nope"}' --send '{"type":"auth","token":5}' \
  --send '{"type":"auth","token":"x","extra":1}' >"$tmp/viewer"
expect "a viewer's actions are forbidden and a wrong token is refused" "$tmp/viewer" \
  'd["errors"][:3] == ["forbidden", "bad_token", "forbidden"] and d["role"] == ""'
expect "malformed messages each get their error" "$tmp/viewer" \
  'd["errors"][3:] == ["bad_message", "binary", "too_large", "bad_message", "unknown_type", "bad_token", "unknown_field"]'
expect "the sender stays connected and both viewers keep receiving frames" "$tmp/viewer" \
  'd["connected"] == 2 and d["close_status"] == 0 and d["frames_min"] > 20'
spout_after=$(curl -s "$base/api/sessions/$P" | python3 -c 'import json,sys; print(json.load(sys.stdin)["params"]["spout_x"])')
[ "$spout_before" = "$spout_after" ] && ok "the session did not change (spout_x $spout_after)" ||
  bad "spout_x changed from $spout_before to $spout_after"
rejected_after=$(metric grainlab_ws_messages_rejected_total)
[ $((rejected_after - rejected_before)) = 10 ] && ok "10 rejections counted in /metrics" ||
  bad "rejections counted: $((rejected_after - rejected_before))"
logged=$(grep -c 'rejected message' "$tmp/err")
[ "$logged" -ge 10 ] && ok "rejections are logged ($logged lines)" || bad "logged rejections: $logged"
grep -q "$PT" "$tmp/err" && bad "the control token appears in the log" || ok "no token in the log"

# a controller's bad actions: refused with the REST API's codes, nothing queued
"$probe" --port "$wsport" --session "$P" --seconds 1.5 \
  --send "{\"type\":\"auth\",\"token\":\"$PT\"}" \
  --send '{"type":"action","action":{"type":"spout","x":"left","z":0}}' \
  --send '{"type":"action","action":{"type":"open_hole"}}' \
  --send '{"type":"action","action":{"type":"pause"}}' \
  --send '{"type":"action","action":{"type":"spout","x":1e9,"z":0}}' \
  --send '{"type":"action","action":5}' >"$tmp/ctl"
expect "a controller's bad actions are refused: wrong type, unsupported, REST-only, out of range, not an object" \
  "$tmp/ctl" 'd["role"] == "controller" and d["errors"] == ["wrong_type", "unsupported_action", "rest_only", "out_of_range", "bad_message"]'

# ---- a stalled viewer slows neither the session nor another viewer -----------------------------
create silo '{}'
S=$sid
(sleep 5.5 && session_field "$S" rt_factor >"$tmp/rt") &
rtpid=$!
"$probe" --port "$wsport" --session "$S" --viewers 2 --seconds 10 --stall-at 3 --stall-for 5 \
  >"$tmp/stall"
wait "$rtpid"
rt=$(cat "$tmp/rt")
awk -v rt="$rt" 'BEGIN { exit !(rt > 0.85) }' && ok "real-time factor during the stall: $rt" ||
  bad "real-time factor during the stall: $rt"
expect "the other viewer's frame rate during the stall is that before it (3000 grains)" "$tmp/stall" \
  'd["stall"]["other_frames"] / 5.0 >= 0.85 * d["stall"]["other_pre_frames"] / 3.0 and d["stall"]["other_frames"] >= 5 * 10'
expect "the stalled viewer skipped frames, then decoded every frame it got again" "$tmp/stall" \
  'd["skipped"] > 0 and d["decode_errors"] == 0 and d["seq_increasing"] and d["frames"] > d["stall"]["stalled_pre_frames"] + 15'
[ "$(metric grainlab_ws_frames_skipped_total)" -gt 0 ] && ok "skipped frames counted in /metrics" ||
  bad "no skipped frames in /metrics"

# ---- a rate: a class dashboard's tile asks for a few frames a second (issue 17) ---------------
create silo '{}'
R=$sid
RT=$token
held_before=$(metric grainlab_ws_frames_held_total)
# viewer 0 asks for 5 frames a second, then for values that are not rates (each refused, none may
# change its rate: 0 or 61 taken as "unlimited" or 60 would show as a rate above 8); viewer 1 asks
# for nothing
"$probe" --port "$wsport" --session "$R" --viewers 2 --seconds 5 \
  --send '{"type":"rate","fps":5}' --send '{"type":"rate","fps":0}' \
  --send '{"type":"rate","fps":61}' --send '{"type":"rate","fps":2.5}' \
  --send '{"type":"rate","fps":60.5}' --send '{"type":"rate","fps":"60"}' --send '{"type":"rate"}' \
  >"$tmp/rate"
expect "rate 5: between 2 and 8 frames a second over 4 s, while an unlimited viewer gets more than 10 (of 15)" \
  "$tmp/rate" 'd["rate"]["fps"] == 5 and d["rate"]["seconds"] >= 3.9 and 2 <= d["rate"]["frames"][0] / d["rate"]["seconds"] <= 8 and d["rate"]["frames"][1] / d["rate"]["seconds"] > 10'
expect "rate 5: 0, 61, 2.5, 60.5, a string and none are each refused with bad_rate" "$tmp/rate" \
  'd["errors"] == ["bad_rate"] * 6 and d["connected"] == 2 and d["close_status"] == 0'
expect "rate 5: the first frame is a keyframe, every frame decodes (deltas: it skips the frames a predicted one needs), the newest each time" \
  "$tmp/rate" 'd["first_kind"] == 1 and d["decode_errors"] == 0 and d["decoded"] == d["frames"] and d["seq_increasing"] and d["skipped"] > 0 and d["kinds"]["deltas"] > 0'
expect "rate 5: every measurements message still arrives" "$tmp/rate" \
  'd["measurements_missing"] == 0 and d["measurements_each"][0] >= 8 and d["measurements_each"][0] >= d["measurements_each"][1] - 1'
held_after=$(metric grainlab_ws_frames_held_total)
[ $((held_after - held_before)) -gt 0 ] && ok "frames held back by a rate counted in /metrics ($((held_after - held_before)))" ||
  bad "frames held by a rate in /metrics: $held_before, then $held_after"
"$probe" --port "$wsport" --session "$R" --seconds 3 --send "{\"type\":\"auth\",\"token\":\"$RT\"}" \
  --send '{"type":"rate","fps":2}' --send '{"type":"action","action":{"type":"open_hole"}}' >"$tmp/ratectl"
expect "a controller sets a rate too, and still acts" "$tmp/ratectl" \
  'd["role"] == "controller" and d["rate"]["fps"] == 2 and 0 < d["rate"]["frames"][0] / d["rate"]["seconds"] <= 5 and d["errors"] == [] and "action" in d["events"]'
# a paused session publishes nothing more: its last frame still reaches a viewer at rate 1 (the
# server comes back for it by a timer, not with the next frame)
(for _ in $(seq 100); do [ "$(session_field "$R" viewers)" -ge 2 ] 2>/dev/null && break; sleep 0.05; done
  sleep 1.3 && curl -s -o /dev/null -X POST "$base/api/sessions/$R/actions" -H "Authorization: Bearer $RT" \
  -H 'Content-Type: application/json' --data-binary '{"type":"pause"}') &
pausepid=$!
# (the probe stops 2.5 s after it hears of the pause, whenever that comes on a loaded machine)
"$probe" --port "$wsport" --session "$R" --viewers 2 --seconds 20 --end-after action 2.5 \
  --send '{"type":"rate","fps":1}' >"$tmp/ratepause"
wait "$pausepid"
expect "rate 1: a paused session's last frame still arrives" "$tmp/ratepause" \
  'd["rate"]["fps"] == 1 and "action" in d["events"] and d["last_seqs"][0] == d["last_seqs"][1] and d["frames"] < d["rate"]["frames"][1] / 4'
curl -s -o /dev/null -X DELETE "$base/api/sessions/$R" -H "Authorization: Bearer $RT"

# ---- force chains ------------------------------------------------------------------------------
create chains '{"amount":20}'
"$probe" --port "$wsport" --session "$sid" --seconds 4 --verify >"$tmp/chains"
expect "force chains arrive as pair lists equal to the headless re-run's" "$tmp/chains" \
  'd["chains"]["messages"] > 30 and d["chains"]["bad"] == 0 and d["chains"]["checked"] > 30 and d["chains"]["equal"] == d["chains"]["checked"] and d["max_err_steps"] <= 0.5 + 1e-6'

# ---- water and bodies: every position against the headless re-run, their own geometry ---------
# SCENE|START PARAMS|A LIVE CHANGE|WHAT THE LAST KEYFRAME'S GEOMETRY MUST HOLD (as g)
while IFS='|' read -r scene params change geometry; do
  create "$scene" "$params"
  (sleep 1.5 && curl -s -o /dev/null -X PATCH "$base/api/sessions/$sid/params" \
    -H "Authorization: Bearer $token" -H 'Content-Type: application/json' --data-binary "$change") &
  patchpid=$!
  "$probe" --port "$wsport" --session "$sid" --seconds 4 --verify >"$tmp/model"
  wait "$patchpid"
  expect "$scene: the stream opens with a keyframe and every frame decodes" "$tmp/model" \
    'd["first_kind"] == 1 and d["frames"] > 20 and d["decode_errors"] == 0 and d["decoded"] == d["frames"]'
  expect "$scene: every position within half a grid step of the headless re-run, across a live change" \
    "$tmp/model" '"verify_error" not in d and d["verified"] == d["frames"] and d["max_err_steps"] <= 0.5 + 1e-6 and "parameter_changed" in d["events"]'
  expect "$scene: measurements with every key, and the scene's geometry ($geometry)" "$tmp/model" \
    "d['measurements'] >= 4 and d['measure_keys_missing'] == 0 and (lambda g: $geometry)(d['geometry'])"
  curl -s -o /dev/null -X DELETE "$base/api/sessions/$sid" -H "Authorization: Bearer $token"
done <<'EOF'
dambreak|{"quality":0}|{"visc":1.5}|g["floor_y"] == 0 and g["box"] and g["box_x1"] > g["box_x0"]
cluster|{"bodies":400}|{"eps":0.04}|g["floor_y"] is None and not g["box"]
orbit|{}|{"eps":0.1}|g["floor_y"] is None and not g["box"]
EOF

# ---- a private session: nothing without its viewer token, on the socket or over REST ----------
curl -s -X POST "$base/api/sessions" -H 'Content-Type: application/json' --data-binary '{"scene":"pour","params":{"amount":10},"private":true}' \
  >"$tmp/created"
Q=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' <"$tmp/created")
QT=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["control_token"])' <"$tmp/created")
QV=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["viewer_token"])' <"$tmp/created")
"$probe" --port "$wsport" --session "$Q" --seconds 13 >"$tmp/noauth" &
noauthpid=$!
"$probe" --port "$wsport" --session "$Q" --seconds 2 --send '{"type":"action","action":{"type":"pour","on":false}}' \
  --send '{"type":"auth","token":"0000000000000000000000000000000000000000000000000000000000000000"}' \
  >"$tmp/wrongauth"
expect "private: before its token a viewer gets nothing but errors" "$tmp/wrongauth" \
  'd["frames"] == 0 and d["texts"] == 2 and d["errors"] == ["unauthenticated", "bad_token"]'
"$probe" --port "$wsport" --session "$Q" --seconds 2 --send "{\"type\":\"auth\",\"token\":\"$QV\"}" \
  --send '{"type":"action","action":{"type":"pour","on":false}}' >"$tmp/viewerauth"
expect "private: the viewer token opens the stream, as a viewer" "$tmp/viewerauth" \
  'd["role"] == "viewer" and d["first_kind"] == 1 and d["frames"] > 15 and d["errors"] == ["forbidden"]'
"$probe" --port "$wsport" --session "$Q" --seconds 1 --send "{\"type\":\"auth\",\"token\":\"$QT\"}" \
  >"$tmp/ctlauth"
expect "private: the control token opens it as the controller" "$tmp/ctlauth" \
  'd["role"] == "controller" and d["frames"] > 10'
"$probe" --port "$wsport" --session "$Q" --seconds 2.5 --send '{"type":"rate","fps":4}' \
  --send "{\"type\":\"auth\",\"token\":\"$QV\"}" --send '{"type":"rate","fps":4}' >"$tmp/privrate"
expect "private: a rate only after the viewer token" "$tmp/privrate" \
  'd["errors"] == ["unauthenticated"] and d["role"] == "viewer" and d["rate"]["fps"] == 4 and d["first_kind"] == 1 and d["rate"]["frames"][0] / d["rate"]["seconds"] <= 8'
code=$(curl -s -o /dev/null -w '%{http_code}' "$base/api/sessions/$Q")
[ "$code" = 403 ] && ok "private: GET without a token is 403" || bad "private GET without token: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $QV" "$base/api/sessions/$Q")
[ "$code" = 200 ] && ok "private: GET with the viewer token is 200" || bad "private GET with viewer token: $code"
curl -s "$base/api/sessions" | grep -q "$Q" && bad "private: listed for anyone" ||
  ok "private: not in the public list"
wait "$noauthpid"
expect "private: a connection that never shows a token is closed after 10 s" "$tmp/noauth" \
  'd["frames"] == 0 and d["texts"] == 0 and 9 < d["seconds"] < 12.5'
curl -s -o /dev/null -X DELETE "$base/api/sessions/$Q" -H "Authorization: Bearer $QT"

# ---- refusals: unknown session, bad path, too many viewers; a deleted session closes -----------
"$probe" --port "$wsport" --session 0123456789abcdef --seconds 2 >"$tmp/unknown"
expect "an unknown session is refused at the handshake" "$tmp/unknown" \
  'd["connected"] == 0 and d["connect_errors"] == 1'
"$probe" --port "$wsport" --path /ws/other --seconds 2 >"$tmp/path"
expect "a path that is not a session is refused" "$tmp/path" 'd["connected"] == 0'
"$probe" --port "$wsport" --session "$P" --viewers 8 --seconds 2 >"$tmp/full"
expect "max-viewers 6: six get in, two are refused" "$tmp/full" \
  'd["connected"] == 6 and d["connect_errors"] == 2'
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$wsport/api/sessions")
[ "$code" = 404 ] && ok "plain HTTP on the websocket port: 404" || bad "plain HTTP on ws port: $code"
create pour '{"amount":10}'
(sleep 1.5 && curl -s -o /dev/null -X DELETE "$base/api/sessions/$sid" -H "Authorization: Bearer $token") &
delpid=$!
"$probe" --port "$wsport" --session "$sid" --seconds 8 >"$tmp/deleted"
wait "$delpid"
expect "viewers of a deleted session are sent away (1001) with the reason, at once" "$tmp/deleted" \
  'd["close_status"] == 1001 and "ended" in d["close_reason"] and d["seconds"] < 5 and "session_ended" in d["events"]'

# ---- shutdown with a viewer connected ----------------------------------------------------------
create pour '{"amount":10}'
"$probe" --port "$wsport" --session "$sid" --seconds 20 >"$tmp/last" &
ppid=$!
sleep 1
kill -TERM "$dpid"
for _ in $(seq 100); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$dpid" 2>/dev/null; then
  bad "SIGTERM with a viewer connected: the daemon is still running after 5 s"
else
  wait "$dpid"
  rc=$?
  [ "$rc" = 0 ] && ok "SIGTERM with a viewer connected: clean exit" || bad "exit status $rc"
fi
dpid=
wait "$ppid"
expect "the viewer sees the connection end" "$tmp/last" 'd["seconds"] < 10'

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
