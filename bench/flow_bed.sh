#!/usr/bin/env bash
# The flowing silo against the packed bed (issue 33, item 2), one core: each given grainlab binary
# in turn, ROUNDS rounds, pinned to the last CPU; prints every run and each binary's minimum.
# Usage: bash bench/flow_bed.sh [GRAINLAB ...]   (default: build/grainlab)   ROUNDS=3
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
rounds="${ROUNDS:-3}"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "error: ROUNDS must be a positive integer" >&2; exit 2; }
bins=("$@")
[[ ${#bins[@]} -gt 0 ]] || bins=("$repo/build/grainlab")
for b in "${bins[@]}"; do
  [[ -x "$b" ]] || { echo "error: no grainlab at $b (bash scripts/build.sh)" >&2; exit 1; }
done
cpu=$(($(nproc) - 1))
ns() { grep -o '"ns_per_grain_step":[0-9.]*' | cut -d: -f2; }
declare -A flow bed
for ((r = 1; r <= rounds; r++)); do
  for b in "${bins[@]}"; do
    out=$(taskset -c "$cpu" "$b" bench --scene silo --grains 3000 --fill scene --action open_hole \
      --after 1 --steps 4800 --threads 1)
    f=$(ns <<<"$out")
    d=$(taskset -c "$cpu" "$b" bench --scene pour --grains 3000 --steps 4800 --threads 1 | ns)
    lists=$(grep -o '"rebuilds":[0-9]*,"relists":[0-9]*,"refreshes":[0-9]*' <<<"$out" || true)
    echo "round $r  $b  flow $f  bed $d  $lists"
    flow[$b]="${flow[$b]:-} $f"
    bed[$b]="${bed[$b]:-} $d"
  done
done
echo "minimum over $rounds rounds (ns per grain-step):"
for b in "${bins[@]}"; do
  # shellcheck disable=SC2086
  f=$(printf '%s\n' ${flow[$b]} | sort -g | head -1)
  # shellcheck disable=SC2086
  d=$(printf '%s\n' ${bed[$b]} | sort -g | head -1)
  awk -v b="$b" -v f="$f" -v d="$d" 'BEGIN { printf "%s  flow %.1f  bed %.1f  flow/bed %.3f\n", b, f, d, d / f }'
done
