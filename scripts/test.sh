#!/usr/bin/env bash
# The whole test suite: a Release build with every ctest label, then an address+undefined
# sanitizer build running the unit tests, then the daemon's service tests against an ASan and a
# TSan daemon (those two side by side). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# Debian's python3 (scripts/install-deps.sh) ahead of any version manager's shim on PATH: pyenv's
# shim costs about 0.3 s a start, and the service tests start python3 hundreds of times per daemon
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
if [ -x /usr/bin/python3 ]; then
  ln -s /usr/bin/python3 "$tools/python3"
  export PATH="$tools:$PATH"
fi
GRAINLAB_TEST_COMMANDS=ON bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$jobs"
# sanitizers: slower, so timeouts are scaled; halt on the first report
asan=(env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1)
tsan=(env TSAN_OPTIONS=halt_on_error=1)
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAINLAB_SANITIZE=ON \
  -DGRAINLAB_TIMEOUT_MULTIPLIER=6 >/dev/null
cmake --build build-asan
"${asan[@]}" ctest --test-dir build-asan --output-on-failure -j "$jobs" -L unit -E '^lint$'
# the daemon (it faces the network) under the same sanitizers, and under the thread sanitizer
# (sessions, pacing threads and request threads share state), talking to release workers: a
# sanitized worker cannot live inside its own address-space limit
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAINLAB_TSAN=ON \
  -DGRAINLAB_TESTS=OFF >/dev/null
cmake --build build-tsan --target grainlabd
# service: the daemon's REST API, the websocket stream (one service thread, pacing threads
# publishing), the store (its writer thread, readers on request threads, kill -9), private runs
# and a disk that fills up (the writer's retries, readers told at once; test_disk.sh exits 77
# where it may not mount its tmpfs), and the limits (per-client buckets shared by request threads
# and the websocket thread, floods of idle connections). Each script starts its own daemon on
# free ports and mostly waits on real-time sessions (the CPU stood 85-90 % idle for a minute at a
# time with one series per daemon), so each daemon's scripts run as two series, and the ASan and
# the TSan daemons' side by side: four at once, their output kept apart.
service() { # BUILD-DIR SERIES ENV-COMMAND...
  local dir=$1 series=$2
  shift 2
  local d=$dir/daemon-check/grainlabd
  case $series in
    1)
      "$@" bash tests/service/test_daemon.sh "$d" &&
        "$@" bash tests/service/test_stream.sh "$d" build/ws_probe
      ;;
    2)
      "$@" bash tests/service/test_store.sh "$d" build/grainlab build/ws_probe &&
        "$@" bash tests/service/test_privacy.sh "$d" &&
        "$@" GRAINLAB_TIMEOUT_MULTIPLIER=6 python3 tests/service/test_class.py "$d" build/ws_probe &&
        { "$@" bash tests/service/test_disk.sh "$d" || [ $? = 77 ]; } &&
        "$@" GRAINLAB_TIMEOUT_MULTIPLIER=6 bash tests/service/test_limits.sh "$d" build/ws_probe
      ;;
  esac
}
pids=()
for dir in build-asan build-tsan; do
  mkdir -p "$dir/daemon-check"
  cp "$dir/grainlabd" build/grainlab-worker "$dir/daemon-check/"
  if [ "$dir" = build-asan ]; then env=("${asan[@]}"); else env=("${tsan[@]}"); fi
  for series in 1 2; do
    service "$dir" "$series" "${env[@]}" >"$dir/service-$series.log" 2>&1 &
    pids+=("$!")
  done
done
failed=()
i=0
for dir in build-asan build-tsan; do
  for series in 1 2; do
    wait "${pids[$i]}" || failed+=("$dir's daemon, series $series")
    i=$((i + 1))
  done
done
for dir in build-asan build-tsan; do
  for series in 1 2; do
    echo "---- the service tests against $dir's daemon, series $series ----"
    cat "$dir/service-$series.log"
  done
done
if [ ${#failed[@]} -gt 0 ]; then
  printf 'FAIL: the service tests against %s\n' "${failed[@]}"
  exit 1
fi
