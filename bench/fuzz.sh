#!/usr/bin/env bash
# libFuzzer runs of the harnesses in tests/fuzz/ (issue 16): each harness and the engine built with
# Debian's clang (-fsanitize=fuzzer,address,undefined) into its own folder, then fuzzed for a set
# time starting from the checked-in seed corpus. Crashes land in build-fuzz/<harness>/crashes/;
# each one found becomes a regression input in tests/fuzz/corpus/<harness>/ plus a fix (the ctest
# replay, fuzz_<harness>, then runs it on every build, without clang).
# Usage: bash bench/fuzz.sh [HARNESS...]   (default: every tests/fuzz/fuzz_*.c)
# Environment: FUZZ_SECONDS per harness (default 60), FUZZ_JOBS parallel workers (default 1),
#              CC (default clang), FUZZ_BUILD (default build-fuzz).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
secs=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-1}
cc=${CC:-clang}
out=${FUZZ_BUILD:-$root/build-fuzz}
if [ $# -gt 0 ]; then
  harnesses=("$@")
else
  mapfile -t harnesses < <(ls tests/fuzz/fuzz_*.c | sed 's|.*/fuzz_||; s|\.c$||')
fi
# the engine as the normal build compiles it (C17, no FMA contraction, its own defines), plus the
# fuzzer's instrumentation; OpenMP stays on (one thread: the worlds are made with threads = 1)
flags=(-std=c17 -g -O1 -ffp-contract=off -fno-math-errno -fopenmp
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
  -Iengine/include -Iengine/src -DGRN_BUILDING_ENGINE -DGRN_SIMD=1)
mapfile -t engine < <(ls engine/src/*.c engine/src/scenes/*.c)
# what a harness feeds besides the engine: the server sources, include folders and libraries of
# the library tests/CMakeLists.txt links its replay with
extra_for() {
  case $1 in
  runs_filter) echo "server/store/store_filter.c server/common/api_error.c -Iserver/store -Iserver/common" ;;
  ws_message | rest_body) echo "server/api/api_json.c server/common/api_error.c -Iserver/api -Iserver/common -ljansson" ;;
  class_body) echo "server/api/api_class.c server/api/api_json.c server/common/api_error.c server/common/utc.c -Iserver/api -Iserver/common -ljansson" ;;
  frame) echo "server/stream/frame.c -Iserver/stream -lzstd" ;;
  forwarded) echo "server/daemon/allow.c server/daemon/iplimit.c -Iserver/daemon" ;;
  esac
}
status=0
for h in "${harnesses[@]}"; do
  dir=$out/$h
  mkdir -p "$dir/crashes" "$dir/corpus"
  echo "== $h: building with $cc"
  read -r -a extra <<<"$(extra_for "$h")"
  "$cc" "${flags[@]}" -o "$dir/fuzz_$h" "tests/fuzz/fuzz_$h.c" "${engine[@]}" "${extra[@]}" -lm
  # the seeds are read, never written: new inputs go to the harness's own corpus folder
  # inputs as long as the largest seed, and never under 4 KiB (the text harness's seeds are short)
  max_len=$(find "tests/fuzz/corpus/$h" -type f -printf '%s\n' | sort -n | tail -1)
  max_len=$((${max_len:-0} > 4096 ? max_len : 4096))
  echo "== $h: fuzzing for $secs s (seeds: tests/fuzz/corpus/$h, crashes: $dir/crashes)"
  # parallel workers write fuzz-N.log into the working folder: run from the harness's own
  par=()
  if [ "$jobs" -gt 1 ]; then
    par=(-jobs="$jobs" -workers="$jobs")
  fi
  if ! (cd "$dir" && "./fuzz_$h" -max_total_time="$secs" "${par[@]}" \
    -max_len="$max_len" -rss_limit_mb=4096 -timeout=20 -print_final_stats=1 \
    -artifact_prefix="$dir/crashes/" "$dir/corpus" "$root/tests/fuzz/corpus/$h" \
    >"$dir/log.txt" 2>&1); then
    status=1
    echo "== $h: CRASH, see $dir/log.txt and $dir/crashes/"
  fi
  tail -n 12 "$dir/log.txt"
done
exit $status
