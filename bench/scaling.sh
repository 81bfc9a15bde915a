#!/usr/bin/env bash
# Thread scaling and memory of grainlab's packed-bed benchmark: for each N, one and two threads,
# printing ns per grain-step, grain-steps/s, the 2-thread speed-up and peak RSS per grain.
#
#   bench/scaling.sh [N ...]      (default: 3000 30000 100000; STEPS overrides the step count)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
grainlab="${GRAINLAB:-$repo/build/grainlab}"
[[ -x "$grainlab" ]] || { echo "error: no grainlab at $grainlab (bash scripts/build.sh)" >&2; exit 1; }
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(3000 30000 100000)
field() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read().splitlines()[-1])[sys.argv[1]])' "$1"; }
printf '%8s %6s %8s %10s %14s %8s %12s %8s\n' N steps threads ns/gs grain-steps/s speedup RSS/grain coord
for n in "${sizes[@]}"; do
  steps=${STEPS:-$(( n > 30000 ? 500 : 2000 ))}
  base=""
  for t in 1 2; do
    out="$("$grainlab" bench --scene pour --grains "$n" --steps "$steps" --threads "$t")"
    rate=$(field grain_steps_per_s <<<"$out")
    [[ -n "$base" ]] || base=$rate
    printf '%8s %6s %8s %10s %14s %8s %12s %8s\n' "$n" "$steps" "$t" \
      "$(field ns_per_grain_step <<<"$out")" "$rate" \
      "$(python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$rate" "$base")" \
      "$(field rss_bytes_per_grain <<<"$out")" "$(field coordination <<<"$out")"
  done
done
