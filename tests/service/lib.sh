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

# Every test client comes from 127.0.0.1: the per-client limits are lifted unless a test is about
# them (test_limits.sh sets per_client_limits=() for the defaults, or passes its own).
per_client_limits=(--max-sessions-per-client 10000 --create-rate 100000 --join-guess-rate 100000
  --max-connections-per-ip 10000)

# start_daemon PATH [FLAGS...]: free ports, output in $tmp/out and $tmp/err; sets dpid, port,
# wsport and base, or stops the test
start_daemon() {
  local exe=$1
  shift
  "$exe" --http-port 0 --ws-port 0 --data-dir "$tmp/data" "${per_client_limits[@]}" "$@" \
    >"$tmp/out" 2>"$tmp/err" &
  dpid=$!
  for _ in $(seq 400); do # 20 s: a loaded machine starts it slowly
    grep -q '^listening http=[0-9]* ws=[0-9]*$' "$tmp/out" && break
    sleep 0.05
  done
  port=$(sed -n 's/^listening http=\([0-9]*\) ws=.*/\1/p' "$tmp/out")
  wsport=$(sed -n 's/^listening http=[0-9]* ws=\([0-9]*\)$/\1/p' "$tmp/out")
  [ -n "$port" ] && [ -n "$wsport" ] || { echo "FAIL daemon did not start: $(cat "$tmp/err")"; exit 1; }
  ok "daemon listening: $(cat "$tmp/out")"
  base="http://127.0.0.1:$port"
}
