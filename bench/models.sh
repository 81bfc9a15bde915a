#!/usr/bin/env bash
# The fluid and gravity models (issue 8): SPH particle-steps/s for a block of water at 20 000 and
# 100 000 particles, N-body steps/s for the direct sum at 2 000 bodies and the Barnes–Hut tree
# (θ = 0.5) at 100 000, each on one and two threads.
#
#   bench/models.sh            (STEPS_SPH and STEPS_NBODY scale the timed steps)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
grainlab="${GRAINLAB:-$repo/build/grainlab}"
[[ -x "$grainlab" ]] || { echo "error: no grainlab at $grainlab (bash scripts/build.sh)" >&2; exit 1; }
field() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read().splitlines()[-1])[sys.argv[1]])' "$1"; }
printf '%-9s %7s %6s %7s %8s %9s %16s %10s %8s %10s\n' scene N force threads steps substeps \
  particle-steps/s steps/s speedup RSS/part
run() { # scene N steps
  local base=""
  for t in 1 2; do
    out="$("$grainlab" bench --scene "$1" --grains "$2" --steps "$3" --threads "$t")"
    rate=$(field steps_per_s <<<"$out")
    [[ -n "$base" ]] || base=$rate
    printf '%-9s %7s %6s %7s %8s %9s %16s %10s %8s %10s\n' "$1" "$2" "$(field force <<<"$out")" "$t" \
      "$3" "$(field substeps <<<"$out")" "$(field particle_substeps_per_s <<<"$out")" "$rate" \
      "$(python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$rate" "$base")" \
      "$(field rss_bytes_per_grain <<<"$out")"
  done
}
run dambreak 20000 "${STEPS_SPH:-48}"
run dambreak 100000 "$(( ${STEPS_SPH:-48} / 4 ))"
run cluster 2000 "${STEPS_NBODY:-240}"
run cluster 100000 "$(( ${STEPS_NBODY:-240} / 24 ))"
