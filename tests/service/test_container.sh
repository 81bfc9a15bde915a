#!/usr/bin/env bash
# deploy/Containerfile for real: podman builds it on a Debian 12 base made from Debian's packages
# (deploy/base-image.sh) and runs grainlabd in it with published ports: health, a session over
# REST, a websocket stream checked frame by frame, the user, the database on its volume, the
# image's health check, a graceful stop and a second container finding the run on the volume.
# Exits 77 (skipped) where podman cannot run a container. CACHE_DIR keeps the base tarball and
# podman's storage with its layer cache, so only a first run pays for debootstrap and the build.
set -u
probe=${1:?usage: test_container.sh ws_probe CACHE_DIR}
cache=${2:?usage: test_container.sh ws_probe CACHE_DIR}
src="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
j() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
skip() {
  echo "SKIP $1"
  exit 77
}
scale=${GRAINLAB_TIMEOUT_MULTIPLIER:-1}

# ---- can podman run here? ------------------------------------------------------------------------
command -v podman >/dev/null || skip "podman is not installed (scripts/install-deps.sh installs it)"
command -v debootstrap >/dev/null || skip "debootstrap is not installed (scripts/install-deps.sh installs it)"
[ "$(id -u)" = 0 ] || skip "not root: debootstrap needs root to make the base image, and the test runs podman as root"
chroot / true 2>/dev/null || skip "chroot is not permitted here: neither debootstrap nor a container runtime can work"

# podman's state for this cache alone: its storage in the cache; its run and tmp folders, meant
# to vanish at a reboot, under /run and short (overlay refuses a runroot over 50 characters), and
# cleared when the boot changes (/run is a tmpfs on most machines, not on every one)
mkdir -p "$cache" && cache=$(cd "$cache" && pwd) # podman's database keeps the paths it was made with
state=/run/grainlab-test-$(printf %s "$cache" | sha256sum | cut -c1-12)
boot=$(cat /proc/sys/kernel/random/boot_id)
if [ "$(cat "$state/boot_id" 2>/dev/null)" != "$boot" ]; then
  rm -rf "$state"
fi
mkdir -p "$state" && echo "$boot" >"$state/boot_id"
# the base, from Debian's mirror (no registry here); a changed base-image.sh makes a new one, and
# every cached layer above the old one is then useless: podman's storage starts anew with it
base_tar="$cache/debian-12-minbase-$(sha256sum "$src/deploy/base-image.sh" | cut -c1-12).tar"
if [ ! -s "$base_tar" ]; then
  rm -rf "$cache"/debian-12-minbase-*.tar "$cache/podman" "$state"/*-run "$state"/*-tmp
  t0=$SECONDS
  bash "$src/deploy/base-image.sh" "$base_tar" >"$tmp/base.log" 2>&1 ||
    { bad "deploy/base-image.sh: $(tail -5 "$tmp/base.log")" && exit 1; }
  ok "deploy/base-image.sh: debootstrap --variant=minbase bookworm, $(($(stat -c %s "$base_tar") >> 20)) MiB, in $((SECONDS - t0)) s"
fi
base=localhost/grainlab-test-base:12
image=localhost/grainlab-test:latest

# Podman gives a container its own maximum of open files and processes, which a root without
# CAP_SYS_RESOURCE (a sandboxed one, as here) cannot raise to: 'setrlimit RLIMIT_NOFILE: Operation
# not permitted'. Ask for this shell's hard limits, and for podman build's own default of 32768
# processes (podman lowers its own limit to that before starting the runtime).
nofile=$(ulimit -Hn)
nproc=$(ulimit -Hu)
[ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
limits=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
# The first storage driver and runtime that run a container with a published port. Overlay, else
# vfs (a full copy per layer: here a cold build took 290 s instead of 60, and 6 GB of disk). The
# default runtime (crun on Debian), else runc: crun refuses cgroups in hybrid mode with a
# controller on the v2 hierarchy, as on this machine (hugetlb).
pod=()
tried=""
for driver in overlay vfs; do
  for runtime in "" runc; do
    p=(podman --root "$cache/podman/$driver" --runroot "$state/$driver-run" --tmpdir "$state/$driver-tmp"
      --storage-driver "$driver" ${runtime:+--runtime "$runtime"})
    if ! "${p[@]}" image exists "$base" 2>/dev/null && ! out=$("${p[@]}" import -q "$base_tar" "$base" 2>&1); then
      tried+="${tried:+; }$driver: import: $(echo "$out" | tail -1)"
      continue 2
    fi
    if out=$("${p[@]}" run --rm -p 127.0.0.1::8080 "${limits[@]}" "$base" true 2>&1); then
      pod=("${p[@]}")
      break 2
    fi
    tried+="${tried:+; }$driver, ${runtime:-default runtime}: $(echo "$out" | tail -1)"
  done
done
[ ${#pod[@]} -gt 0 ] || skip "podman cannot run a container here ($tried)"
ok "podman $(podman --version | cut -d' ' -f3) runs a container: $driver storage, ${runtime:-the default} runtime${tried:+ (not: $tried)}"
# the storage is this cache's alone: whatever a killed earlier run left in it is ours to remove
"${pod[@]}" rm -a -f -v >/dev/null 2>&1
"${pod[@]}" volume prune -f >/dev/null 2>&1
name=grainlab-test-$$
volume=grainlab-test-data-$$
stop_container() {
  "${pod[@]}" logs "$name" >"$tmp/out" 2>"$tmp/err"
  "${pod[@]}" rm -f -t 0 "$name" "$name-2" >/dev/null 2>&1
  "${pod[@]}" volume rm -f "$volume" >/dev/null 2>&1
  cleanup
}
trap stop_container EXIT

# ---- the build ---------------------------------------------------------------------------------
# RUN steps on the host's network (apt and npm reach their mirrors as the host does, no NAT), two
# compile jobs, niced for the tests beside it; docker format, as OCI images drop HEALTHCHECK. The
# build stage gets a tag of its own so that pruning the replaced images keeps its cached layers.
build=(nice "${pod[@]}" build --network=host --pull=never --format docker "${limits[@]}"
  -f "$src/deploy/Containerfile" --build-arg "BASE=$base" --build-arg "RUNTIME_BASE=$base"
  --build-arg JOBS=2)
t0=$SECONDS
if "${build[@]}" --target build -t localhost/grainlab-test-build "$src" >"$tmp/build.log" 2>&1 &&
  "${build[@]}" -t "$image" "$src" >>"$tmp/build.log" 2>&1; then
  cached=$(grep -c '^--> Using cache' "$tmp/build.log")
  ok "podman build -f deploy/Containerfile: $image in $((SECONDS - t0)) s ($cached steps from the cache)"
else
  bad "podman build: $(tail -30 "$tmp/build.log")"
  exit 1
fi
"${pod[@]}" image prune -f >/dev/null 2>&1

# ---- grainlabd in the container, as deploy/README.md runs it -------------------------------------
# published on loopback only, at ports podman picks (tests beside this one use theirs)
if ! out=$("${pod[@]}" run -d --name "$name" -p 127.0.0.1::8080 -p 127.0.0.1::8081 "${limits[@]}" \
  -v "$volume:/var/lib/grainlab" "$image" 2>&1); then
  bad "podman run: $out"
  exit 1
fi
port=$("${pod[@]}" port "$name" 8080/tcp | sed -n 's/^127\.0\.0\.1:\([0-9]*\)$/\1/p')
wsport=$("${pod[@]}" port "$name" 8081/tcp | sed -n 's/^127\.0\.0\.1:\([0-9]*\)$/\1/p')
base_url="http://127.0.0.1:$port"
for _ in $(seq $((200 * scale))); do # 20 s, more on slow machines
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$base_url/readyz")" = 200 ] && break
  sleep 0.1
done
code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$base_url/healthz")
[ "$code" = 200 ] && [ "$(j 'd["status"]' <"$tmp/body")" = ok ] &&
  ok "GET /healthz through the published port 127.0.0.1:$port: 200 $(cat "$tmp/body")" ||
  bad "/healthz: $code $(cat "$tmp/body")"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$base_url/readyz")
[ "$code" = 200 ] && [ "$(j 'd["ready"]' <"$tmp/body")" = True ] &&
  ok "GET /readyz: 200 $(cat "$tmp/body")" || bad "/readyz: $code $(cat "$tmp/body")"
code=$(curl -s -o "$tmp/created" -w '%{http_code}' -X POST "$base_url/api/sessions" \
  -H 'Content-Type: application/json' --data-binary '{"scene":"pour","params":{"amount":10}}')
got=$(j '(d["scene"], d["state"], d["params"]["amount"], len(d["id"]) > 0, len(d["control_token"]) > 0)' \
  <"$tmp/created" 2>/dev/null)
[ "$code" = 201 ] && [ "$got" = "('pour', 'running', 10.0, True, True)" ] &&
  ok "POST /api/sessions: 201, a running pour with amount 10" || bad "create: $code $(cat "$tmp/created")"
sid=$(j 'd["id"]' <"$tmp/created" 2>/dev/null)
# at once: the probe's headless twin can replay the run only from within its first second
"$probe" --port "$wsport" --session "$sid" --seconds 3 --verify >"$tmp/ws"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["connected"] == 1 and d["first_kind"] == 1 and d["frames"] > 30 and d["decode_errors"] == 0 and d["verified"] == d["frames"] and d["max_err_steps"] <= 0.5 + 1e-6 and d["measurements"] >= 8 else 1)' "$tmp/ws"; then
  ok "websocket on 127.0.0.1:$wsport: $(j 'd["frames"]' <"$tmp/ws") frames, each decoded and equal to this build's engine re-running the scene"
else
  bad "websocket: $(cat "$tmp/ws")"
fi
page=$(curl -s -w ' %{http_code}' "$base_url/")
code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$base_url/node_modules/uplot/dist/uPlot.esm.js")
[ "${page##* }" = 200 ] && grep -qi '^<!doctype html>' <<<"$page" && [ "$code" = 200 ] && [ -s "$tmp/body" ] &&
  ok "the client's page and its libraries (npm ci in the build stage) are served" ||
  bad "GET /: ${page##* }, GET /node_modules/uplot/dist/uPlot.esm.js: $code"
uid=$("${pod[@]}" exec "$name" id -u 2>&1)
[ "$uid" = 10001 ] && ok "grainlabd runs as the unprivileged user grainlab (uid 10001)" || bad "the container's user: $uid"
data=$("${pod[@]}" volume inspect "$volume" --format '{{.Mountpoint}}')
owner=$(stat -c %u "$data/grainlab.db" 2>&1)
[ "$owner" = 10001 ] && ok "the database is on the volume $volume, owned by uid 10001" ||
  bad "grainlab.db on the volume: $owner ($(ls -ln "$data" 2>&1))"
# the image's HEALTHCHECK, run by hand (podman's timer for it needs systemd, absent in CI)
if out=$("${pod[@]}" healthcheck run "$name" 2>&1) &&
  [ "$("${pod[@]}" inspect "$name" --format '{{.State.Health.Status}}')" = healthy ]; then
  ok "the image's HEALTHCHECK (curl /readyz inside): healthy"
else
  bad "HEALTHCHECK: $out $("${pod[@]}" inspect "$name" --format '{{json .State.Health}}')"
fi
# podman stop sends SIGTERM to grainlabd, the container's first process: every run closed
"${pod[@]}" stop -t $((30 * scale)) "$name" >/dev/null 2>&1
exit_code=$("${pod[@]}" inspect "$name" --format '{{.State.ExitCode}}')
[ "$exit_code" = 0 ] && "${pod[@]}" logs "$name" 2>&1 | grep -q 'event=stopped' &&
  ok "podman stop: grainlabd closed every run, flushed the store and exited 0" ||
  bad "podman stop: exit $exit_code, $("${pod[@]}" logs "$name" 2>&1 | tail -3)"

# a new container on the same volume finds the run, closed as stopped
"${pod[@]}" run -d --name "$name-2" -p 127.0.0.1::8080 "${limits[@]}" -v "$volume:/var/lib/grainlab" \
  "$image" >/dev/null 2>&1
port2=$("${pod[@]}" port "$name-2" 8080/tcp | sed -n 's/^127\.0\.0\.1:\([0-9]*\)$/\1/p')
for _ in $(seq $((200 * scale))); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port2/readyz")" = 200 ] && break
  sleep 0.1
done
got=$(curl -s "http://127.0.0.1:$port2/api/runs" | j '(d["total"], [(r["scene"], r["end_reason"]) for r in d["runs"]])' 2>&1)
[ "$got" = "(1, [('pour', 'stopped')])" ] &&
  ok "a second container on the volume finds the run: $got" || bad "runs after a new container: $got"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
