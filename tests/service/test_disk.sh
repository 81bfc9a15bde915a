#!/usr/bin/env bash
# grainlabd on a disk that fills up (issue 16, item 6): the data folder is a small tmpfs filled
# with a file while a session records. While the store cannot write, /readyz and every request
# that needs the store (creating a session, switching a scene, reading runs) answer 503
# store_unavailable, and the live session goes on; once the file is removed the daemon recovers
# by itself, the runs recorded before are intact, and the live run's samples recorded during the
# fault are all there. Needs mount (root or CAP_SYS_ADMIN): otherwise it says why and is skipped
# (exit 77, ctest's SKIP_RETURN_CODE).
set -u
# the system python3 first: a version manager's shim costs a second per call
PATH=/usr/bin:$PATH
daemon=${1:?usage: test_disk.sh grainlabd}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
mnt="$tmp/data"
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=8m tmpfs "$mnt" 2>"$tmp/mount_err"; then
  echo "skip: cannot mount a tmpfs to fill ($(head -c 200 "$tmp/mount_err" | tr -s "\n" " ")); this test needs root or CAP_SYS_ADMIN"
  exit 77
fi
# the daemon goes first, then the mount, then lib.sh's cleanup
trap 'if [ -n "${dpid:-}" ]; then kill -KILL "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; fi; dpid=; umount "$mnt" 2>/dev/null; cleanup' EXIT
M=${GRAINLAB_TIMEOUT_MULTIPLIER:-1}
start_daemon "$daemon" --static-dir "$tmp"
db="$mnt/grainlab.db"

j() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
# req METHOD PATH [DATA] [TOKEN]: sets code and body
req() {
  code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X "$1" ${4:+-H "Authorization: Bearer $4"} \
    ${3:+-H "Content-Type: application/json" --data-binary "$3"} "$base$2")
  body=$(cat "$tmp/body")
}
# create: sets sid, token, run
create() {
  req POST /api/sessions '{"scene":"pour","params":{"amount":10},"label":"disk"}'
  sid=$(echo "$body" | j 'd["id"]')
  token=$(echo "$body" | j 'd["control_token"]')
  run=$(echo "$body" | j 'd["run_id"]')
}
# wait_ready CODE SECONDS: until /readyz answers CODE (a loop that waits, not a timed assertion)
wait_ready() {
  for _ in $(seq $(($2 * M * 10))); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = "$1" ] && return 0
    sleep 0.1
  done
  return 1
}

# ---- before: a finished run, and a live one recording ------------------------------------------
create
A=$sid AT=$token RA=$run
sleep 1.5
req DELETE "/api/sessions/$A" "" "$AT"
req GET "/api/runs/$RA"
before=$(echo "$body" | j '(d["end_reason"], d["end_steps"], d["digest"], d["samples"], d["events_total"])')
[ "$code" = 200 ] && ok "a run recorded before the fault: $before" || bad "run A: $code $body"
create
B=$sid BT=$token RB=$run
sleep 1
wait_ready 200 5 && ok "/readyz 200 before the fault" || bad "/readyz before the fault"

# ---- the disk fills up ---------------------------------------------------------------------------
dd if=/dev/zero of="$mnt/fill" bs=64k 2>/dev/null
ok "the data folder's disk is full: $(df -k --output=avail "$mnt" | tail -1 | tr -d ' ') KiB free"
if wait_ready 503 20; then
  req GET /readyz
  [ "$(echo "$body" | j 'd["error"]["code"]')" = store_unavailable ] && ok "/readyz 503 store_unavailable: $(echo "$body" | j 'd["error"]["message"]')" ||
    bad "/readyz body: $body"
else
  bad "/readyz never turned 503 while the disk is full"
fi
req POST /api/sessions '{"scene":"pour","params":{"amount":10}}'
[ "$code" = 503 ] && [ "$(echo "$body" | j 'd["error"]["code"]')" = store_unavailable ] &&
  ok "creating a session: 503 store_unavailable" || bad "create while full: $code $body"
for p in "/api/runs" "/api/runs/$RA" "/api/runs/$RA/samples"; do
  req GET "$p"
  [ "$code" = 503 ] && [ "$(echo "$body" | j 'd["error"]["code"]')" = store_unavailable ] &&
    ok "GET $p: 503 store_unavailable" || bad "GET $p while full: $code ${body:0:200}"
done
req POST "/api/sessions/$B/scene" '{"scene":"pour","params":{"amount":10}}' "$BT"
[ "$code" = 503 ] && ok "switching a scene (a new run): 503" || bad "scene switch while full: $code $body"
req POST "/api/runs/$RA/replay" '{}'
[ "$code" = 503 ] && ok "replaying a run: 503" || bad "replay while full: $code $body"
req GET /healthz
[ "$code" = 200 ] && ok "/healthz stays 200 (the process is alive)" || bad "/healthz: $code"
t0=$(curl -s "$base/api/sessions/$B" | j 'd["t"]')
sleep 1
req GET "/api/sessions/$B"
[ "$code" = 200 ] && [ "$(echo "$body" | j "d['t'] > $t0 and d['state'] in ('running', 'asleep')")" = True ] &&
  ok "the live session goes on: t $t0 -> $(echo "$body" | j 'd["t"]')" || bad "live session during the fault: $code $body"
curl -s "$base/metrics" >"$tmp/metrics"
grep -qx 'grainlab_store_writable 0' "$tmp/metrics" && grep -q '^grainlab_store_write_failures_total [1-9]' "$tmp/metrics" &&
  ok "/metrics: grainlab_store_writable 0, $(grep '^grainlab_store_write_failures_total' "$tmp/metrics")" ||
  bad "/metrics during the fault: $(grep grainlab_store "$tmp/metrics")"
grep -q 'event=store_unavailable' "$tmp/err" && ok "logged: $(grep -o 'event=store_unavailable.*' "$tmp/err" | head -1 | head -c 160)" ||
  bad "no store_unavailable in the log"

# ---- space returns ------------------------------------------------------------------------------
rm -f "$mnt/fill"
wait_ready 200 30 && ok "/readyz 200 again once the file is removed" || bad "/readyz did not recover"
grep -q 'event=store_recovered' "$tmp/err" && ok "logged: $(grep -o 'event=store_recovered.*' "$tmp/err" | head -1)" ||
  bad "no store_recovered in the log"
req GET "/api/runs/$RA"
after=$(echo "$body" | j '(d["end_reason"], d["end_steps"], d["digest"], d["samples"], d["events_total"])')
[ "$code" = 200 ] && [ "$after" = "$before" ] && ok "the run recorded before is intact: $after" || bad "run A after: $code $after, was $before"
create
[ "$code" = 201 ] && ok "creating a session works again" || bad "create after recovery: $code $body"
req DELETE "/api/sessions/$sid" "" "$token"
req DELETE "/api/sessions/$B" "" "$BT"
req GET "/api/runs/$RB/samples"
echo "$body" | python3 -c '
import json, sys
rows = json.load(sys.stdin)["rows"]
t = [r[0] for r in rows]
assert t == [k / 4 for k in range(len(t))], t
print(len(t))
' >"$tmp/n" 2>&1 && ok "the live run kept every sample, through the fault: $(cat "$tmp/n") at 0, 0.25, ... s without a gap" ||
  bad "live run samples: $(cat "$tmp/n")"
req GET "/api/runs/$RB"
[ "$(echo "$body" | j '(d["end_reason"], d["samples_dropped"], d["events_dropped"])')" = "('deleted', 0, 0)" ] &&
  ok "the live run ended 'deleted' and lost nothing (samples_dropped 0, events_dropped 0)" || bad "run B: ${body:0:300}"
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] && ok "integrity_check ok" || bad "integrity_check: $(sqlite3 "$db" 'PRAGMA integrity_check' | head -3)"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
