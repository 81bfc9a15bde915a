#!/usr/bin/env bash
# The whole test suite: a Release build with every ctest label, then an address+undefined
# sanitizer build running the unit tests. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
GRAINLAB_TEST_COMMANDS=ON bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$jobs"
# sanitizers: slower, so timeouts are scaled; halt on the first report
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAINLAB_SANITIZE=ON \
  -DGRAINLAB_TIMEOUT_MULTIPLIER=6 >/dev/null
cmake --build build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -L unit -E '^lint$'
# the daemon (it faces the network) under the same sanitizers, talking to release workers: a
# sanitized worker cannot live inside its own address-space limit
mkdir -p build-asan/daemon-check
cp build-asan/grainlabd build/grainlab-worker build-asan/daemon-check/
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  bash tests/service/test_daemon.sh build-asan/daemon-check/grainlabd
# and under the thread sanitizer: sessions, pacing threads and request threads share state
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGRAINLAB_TSAN=ON \
  -DGRAINLAB_TESTS=OFF >/dev/null
cmake --build build-tsan --target grainlabd
mkdir -p build-tsan/daemon-check
cp build-tsan/grainlabd build/grainlab-worker build-tsan/daemon-check/
TSAN_OPTIONS=halt_on_error=1 bash tests/service/test_daemon.sh build-tsan/daemon-check/grainlabd
# the websocket stream under both sanitizers too: one service thread, pacing threads publishing
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  bash tests/service/test_stream.sh build-asan/daemon-check/grainlabd build/ws_probe
TSAN_OPTIONS=halt_on_error=1 bash tests/service/test_stream.sh build-tsan/daemon-check/grainlabd \
  build/ws_probe
# and the store (its writer thread, readers on request threads, kill -9) under both
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  bash tests/service/test_store.sh build-asan/daemon-check/grainlabd build/grainlab build/ws_probe
TSAN_OPTIONS=halt_on_error=1 bash tests/service/test_store.sh build-tsan/daemon-check/grainlabd \
  build/grainlab build/ws_probe
# private runs and a disk that fills up (the writer's retries, readers told at once) under both;
# test_disk.sh exits 77 where it may not mount its tmpfs
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  bash tests/service/test_privacy.sh build-asan/daemon-check/grainlabd
TSAN_OPTIONS=halt_on_error=1 bash tests/service/test_privacy.sh build-tsan/daemon-check/grainlabd
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  bash tests/service/test_disk.sh build-asan/daemon-check/grainlabd || [ $? = 77 ]
TSAN_OPTIONS=halt_on_error=1 bash tests/service/test_disk.sh build-tsan/daemon-check/grainlabd || [ $? = 77 ]
# and the limits (per-client buckets shared by request threads and the websocket thread, floods
# of idle connections) under both
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  GRAINLAB_TIMEOUT_MULTIPLIER=6 bash tests/service/test_limits.sh build-asan/daemon-check/grainlabd \
  build/ws_probe
TSAN_OPTIONS=halt_on_error=1 GRAINLAB_TIMEOUT_MULTIPLIER=6 \
  bash tests/service/test_limits.sh build-tsan/daemon-check/grainlabd build/ws_probe
