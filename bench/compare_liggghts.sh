#!/usr/bin/env bash
# Compare grainlab with LIGGGHTS on the "packed bed" benchmark, on the same
# bed avalanching (gravity turning TILT degrees at RATE degrees/s from the first
# timed step) and on the default silo draining, one core each; with the bed and
# the silo both run, each code's flow against its own bed too (issue 33, item 2).
# The silo is meant at its default 3000 grains: grown with N it falls further
# (12 m/s onto the floor at 30 000), and LIGGGHTS's two-sided floor lets 5 % of
# the grains through (1534 at N = 30000, counted in its rate all the same).
#
#   bench/compare_liggghts.sh [N ...]        (default: 3000 30000 100000)
#
# Environment:
#   GRAINLAB   grainlab binary (default: <repo>/build/grainlab); if it is not
#              an executable file, the grainlab column is skipped.
#   LIGGGHTS   LIGGGHTS binary (default: liggghts from PATH)
#   STEPS      timed steps for every N (default: 2000 for N <= 30000, else 500;
#              the silo 4800, as bench/flow_bed.sh: 20 s of its flow)
#   REPEAT     runs of each code per N, alternating, the best rate of each kept
#              (default 3: this VM's timings wander by +-10 % from run to run)
#   SETTLE     untimed settling steps for LIGGGHTS (default: the deck's; the bed's
#              1500, the silo's grainlab's own settle time)
#   KEEP_LOGS  set to 1 to keep LIGGGHTS's scratch directory and print its path
#   WORKLOADS  any of "bed", "avalanche" and "silo" (default: "bed avalanche")
#   TILT       degrees gravity turns by for the avalanche (default 35)
#   RATE       degrees per second it turns at (default 20: 35 degrees in 420 steps)
#   PIN        the CPU both codes run on (default: the last one; "none": wherever the
#              scheduler puts them). Unpinned, a process moved between this VM's two
#              vCPUs mid-run starts again with cold caches: the same binary times
#              ~25 % apart from run to run (bench/README.md, "Second pass").
#
# Both codes run the same timed step count on a settled bed; the figure of
# merit is grain-steps/s = N * steps / (time of the timed loop only).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
decks="$here/liggghts"
grainlab="${GRAINLAB:-$repo/build/grainlab}"
liggghts="${LIGGGHTS:-liggghts}"

sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(3000 30000 100000)
for n in "${sizes[@]}"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "error: grain count '$n' is not a positive integer" >&2; exit 2; }
done
[[ -z "${STEPS:-}" || "$STEPS" =~ ^[1-9][0-9]*$ ]] || { echo "error: STEPS='$STEPS' is not a positive integer" >&2; exit 2; }
[[ -z "${SETTLE:-}" || "$SETTLE" =~ ^[0-9]+$ ]] || { echo "error: SETTLE='$SETTLE' is not an integer" >&2; exit 2; }
repeat="${REPEAT:-3}"
workloads="${WORKLOADS:-bed avalanche}"
tilt="${TILT:-35}"
rate="${RATE:-20}"
for wl in $workloads; do
  [[ "$wl" == bed || "$wl" == avalanche || "$wl" == silo ]] || { echo "error: WORKLOADS may name only bed, avalanche and silo, not '$wl'" >&2; exit 2; }
done
[[ "$tilt" =~ ^[1-9][0-9]?$ && "$tilt" -le 60 ]] || { echo "error: TILT='$tilt' is not a whole number of degrees in 1..60" >&2; exit 2; }
[[ "$rate" =~ ^[1-9][0-9]?$ && "$rate" -le 90 ]] || { echo "error: RATE='$rate' is not a whole number of degrees/s in 1..90" >&2; exit 2; }
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || { echo "error: REPEAT='$repeat' is not a positive integer" >&2; exit 2; }

command -v "$liggghts" >/dev/null 2>&1 || { echo "error: LIGGGHTS binary '$liggghts' not found (apt-get install liggghts, or set LIGGGHTS=...)" >&2; exit 1; }
for d in bed silo; do
  [[ -f "$decks/$d.in" ]] || { echo "error: deck $decks/$d.in is missing" >&2; exit 1; }
done

have_grainlab=1
if [[ ! -f "$grainlab" || ! -x "$grainlab" ]]; then
  have_grainlab=0
  echo "note: no grainlab executable at '$grainlab' -- grainlab runs SKIPPED (build it, or set GRAINLAB=/path/to/grainlab)" >&2
fi

# LIGGGHTS writes log files into its working directory; keep them out of the repo.
work="$(mktemp -d "${TMPDIR:-/tmp}/compare_liggghts.XXXXXX")"
if [[ "${KEEP_LOGS:-0}" == 1 ]]; then
  echo "note: LIGGGHTS logs kept in $work" >&2
else
  trap 'rm -rf "$work"' EXIT
fi

# One process, one thread: a single MPI rank (singleton start, no mpirun) and
# no OpenMP threads in either code.
export OMP_NUM_THREADS=1
# (nproc honours OMP_NUM_THREADS, just set to 1: asked without it, or CPU 0 was "the last")
cpus="$(env -u OMP_NUM_THREADS nproc)"
pin_cpu="${PIN:-$(( cpus - 1 ))}"
pin=()
if [[ "$pin_cpu" != none ]]; then
  [[ "$pin_cpu" =~ ^[0-9]+$ && "$pin_cpu" -lt "$cpus" ]] || { echo "error: PIN='$pin_cpu' is not a CPU of this machine (0..$(( cpus - 1 )) or none)" >&2; exit 2; }
  pin=(taskset -c "$pin_cpu")
  pin_label="pinned to CPU $pin_cpu"
else
  pin_label="unpinned"
fi

# The silo's plate (an annulus round the hole, out past the cylinder) and its cylinder, as ASCII
# STL of one ring of facets each, for grainlab's default silo of N grains: radius
# 1.65·(N/3000)^(1/6), never under 1.25 holes, hole 0.9 m (scenes/silo.c). Prints rs and the hole.
silo_meshes() {
  python3 - "$1" "$2" <<'PY'
import math, sys
n, out = int(sys.argv[1]), sys.argv[2]
hole = 0.9
rs = max(1.65 * (n / 3000.0) ** (1.0 / 6.0), 1.25 * hole)
top = 0.12 + (math.ceil(n / (0.9 * math.pi * (rs - 0.125) ** 2 / 0.235 ** 2)) + 3) * 0.17
# few, large facets: LIGGGHTS finds each mesh's neighbours again at every list build (2400 in
# the timed flow), and 96 sides in 0.2 m rings made its walls 56 % of its time
seg = 48

def ring(a, b, z0, z1, f):
    for k in range(seg):
        t0, t1 = 2 * math.pi * k / seg, 2 * math.pi * (k + 1) / seg
        facet(f, a(t0, z0), a(t1, z0), b(t1, z1))
        facet(f, a(t0, z0), b(t1, z1), b(t0, z1))

def facet(f, p, q, r):
    f.write("facet normal 0 0 0\n outer loop\n")
    for v in (p, q, r):
        f.write("  vertex %.6f %.6f %.6f\n" % v)
    f.write(" endloop\nendfacet\n")

with open(out + "/plate.stl", "w") as f:
    f.write("solid plate\n")
    ring(lambda t, z: (hole / 2 * math.cos(t), hole / 2 * math.sin(t), z),
         lambda t, z: ((rs + 0.3) * math.cos(t), (rs + 0.3) * math.sin(t), z), 0.0, 0.0, f)
    f.write("endsolid plate\n")
with open(out + "/tube.stl", "w") as f:
    f.write("solid tube\n")
    cyl = lambda t, z: (rs * math.cos(t), rs * math.sin(t), z)
    ring(cyl, cyl, 0.0, top, f)
    f.write("endsolid tube\n")
print("%.6f %.6f" % (rs, hole))
PY
}

rows=()
for wl in $workloads; do
for n in "${sizes[@]}"; do
  if [[ -n "${STEPS:-}" ]]; then steps="$STEPS"
  elif [[ "$wl" == silo ]]; then steps=4800
  elif (( n <= 30000 )); then steps=2000
  else steps=500
  fi

  # each code REPEAT times, alternating; the best rate of each is kept
  best_lig=0; best_gl=0; gl_cpg="-"; gl_reb="-"; lig_lost=0
  for r in $(seq "$repeat"); do
  # ---- LIGGGHTS -------------------------------------------------------------
  dir="$work/$wl.N$n.$r"
  mkdir -p "$dir"
  vars=(-var N "$n" -var steps "$steps")
  [[ -n "${SETTLE:-}" ]] && vars+=(-var settle "$SETTLE")
  [[ "$wl" == avalanche ]] && vars+=(-var tilt "$tilt" -var rate "$rate")
  deck="$decks/bed.in"
  if [[ "$wl" == silo ]]; then
    deck="$decks/silo.in"
    read -r rs hole < <(silo_meshes "$n" "$dir")
    vars+=(-var rs "$rs" -var hole "$hole")
  fi
  echo "LIGGGHTS: $wl N=$n steps=$steps (run $r of $repeat) ..." >&2
  if ! (cd "$dir" && "${pin[@]}" "$liggghts" -in "$deck" "${vars[@]}" -log log.liggghts -screen screen.txt </dev/null); then
    echo "error: LIGGGHTS failed for N=$n; last lines of its output:" >&2
    tail -n 20 "$dir/screen.txt" >&2 || true
    exit 1
  fi

  # The timed figure is the "Loop time" of the run between BENCH_BEGIN and
  # BENCH_END; the settling runs before it have their own Loop time lines.
  read -r lig_s lig_steps lig_atoms lig_neigh lig_cpg lig_vmax lig_zmax lig_reb < <(python3 -c '
import re, sys
text = open(sys.argv[1]).read()
# Anchored: the log also echoes the "print ..." commands themselves.
begin = re.search(r"^BENCH_BEGIN", text, re.M)
end = re.search(r"^BENCH_END", text, re.M)
state = re.search(r"^BENCH_STATE (.*)$", text, re.M)
if not (begin and end and state):
    sys.exit("BENCH_BEGIN/BENCH_END/BENCH_STATE markers missing from the LIGGGHTS log")
seg = text[begin.end():end.start()]
m = re.search(r"Loop time of ([0-9.eE+-]+) on (\d+) procs for (\d+) steps with (\d+) atoms", seg)
if not m:
    sys.exit("no Loop time line in the timed run")
if m.group(2) != "1":
    sys.exit("LIGGGHTS ran on %s ranks, expected 1" % m.group(2))
nb = re.search(r"Ave neighs/atom = ([0-9.eE+-]+)", seg)
builds = re.search(r"Neighbor list builds = (\d+)", seg)
st = dict(kv.split("=") for kv in state.group(1).split())
print(m.group(1), m.group(3), m.group(4), nb.group(1) if nb else "nan",
      st["contacts_per_grain"], st["vmax"], st["zmax"], builds.group(1) if builds else "nan")
' "$dir/log.liggghts")
  # every grain counted, even one LIGGGHTS lost (in its favour)
  lig_rate="$(python3 -c 'import sys; n,s,t=map(float,sys.argv[1:]); print("%.0f" % (n*s/t))' "$n" "$lig_steps" "$lig_s")"
  printf 'LIGGGHTS: N=%s  %s steps in %.3f s  -> %s grain-steps/s  (coordination %.2f, neighbours/grain %.2f, list builds %s, max |v| %.3g m/s, top grain z %.3f m)\n' \
    "$lig_atoms" "$lig_steps" "$lig_s" "$lig_rate" "$lig_cpg" "$lig_neigh" "$lig_reb" "$lig_vmax" "$lig_zmax" >&2
  lig_lost=$(( n - lig_atoms ))
  if [[ "$wl" == silo && "$lig_lost" -gt 0 ]]; then
    # LIGGGHTS's walls repel from both sides: a grain whose centre the first 8.6 m/s impacts
    # drive past the floor's plane falls out of the box (grainlab's floor pushes up from below too)
    echo "note: $lig_lost of $n grains fell through LIGGGHTS's silo floor or off its edge" >&2
  elif [[ "$wl" == avalanche && "$lig_lost" -gt 0 ]]; then
    # a deep bed sliding into its +x wall pushes grains through LIGGGHTS's plane walls (both
    # sides of a plane repel); the rate above still counts all n grains
    echo "note: LIGGGHTS lost $lig_lost of $n grains through its walls in the avalanche" >&2
  elif [[ "$lig_atoms" != "$n" ]]; then
    echo "error: LIGGGHTS has $lig_atoms grains at the end of the timed run, expected $n" >&2
    exit 1
  fi

  # ---- grainlab -------------------------------------------------------------
  if (( have_grainlab )); then
    echo "grainlab: $wl N=$n steps=$steps (run $r of $repeat) ..." >&2
    if [[ "$wl" == avalanche ]]; then
      out="$("${pin[@]}" "$grainlab" bench --scene tilt --grains "$n" --steps "$steps" --threads 1 --action "tilt:$tilt,$rate")"
    elif [[ "$wl" == silo ]]; then
      out="$("${pin[@]}" "$grainlab" bench --scene silo --grains "$n" --fill scene --action open_hole --after 1 --steps "$steps" --threads 1)"
    else
      out="$("${pin[@]}" "$grainlab" bench --scene pour --grains "$n" --steps "$steps" --threads 1)"
    fi
    read -r gl_rate gl_cpg gl_ns gl_rss gl_reb < <(python3 -c '
import json, sys
lines = [l for l in sys.stdin.read().splitlines() if l.lstrip().startswith("{")]
if not lines:
    sys.exit("grainlab printed no JSON line")
try:
    r = json.loads(lines[-1])
except ValueError as e:
    sys.exit("grainlab JSON line does not parse (%s): %s" % (e, lines[-1]))
for k in ("grains", "threads", "steps", "coordination", "ns_per_grain_step", "grain_steps_per_s", "peak_rss_bytes", "rebuilds"):
    if k not in r:
        sys.exit("grainlab JSON lacks key %r" % k)
# grains off the edge of the silo floor are gone by the end (out of its rate: against it)
lost_ok = sys.argv[3] == "silo" and 0 < int(r["grains"]) <= int(sys.argv[1])
if (int(r["grains"]) != int(sys.argv[1]) and not lost_ok) or int(r["steps"]) != int(sys.argv[2]) or int(r["threads"]) != 1:
    sys.exit("grainlab ran grains=%s steps=%s threads=%s, expected %s/%s/1"
             % (r["grains"], r["steps"], r["threads"], sys.argv[1], sys.argv[2]))
print("%.0f %.2f %.1f %d %d" % (r["grain_steps_per_s"], r["coordination"], r["ns_per_grain_step"], r["peak_rss_bytes"], r["rebuilds"]))
' "$n" "$steps" "$wl" <<<"$out")
    printf 'grainlab: N=%s  %s grain-steps/s  (%s ns/grain-step, coordination %s, list builds %s, peak RSS %s MiB)\n' \
      "$n" "$gl_rate" "$gl_ns" "$gl_cpg" "$gl_reb" "$(( gl_rss / 1048576 ))" >&2
  fi
  best_lig=$(( lig_rate > best_lig ? lig_rate : best_lig ))
  if (( have_grainlab )); then
    best_gl=$(( gl_rate > best_gl ? gl_rate : best_gl ))
  fi
  done
  lig_rate="$best_lig"; gl_rate="-"; ratio="-"
  if (( have_grainlab )); then
    gl_rate="$best_gl"
    ratio="$(python3 -c 'import sys; print("%.2f" % (float(sys.argv[1])/float(sys.argv[2])))' "$gl_rate" "$lig_rate")"
  fi
  rows+=("$wl $n $steps $lig_rate $lig_cpg $lig_reb $lig_lost $gl_rate $gl_cpg $gl_reb $ratio")
done
done

echo
echo "1 core ($pin_label); avalanche = the bed with gravity turning $tilt degrees at $rate degrees/s from the first timed step; grain-steps/s = N*steps/loop time, the best of $repeat alternating runs of each; coord = grain-grain contacts per grain at the end, both sides counted; builds = pair-list builds in the timed steps (of the run kept last)"
printf '%10s %8s %6s %14s %6s %7s %5s %14s %6s %7s %10s\n' workload N steps LIGGGHTS coord builds lost grainlab coord builds ratio
for row in "${rows[@]}"; do
  read -r wl n steps lr lc lb ll gr gc gb ra <<<"$row"
  [[ "$lc" == "-" ]] || lc="$(printf '%.2f' "$lc")"
  printf '%10s %8s %6s %14s %6s %7s %5s %14s %6s %7s %10s\n' "$wl" "$n" "$steps" "$lr" "$lc" "$lb" "$ll" "$gr" "$gc" "$gb" "$ra"
done
echo "(lost: grains LIGGGHTS's plane walls let through, in the silo or off its floor; its rate still counts all N)"
# each code's flowing silo against its own packed bed, for every N both ran at (issue 33, item 2)
for row in "${rows[@]}"; do
  read -r wl n _ lr _ _ _ gr _ _ _ <<<"$row"
  [[ "$wl" == silo ]] || continue
  for bed in "${rows[@]}"; do
    read -r bwl bn _ blr _ _ _ bgr _ _ _ <<<"$bed"
    [[ "$bwl" == bed && "$bn" == "$n" ]] || continue
    python3 -c 'import sys
n, lf, lb, gf, gb = sys.argv[1:]
g = "%.3f" % (float(gf) / float(gb)) if gf != "-" else "-"
print("flow/bed at N=%s (silo grain-steps/s over the bed'"'"'s): LIGGGHTS %.3f, grainlab %s" % (n, float(lf) / float(lb), g))' \
      "$n" "$lr" "$blr" "$gr" "$bgr"
  done
done
(( have_grainlab )) || echo "(grainlab columns empty: no executable at '$grainlab')"
