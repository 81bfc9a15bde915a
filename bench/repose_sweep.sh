#!/usr/bin/env bash
# Angle of repose against sliding friction from our own engine: the pour scene at its defaults
# (3000 grains, mur 0.1, no cohesion), mu at fractions of its catalogue range, SEEDS seeds each,
# run until the pile sleeps; writes the reference table the results page and the class dashboard
# draw next to Coulomb's tan θ = mu (web_client/js/repose_table.js), with the command, date and
# commit that made it. tests/physics/test_repose_table.mjs reruns its middle row.
#
#   bench/repose_sweep.sh [OUT]     (OUT: web_client/js/repose_table.js; SEEDS=5, SECONDS_RUN=60,
#                                    FRACTIONS: of the catalogue's mu range, "0 1/15 2/15 ... 1")
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
grainlab="${GRAINLAB:-$repo/build/grainlab}"
[[ -x "$grainlab" ]] || { echo "error: no grainlab at $grainlab (bash scripts/build.sh)" >&2; exit 1; }
out="${1:-$repo/web_client/js/repose_table.js}"
seeds="${SEEDS:-5}"
seconds="${SECONDS_RUN:-60}"
# denser where the angle rises fast (low mu), as fractions of the range so the catalogue stays
# the one place the range is written
fractions="${FRACTIONS:-0 1/15 2/15 3/15 5/15 1/2 2/3 1}"
commit="$(git -C "$repo" rev-parse --short HEAD)"
# an engine with uncommitted changes is not the commit named: say so in the table
git -C "$repo" diff --quiet HEAD -- engine || commit="$commit+dirty-engine"

# mu's range from the catalogue (grainlab scenes), never from here
read -r lo hi < <("$grainlab" scenes | python3 -c '
import json, sys
p = next(q for s in json.load(sys.stdin)["scenes"] if s["name"] == "pour" for q in s["params"] if q["name"] == "mu")
print(p["min"], p["max"])')
mus="$(python3 -c '
import sys
from fractions import Fraction
lo, hi = float(sys.argv[1]), float(sys.argv[2])
print(" ".join("%.3g" % (lo + float(Fraction(f)) * (hi - lo)) for f in sys.argv[3].split()))' "$lo" "$hi" "$fractions")"

tmp="$(mktemp)"
trap 'rm -f "$tmp" "$tmp.js"' EXIT
start=$SECONDS
for mu in $mus; do
  for seed in $(seq 1 "$seeds"); do
    t0=$SECONDS
    final="$("$grainlab" run --scene pour --set "mu=$mu" --seed "$seed" --seconds "$seconds" --threads 1 | tail -n 1)"
    echo "$mu $seed $final" >>"$tmp"
    python3 -c 'import json,sys; f=json.loads(sys.argv[3])["final"]; print("mu %-6s seed %s  angle %6.2f°  %s  %ds" % (sys.argv[1], sys.argv[2], f["angle"], f["state"], int(sys.argv[4])), file=sys.stderr)' \
      "$mu" "$seed" "$final" "$((SECONDS - t0))"
  done
done
took=$((SECONDS - start))

python3 - "$tmp" "$commit" "$seeds" "$seconds" "$took" "$lo" "$hi" >"$tmp.js" <<'EOF'
import json, statistics, sys, time
path, commit, seeds, seconds, took, lo, hi = sys.argv[1:]
rows, sds, grains = {}, {}, set()
for line in open(path):
    mu, seed, final = line.split(" ", 2)
    r = json.loads(final)
    if r["final"]["state"] != "asleep":
        sys.exit(f"mu {mu} seed {seed}: the pile is still {r['final']['state']} after {seconds} s (raise SECONDS_RUN)")
    rows.setdefault(float(mu), []).append(r["final"]["angle"])
    grains.add(r["grains"])
table = [[mu, round(statistics.mean(a), 2)] for mu, a in sorted(rows.items())]
spread = [round(statistics.stdev(a), 2) if len(a) > 1 else 0 for _, a in sorted(rows.items())]
date = time.strftime("%Y-%m-%d", time.gmtime())
print(f"""// Angle of repose (°) against sliding friction mu from our own engine: the pour scene at its
// defaults ({'/'.join(map(str, sorted(grains)))} grains, mur 0.1, no cohesion), each row the mean final angle of seeds
// 1..{seeds} once the pile sleeps ({seconds} s runs, one thread). Written by bench/repose_sweep.sh on
// {date} at commit {commit} ({took} s wall, one run at a time); run it again after a change to
// the contact law: tests/physics/test_repose_table.mjs fails when its middle row no longer holds.
// The angle rises like Coulomb's at small mu and levels off near 30° above mu ≈ 0.75.
export const REPOSE_SWEEP = {{
  scene: 'pour', seeds: {seeds}, seconds: {seconds},
  command: 'bench/repose_sweep.sh', date: '{date}', commit: '{commit}',
  // [mu, mean angle in °]
  rows: {json.dumps(table)},
  // the seeds' standard deviation at each row, °
  sd: {json.dumps(spread)},
}};""")
EOF
mv "$tmp.js" "$out"
echo "wrote $out: $(wc -l <"$out") lines, ${took} s" >&2
