#!/usr/bin/env bash
# Feeds test_decoder.mjs: a chains session streamed for 4 s to a full-rate viewer (keyframes,
# predicted frames, force chains) and for 4 s to one at 5 frames a second (of the session's 15:
# each frame it takes skips some, so it gets deltas), and a pour for 3 s at full rate (grains
# arrive: frames with more grains than the one before), every message of each dumped by ws_probe.
set -u
daemon=${1:?usage: test_decoder.sh grainlabd ws_probe}
probe=${2:?usage: test_decoder.sh grainlabd ws_probe}
# shellcheck source=../service/lib.sh
. "$(dirname "$0")/../service/lib.sh"
start_daemon "$daemon" --static-dir "$tmp"
id=$(curl -s -X POST "$base/api/sessions" -H 'Content-Type: application/json' --data-binary '{"scene":"chains","params":{"amount":20}}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
pour=$(curl -s -X POST "$base/api/sessions" -H 'Content-Type: application/json' --data-binary '{"scene":"pour"}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
mkdir -p "$tmp/full" "$tmp/rated" "$tmp/pour"
"$probe" --port "$wsport" --session "$id" --seconds 4 --dump "$tmp/full" >/dev/null
"$probe" --port "$wsport" --session "$id" --seconds 4 --rate 5 --dump "$tmp/rated" >/dev/null
"$probe" --port "$wsport" --session "$pour" --seconds 3 --dump "$tmp/pour" >/dev/null
node "$(dirname "$0")/test_decoder.mjs" "$tmp/full" "$tmp/rated" "$tmp/pour" && ok "the browser's decoder agrees with the C one" ||
  bad "the browser's decoder"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
