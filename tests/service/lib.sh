# Shared by the service test scripts: pass/fail bookkeeping, a scratch folder removed on exit,
# and starting grainlabd on free ports.
tmp=$(mktemp -d)
pass=0
fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
cleanup() {
  [ -n "${dpid:-}" ] && kill -KILL "$dpid" 2>/dev/null
  if [ "$fail" != 0 ] && [ -s "$tmp/err" ]; then
    echo "---- the daemon's stderr (last 60 lines) ----"
    tail -60 "$tmp/err"
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# start_daemon PATH [FLAGS...]: free ports, output in $tmp/out and $tmp/err; sets dpid, port,
# wsport and base, or stops the test
start_daemon() {
  local exe=$1
  shift
  "$exe" --http-port 0 --ws-port 0 --data-dir "$tmp/data" "$@" >"$tmp/out" 2>"$tmp/err" &
  dpid=$!
  for _ in $(seq 100); do
    grep -q '^listening http=[0-9]* ws=[0-9]*$' "$tmp/out" && break
    sleep 0.05
  done
  port=$(sed -n 's/^listening http=\([0-9]*\) ws=.*/\1/p' "$tmp/out")
  wsport=$(sed -n 's/^listening http=[0-9]* ws=\([0-9]*\)$/\1/p' "$tmp/out")
  [ -n "$port" ] && [ -n "$wsport" ] || { echo "FAIL daemon did not start: $(cat "$tmp/err")"; exit 1; }
  ok "daemon listening: $(cat "$tmp/out")"
  base="http://127.0.0.1:$port"
}
