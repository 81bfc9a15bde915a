#!/usr/bin/env bash
# A grainlab cluster on this machine, on loopback: PostgreSQL (the shared record), N grainlabd
# nodes each with its own SQLite, and nginx (deploy/nginx-cluster.conf) as the one origin.
#   bash scripts/cluster.sh start      # then open http://127.0.0.1:$ORIGIN_PORT/
#   bash scripts/cluster.sh stop
#   bash scripts/cluster.sh node n1    # (re)start one node, with the flags start gave it
# Settings (environment): CLUSTER_DIR (./cluster), NODES (3), ORIGIN_PORT (8000), BASE_PORT
# (8100: node k listens on BASE_PORT+2k for HTTP and +1 for websockets), PG_PORT (5433), BUILD
# (build), NODE_FLAGS (more grainlabd flags for every node: start keeps them in
# $CLUSTER_DIR/node.flags, and node uses those unless NODE_FLAGS is given again). Every node
# takes the teacher token in $CLUSTER_DIR/teacher.token (made on the first start), and start
# prints the /teach link.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir=$(realpath -m "${CLUSTER_DIR:-./cluster}")
nodes=${NODES:-3}
origin=${ORIGIN_PORT:-8000}
base=${BASE_PORT:-8100}
pgport=${PG_PORT:-5433}
build=$(realpath -m "${BUILD:-$root/build}")
pgbin=/usr/lib/postgresql/15/bin

die() { echo "cluster.sh: $*" >&2; exit 1; }
names() { for ((k = 0; k < nodes; k++)); do echo "n$k"; done; }
http_port() { echo $((base + 2 * ${1#n})); }
ws_port() { echo $((base + 2 * ${1#n} + 1)); }

# PostgreSQL refuses to run as root: as its own user then
pguser=$(id -un)
if [ "$(id -u)" = 0 ]; then
  pguser=postgres
  id -u postgres >/dev/null 2>&1 || pguser=nobody
fi
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u "$pguser" -- "$@"; else "$@"; fi; }

start_postgres() {
  [ -x "$pgbin/initdb" ] || die "no PostgreSQL 15 in $pgbin (scripts/install-deps.sh installs it)"
  if [ ! -d "$dir/pg/data" ]; then
    mkdir -p "$dir/pg"
    chmod 711 "$dir"
    # the password lives in one file the nodes read (PGPASSWORD), never in a URL or a log
    head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$dir/pg/password"
    chmod 600 "$dir/pg/password"
    cp "$dir/pg/password" "$dir/pg/pwfile"
    chown -R "$pguser" "$dir/pg"
    as_pg "$pgbin/initdb" -D "$dir/pg/data" -U grainlab --auth=scram-sha-256 \
      --pwfile="$dir/pg/pwfile" -E UTF8 >"$dir/pg/initdb.log" 2>&1 ||
      die "initdb: $(tail -3 "$dir/pg/initdb.log")"
    rm "$dir/pg/pwfile"
    chown root "$dir/pg/password" 2>/dev/null || true
  fi
  as_pg "$pgbin/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -p $pgport -k $dir/pg" start >/dev/null ||
    die "PostgreSQL did not start: $(tail -3 "$dir/pg/log")"
}

# one teacher token for every node: a class is made on whichever node has room
teacher_token() {
  if [ ! -s "$dir/teacher.token" ]; then
    (umask 077 && od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$dir/teacher.token")
  fi
  cat "$dir/teacher.token"
}

# the pid in node N's pid file, if that process is still N's grainlabd: after a kill -9 the
# file outlives it, and its pid may by now be another program's
node_pid() {
  local pid
  pid=$(cat "$dir/$1.pid" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "grainlabd --node $1 " &&
    echo "$pid"
}

start_node() {
  local n=$1 peers="" m pid flags
  for m in $(names); do peers+="${peers:+,}http://127.0.0.1:$(http_port "$m")"; done
  mkdir -p "$dir/$n"
  if pid=$(node_pid "$n"); then kill "$pid" 2>/dev/null && sleep 1 || true; fi
  flags=$(cat "$dir/node.flags" 2>/dev/null || true)
  # the wait below reads this file: the last run's "listening" must not answer for this one
  rm -f "$dir/$n.out"
  # shellcheck disable=SC2086 # the flags are a list
  PGPASSWORD=$(cat "$dir/pg/password") setsid "$build/grainlabd" --node "$n" \
    --http-port "$(http_port "$n")" --ws-port "$(ws_port "$n")" --ws-public-port 0 \
    --peers "$peers" --results-db "postgresql://grainlab@127.0.0.1:$pgport/postgres" \
    --data-dir "$dir/$n" --static-dir "$root/web_client" --trusted-proxies 127.0.0.1 \
    --teacher-token-file "$dir/teacher.token" \
    $flags >"$dir/$n.out" 2>>"$dir/$n.log" &
  echo $! >"$dir/$n.pid"
  for _ in $(seq 400); do
    grep -qs '^listening' "$dir/$n.out" && return 0
    kill -0 "$(cat "$dir/$n.pid")" 2>/dev/null || break
    sleep 0.05
  done
  die "node $n did not start: $(tail -3 "$dir/$n.log")"
}

start_nginx() {
  mkdir -p "$dir/nginx"
  local specs=() n
  for n in $(names); do specs+=("$n=127.0.0.1:$(http_port "$n"):$(ws_port "$n")"); done
  bash "$root/deploy/nginx-cluster-nodes.sh" "${specs[@]}" >"$dir/nginx/grainlab-nodes.conf"
  sed "s|listen 80;|listen 127.0.0.1:$origin;|" "$root/deploy/nginx-cluster.conf" >"$dir/nginx/site.conf"
  cat >"$dir/nginx/nginx.conf" <<EOF
worker_processes 1; pid $dir/nginx/nginx.pid; error_log $dir/nginx/error.log;
events { worker_connections 1024; }
http { access_log off; client_body_temp_path $dir/nginx/body; proxy_temp_path $dir/nginx/proxy;
  include /etc/nginx/mime.types; include $dir/nginx/site.conf; }
EOF
  nginx -t -q -c "$dir/nginx/nginx.conf" -p "$dir/nginx" || die "nginx -t refused the configuration"
  nginx -c "$dir/nginx/nginx.conf" -p "$dir/nginx"
}

stop_all() {
  [ -f "$dir/nginx/nginx.pid" ] && kill "$(cat "$dir/nginx/nginx.pid")" 2>/dev/null
  local n
  local pid
  for n in $(names); do
    if pid=$(node_pid "$n"); then kill "$pid" 2>/dev/null || true; fi
    rm -f "$dir/$n.pid"
  done
  for n in $(names); do # each closes its runs as stopped and ships them before PostgreSQL goes
    for _ in $(seq 200); do pgrep -f "grainlabd --node $n " >/dev/null || break; sleep 0.05; done
  done
  [ -d "$dir/pg/data" ] && as_pg "$pgbin/pg_ctl" -D "$dir/pg/data" -m fast -w stop >/dev/null 2>&1
  return 0
}

case "${1:-}" in
start)
  [ -x "$build/grainlabd" ] || die "no $build/grainlabd (bash scripts/build.sh)"
  mkdir -p "$dir"
  printf '%s\n' "${NODE_FLAGS:-}" >"$dir/node.flags"
  token=$(teacher_token)
  start_postgres
  for n in $(names); do start_node "$n"; done
  start_nginx
  echo "grainlab cluster: http://127.0.0.1:$origin/ ($nodes nodes, PostgreSQL on 127.0.0.1:$pgport, files in $dir)"
  echo "teacher: http://127.0.0.1:$origin/teach#token=$token"
  ;;
node)
  [[ ${2:-} =~ ^n[0-9]+$ ]] && [ "${2#n}" -lt "$nodes" ] || die "node: one of $(names | tr '\n' ' ')"
  [ -n "${NODE_FLAGS+set}" ] && printf '%s\n' "$NODE_FLAGS" >"$dir/node.flags"
  start_node "$2"
  ;;
stop) stop_all ;;
*) die "usage: cluster.sh start|stop|node NAME" ;;
esac
