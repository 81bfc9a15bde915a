#!/usr/bin/env bash
# grainlabd against hostile and heavy clients (issue 16, items 2 and 3): the settings table, the
# Host and Origin allow-lists, JSON-only bodies, the create token, per-client limits on creating
# sessions and on guessing session ids, per-IP connection limits, idle HTTP connections that must
# not starve /healthz, and dead websocket viewers dropped by ping.
# usage: test_limits.sh grainlabd ws_probe
set -u
daemon=${1:?usage: test_limits.sh grainlabd ws_probe}
probe=${2:?usage: test_limits.sh grainlabd ws_probe}
. "$(dirname "$0")/lib.sh"
m=${GRAINLAB_TIMEOUT_MULTIPLIER:-1}
per_client_limits=() # the defaults, unless a daemon below is given its own

stop_daemon() {
  kill -TERM "$dpid" 2>/dev/null
  wait "$dpid" 2>/dev/null
  dpid=
}
json() { python3 -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d=d[int(k)] if isinstance(d,list) else d[k]
print(d)' "$1"; }
# post PATH BODY [CURL ARGS...]: JSON body; sets $code, $body, $retry
post() {
  local path=$1 data=$2
  shift 2
  code=$(curl -s -o "$tmp/body" -D "$tmp/head" -w '%{http_code}' -X POST "$base$path" \
    -H 'Content-Type: application/json' --data-binary "$data" "$@")
  body=$(cat "$tmp/body")
  retry=$(tr -d '\r' <"$tmp/head" | sed -n 's/^Retry-After: //Ip')
}
small='{"scene":"pour","params":{"amount":10}}'

# ---- the settings: one table behind --help, the flags and the config file
help=$("$daemon" --help)
missing=""
for s in bind http-port ws-port ws-public-port data-dir static-dir admin-token-file create-token-file \
  max-sessions max-sessions-per-client create-rate join-guess-rate max-grains max-viewers \
  worker-memory-mb worker-threads step-budget idle-timeout allowed-hosts allowed-origins \
  trusted-proxies max-connections max-connections-per-ip ipv6-prefix http-timeout ws-ping-seconds \
  log-level; do
  grep -q -- "--$s " <<<"$help" || missing="$missing $s"
done
[ -z "$missing" ] && ok "--help lists every setting with its default ($(grep -c '^  --' <<<"$help") settings)" ||
  bad "--help misses:$missing"
grep -q -- '--max-sessions-per-client N  \[4, 1..10000\]' <<<"$help" &&
  grep -q -- '--idle-timeout S  \[1800, 0..604800\]' <<<"$help" &&
  ok "--help shows defaults and ranges: $(grep -- '--create-rate' <<<"$help")" || bad "--help: $help"
# the other places that list settings agree with the table
deploy="$(dirname "$0")/../../deploy"
stale=""
for s in $(sed -n 's/^  --\([a-z0-9-]*\) .*/\1/p' <<<"$help"); do
  grep -q "^#\? *$s = " "$deploy/grainlabd.conf" || stale="$stale grainlabd.conf:$s"
  grep -q "^| $s |" "$deploy/README.md" || stale="$stale README.md:$s"
done
[ -z "$stale" ] && ok "deploy/grainlabd.conf and deploy/README.md list every setting" || bad "settings missing in:$stale"
err=$("$daemon" --max-sessions-per-client 0 2>&1)
rc=$?
[ "$rc" = 2 ] && grep -q 'max-sessions-per-client needs a whole number in 1..10000' <<<"$err" &&
  ok "an out-of-range value is refused, not clamped: $err" || bad "max-sessions-per-client 0: rc=$rc $err"
err=$("$daemon" --allowed-hosts 'a,,b' 2>&1)
[ $? = 2 ] && grep -q 'allowed-hosts' <<<"$err" && ok "a malformed host list is refused: $err" ||
  bad "allowed-hosts a,,b: $err"
err=$("$daemon" --step-budget 1e99 2>&1)
[ $? = 2 ] && ok "step-budget out of range: $err" || bad "step-budget 1e99: $err"
printf 'create-rate = 3 # per minute\nmax-sessions-per-client = 100\njoin-guess-rate = 5\n' >"$tmp/conf"
echo 'createcreatecreate-0123' >"$tmp/create"
echo 'adminadminadmin-0123456789' >"$tmp/admin"

# ---- daemon 1: a config file (rates) and a create token
start_daemon "$daemon" --config "$tmp/conf" --create-token-file "$tmp/create" \
  --admin-token-file "$tmp/admin"
post /api/sessions "$small"
[ "$code" = 401 ] && [ "$(json error.code <<<"$body")" = unauthorized ] &&
  ok "create token set: no token, 401: $body" || bad "create without token: $code $body"
post /api/sessions "$small" -H 'Authorization: Bearer wrong-wrong-wrong-wrong'
[ "$code" = 403 ] && ok "create token set: a wrong token, 403" || bad "wrong create token: $code $body"
post /api/runs/1/replay '{}'
[ "$code" = 401 ] && ok "create token set: a replay without it, 401" || bad "replay without token: $code $body"
post /api/sessions '{"scene":"nope"}' -H "Authorization: Bearer createcreatecreate-0123"
[ "$code" = 400 ] || bad "a bad scene: $code $body"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/api/sessions" --data-binary "$small" \
  -H "Authorization: Bearer createcreatecreate-0123")
[ "$code" = 415 ] || bad "a form post: $code"
created=0
for i in 1 2 3 4; do
  post /api/sessions "$small" -H "Authorization: Bearer createcreatecreate-0123"
  [ "$code" = 201 ] && created=$((created + 1))
done
[ "$created" = 3 ] && [ "$code" = 429 ] && [ "$(json error.code <<<"$body")" = create_rate_limited ] &&
  [ -n "$retry" ] && [ "$retry" -ge 1 ] && [ "$retry" -le 20 ] &&
  ok "create-rate 3 (config file): after a 400 and a 415 that cost nothing, 3 created, then 429 create_rate_limited, Retry-After $retry s: $body" ||
  bad "create rate: created $created, then $code retry=$retry $body"
post /api/sessions "$small" -H "Authorization: Bearer adminadminadmin-0123456789"
[ "$code" = 201 ] && ok "the admin is not rate limited" || bad "admin create: $code $body"
sid=$(json id <<<"$body")
# guesses (join-guess-rate 5): misses are counted, then every lookup is refused, hit or miss
codes=""
for i in 1 2 3 4 5 6; do
  codes="$codes $(curl -s -o "$tmp/body" -w '%{http_code}' "$base/api/sessions/ZZZZZ$i")"
done
hit=$(curl -s -o "$tmp/body" -D "$tmp/head" -w '%{http_code}' "$base/api/sessions/$sid")
[ "$codes" = " 404 404 404 404 404 429" ] && [ "$hit" = 429 ] &&
  grep -q too_many_guesses "$tmp/body" && grep -qi '^Retry-After: [0-9]' "$tmp/head" &&
  ok "join-guess-rate 5: 5 misses, then 429 too_many_guesses for any id (even a live one): $(cat "$tmp/body")" ||
  bad "guesses: $codes, then $hit $(cat "$tmp/body")"
out=$("$probe" --port "$wsport" --session "$sid" --seconds 1)
[ "$(json connected <<<"$out")" = 0 ] && ok "... and the websocket join too" || bad "ws join after guessing: $out"
other=$(curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.2 "$base/api/sessions/$sid")
[ "$other" = 200 ] && ok "another address still looks sessions up (200)" || bad "from 127.0.0.2: $other"
stop_daemon

# ---- daemon 2: the defaults
start_daemon "$daemon" --admin-token-file "$tmp/admin" --max-sessions 20 --ws-ping-seconds 1 \
  --trusted-proxies 127.0.0.3
for h in evil.example 'evil.example:80' '127.0.0.1.evil.example' 'localhost.:80'; do
  c=$(curl -s -o "$tmp/body" -w '%{http_code}' -H "Host: $h" "$base/healthz")
  [ "$c" = 403 ] && grep -q host_not_allowed "$tmp/body" || bad "Host $h: $c $(cat "$tmp/body")"
done
ok "a Host not allowed gets 403 host_not_allowed: $(cat "$tmp/body")"
for h in localhost 'localhost:1234' '127.0.0.1:9' '[::1]:8080' 'LOCALHOST'; do
  c=$(curl -s -o /dev/null -w '%{http_code}' -H "Host: $h" "$base/healthz")
  [ "$c" = 200 ] || bad "Host $h: $c"
done
ok "localhost, 127.0.0.1 and [::1], any port, are allowed"
c=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Host: evil.example' -H 'Content-Type: application/json' \
  --data-binary "$small" "$base/api/sessions")
[ "$c" = 403 ] && ok "a rebinding page cannot create a session either" || bad "create via evil host: $c"
# JSON only
code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X POST "$base/api/sessions" --data-binary "$small")
[ "$code" = 415 ] && grep -q unsupported_media_type "$tmp/body" &&
  ok "a body sent as a form (curl's default type) gets 415: $(cat "$tmp/body")" || bad "form post: $code $(cat "$tmp/body")"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/api/sessions" -H 'Content-Type: text/plain' --data-binary "$small")
[ "$code" = 415 ] && ok "text/plain: 415" || bad "text/plain: $code"
# per-client sessions: 4 live ones, then 429; finished and failed ones free their slot
post /api/sessions "$small" -H 'Content-Type: application/json; charset=utf-8'
[ "$code" = 201 ] && ok "application/json; charset=utf-8 is JSON" || bad "json with charset: $code $body"
first=$(json id <<<"$body")
first_token=$(json control_token <<<"$body")
for i in 2 3 4 5; do post /api/sessions "$small"; done
[ "$code" = 429 ] && [ "$(json error.code <<<"$body")" = client_session_limit ] && [ -n "$retry" ] &&
  ok "max-sessions-per-client 4: the 5th gets 429 client_session_limit, Retry-After $retry: $body" ||
  bad "5th session: $code $body"
c=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/api/sessions/$first/actions" \
  -H "Authorization: Bearer $first_token" -H 'Content-Type: application/json' --data-binary '{"type":"finish"}')
post /api/sessions "$small"
[ "$c" = 200 ] && [ "$code" = 201 ] && ok "a finished session frees its client's slot" ||
  bad "after finish ($c): $code $body"
live=$(json id <<<"$body")
post /api/sessions "$small" -H "Authorization: Bearer adminadminadmin-0123456789"
[ "$code" = 201 ] && ok "the admin is not held to the per-client limit" || bad "admin: $code $body"
post /api/sessions "$small" --interface 127.0.0.2
[ "$code" = 201 ] && ok "another address has its own 4" || bad "from 127.0.0.2: $code $body"
# behind a trusted proxy (127.0.0.3 here) the client is the one it forwards
for i in 1 2 3 4 5; do post /api/sessions "$small" --interface 127.0.0.3 -H 'X-Forwarded-For: 1.1.1.1, 10.0.0.1'; done
c5=$code
post /api/sessions "$small" --interface 127.0.0.3 -H 'X-Forwarded-For: 10.0.0.2'
c6=$code
post /api/sessions "$small" -H 'X-Forwarded-For: 10.0.0.3'
[ "$c5" = 429 ] && [ "$c6" = 201 ] && [ "$code" = 429 ] &&
  ok "trusted-proxies: clients behind a proxy are told apart by X-Forwarded-For (5th of 10.0.0.1: $c5, 10.0.0.2: $c6); an untrusted peer cannot claim one ($code)" ||
  bad "proxy: 10.0.0.1 5th $c5, 10.0.0.2 $c6, spoofed from 127.0.0.1 $code"
# IPv6 clients behind the proxy count by their /64 (ipv6-prefix 64): 40 lookups of sessions that
# do not exist from 40 addresses of one /64 run out of its 20 guesses (a third of one back a
# second: at least 10 refused unless the 40 took 30 s); the next /64 has its own
g404=0 g429=0
for i in $(seq 40); do
  c=$(curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.3 -H "X-Forwarded-For: 2001:db8:7:7::$i" \
    "$base/api/sessions/nosuch${i}session")
  case $c in 404) g404=$((g404 + 1)) ;; 429) g429=$((g429 + 1)) ;; esac
done
c=$(curl -s -o /dev/null -w '%{http_code}' --interface 127.0.0.3 -H 'X-Forwarded-For: 2001:db8:7:8::1' \
  "$base/api/sessions/nosuch0session")
[ "$g429" -ge 10 ] && [ $((g404 + g429)) = 40 ] && [ "$c" = 404 ] &&
  ok "IPv6 behind a proxy by /64: 40 misses from 40 addresses of one /64, $g404 answered and $g429 refused; the next /64 is answered ($c)" ||
  bad "IPv6 /64: $g404 answered, $g429 refused, next /64 $c"
# websockets: the Origin of a browser page must be an allowed host, and so must the Host
out=$("$probe" --port "$wsport" --session "$live" --seconds 1 --origin evil.example)
[ "$(json connect_errors <<<"$out")" = 1 ] && ok "websocket from an Origin of another site: refused" ||
  bad "evil origin: $out"
out=$("$probe" --port "$wsport" --session "$live" --seconds 1 --host evil.example)
[ "$(json connect_errors <<<"$out")" = 1 ] && ok "websocket with a Host not allowed: refused" || bad "evil host: $out"
out=$("$probe" --port "$wsport" --session "$live" --seconds 3 --origin localhost:8080)
[ "$(json connected <<<"$out")" = 1 ] && [ "$(json frames <<<"$out")" -ge 30 ] &&
  [ "$(json close_status <<<"$out")" = 0 ] &&
  ok "websocket from a page on localhost, answering pings (ws-ping-seconds 1) for 3 s: $(json frames <<<"$out") frames, never dropped" ||
  bad "localhost origin: $out"
# a viewer that never reads nor answers a ping is dropped
viewers() { curl -s "$base/api/sessions/$live" | json viewers; }
python3 - "$wsport" "$live" <<'EOF' &
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall((f"GET /ws/sessions/{sys.argv[2]} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
           "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
time.sleep(60)  # never reads again
EOF
deaf=$!
seen=0
for _ in $(seq $((20 * m))); do
  [ "$(viewers)" = 1 ] && seen=1 && break
  sleep 0.1
done
dropped=""
for i in $(seq $((40 * m))); do
  [ "$(viewers)" = 0 ] && dropped=$i && break
  sleep 0.25
done
kill "$deaf" 2>/dev/null
[ "$seen" = 1 ] && [ -n "$dropped" ] &&
  ok "a viewer that never reads is dropped (seen, then gone within $(awk "BEGIN{print $dropped * 0.25}") s; pings every 1 s)" ||
  bad "deaf viewer: seen=$seen dropped=$dropped viewers=$(viewers)"
stop_daemon

# ---- daemon 3: connections. Idle clients that send half a header, from one address and from
# many, must never make /healthz unreachable; one address holds at most max-connections-per-ip.
start_daemon "$daemon" --max-connections-per-ip 20 --http-timeout 10 \
  --allowed-origins http://lab.example,https://lab.example:8443 --trusted-proxies 127.0.0.99
post /api/sessions "$small"
sid=$(json id <<<"$body")
out=$(python3 - "$port" "$m" <<'EOF'
import http.client, socket, sys, time
port, mult = int(sys.argv[1]), float(sys.argv[2])
def idle(src):
    s = socket.socket()
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    return s
def healthz(src):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=15 * mult, source_address=(src, 0))
        c.request("GET", "/healthz")
        return c.getresponse().status
    except Exception as e:
        return type(e).__name__
held = [idle("127.0.0.1") for _ in range(20)]
time.sleep(0.5)
print("one-address", healthz("127.0.0.1"))
for n in range(2, 18):
    held += [idle(f"127.0.0.{n}") for _ in range(20)]
time.sleep(0.5)
t = time.monotonic()
print("many", len(held), healthz("127.0.0.40"), round(time.monotonic() - t, 3))
# the silent ones are closed after http-timeout
deadline = time.monotonic() + 10 + 20 * mult
s = held[-1]
s.settimeout(max(0.1, deadline - time.monotonic()))
try:
    print("closed", s.recv(100) == b"", round(time.monotonic() - t, 1))
except Exception as e:
    print("closed", type(e).__name__)
EOF
)
grep -q '^one-address [^2]' <<<"$out" &&
  ok "max-connections-per-ip 20: with 20 idle, the 21st from that address is refused ($(grep one-address <<<"$out"))" ||
  bad "per-IP limit: $out"
grep -q '^many 340 200 ' <<<"$out" &&
  ok "340 idle half-header connections from 17 addresses: /healthz still answers: $(grep many <<<"$out")" ||
  bad "idle flood: $out"
grep -q '^closed True' <<<"$out" && ok "silent connections are closed after http-timeout 10: $(grep closed <<<"$out")" ||
  bad "idle timeout: $out"
a=$("$probe" --port "$wsport" --session "$sid" --seconds 1 --origin lab.example | json connected)
b=$("$probe" --port "$wsport" --session "$sid" --seconds 1 --origin localhost | json connected)
[ "$a" = 1 ] && [ "$b" = 0 ] && ok "allowed-origins http://lab.example: its pages connect, localhost's do not" ||
  bad "allowed-origins: lab.example $a, localhost $b"
out=$("$probe" --port "$wsport" --session "$sid" --viewers 21 --seconds 2 --origin lab.example)
[ "$(json connected <<<"$out")" = 20 ] && [ "$(json connect_errors <<<"$out")" = 1 ] &&
  ok "websockets: 20 viewers from one address connect, the 21st is refused" || bad "ws per-IP: $out"
# behind a trusted proxy (127.0.0.99) a client's websockets count as its own however long the
# X-Forwarded-For it comes with: 20 with a short header, then one whose header is 2 KiB
out=$(python3 - "$wsport" "$sid" <<'EOF'
import socket, sys
port, sid = int(sys.argv[1]), sys.argv[2]
def shake(forwarded):
    s = socket.socket()
    s.bind(("127.0.0.99", 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    s.sendall((f"GET /ws/sessions/{sid} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               f"Sec-WebSocket-Version: 13\r\nX-Forwarded-For: {forwarded}\r\n\r\n").encode())
    try:
        line = s.recv(64).split(b"\r\n")[0].decode()
    except Exception as e:
        line = type(e).__name__
    return s, line
held = [shake("10.9.9.9") for _ in range(20)]
print("short", sum(" 101 " in l + " " for _, l in held))
hops = ", ".join("192.0.2.%d" % (i % 250) for i in range(160)) + ", 10.9.9.9"
s, line = shake(hops)
print("long", len(hops), " 101 " in line + " ")
s, line = shake(hops[:-1] + "7")
print("other", " 101 " in line + " ")
EOF
)
grep -q '^short 20$' <<<"$out" && grep -q '^long [0-9]* False$' <<<"$out" && grep -q '^other True$' <<<"$out" &&
  ok "behind a trusted proxy a client's 21st websocket is refused, its X-Forwarded-For 2 KiB long or not; another client with as long a header connects ($(tr '\n' ' ' <<<"$out"))" ||
  bad "forwarded websockets: $out"
stop_daemon

# ---- daemon 4 (issue 32): bytes held for readers that never read have a server-wide bound ----
start_daemon "$daemon" --max-held-reply-mb 8
created=$(curl -s -X POST "$base/api/sessions" -H 'Content-Type: application/json' \
  --data-binary '{"scene":"cluster","params":{"bodies":20000}}')
sid=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' <<<"$created")
stok=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["control_token"])' <<<"$created")
curl -s -o /dev/null -X POST "$base/api/sessions/$sid/actions" -H "Authorization: Bearer $stok" \
  -H 'Content-Type: application/json' --data-binary '{"type":"pause"}'
out=$(python3 - "$port" "$sid" <<'EOF'
import http.client, socket, sys, time
port, sid = int(sys.argv[1]), sys.argv[2]
def held():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    return int(next(l.split()[1] for l in text.splitlines() if l.startswith("grainlab_http_held_bytes ")))
def snapshot():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/api/sessions/%s/snapshot?format=csv" % sid)
    r = c.getresponse()
    body = r.read()
    return r.status, r.getheader("Retry-After"), len(body)
# 12 clients ask for the 3 MB snapshot and never read (a receive window of 4 KiB)
readers = []
for _ in range(12):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(("GET /api/sessions/%s/snapshot?format=csv HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % sid).encode())
    readers.append(s)
    time.sleep(0.2)
most = max(held() for _ in range(5))
status, retry, _ = snapshot()
print("held", most, "then", status, retry)
for s in readers:
    s.close()
end = time.time() + 30
while held() > 0 and time.time() < end:
    time.sleep(0.2)
print("after", held(), *snapshot()[::2])
EOF
)
held=$(sed -n 's/^held \([0-9]*\) .*/\1/p' <<<"$out")
grep -q '^held [0-9]* then 503 5$' <<<"$out" && [ "$held" -le $(((8 + 4) << 20)) ] && [ "$held" -ge $((4 << 20)) ] &&
  grep -q '^after 0 200 3[0-9]\{6\}$' <<<"$out" &&
  ok "12 unread 3 MB snapshots hold $held bytes at most (max-held-reply-mb 8, plus one reply), the next asker gets 503 with Retry-After 5, and once they go, 200 ($(tr '\n' ' ' <<<"$out"))" ||
  bad "held replies: $out"
stop_daemon

echo "passed $pass, failed $fail"
[ "$fail" = 0 ]
