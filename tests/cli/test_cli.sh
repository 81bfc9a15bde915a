#!/usr/bin/env bash
# The grainlab CLI as a user meets it: JSON Lines output, determinism across threads, actions,
# and every kind of bad input refused with one line on stderr, exit status 2 and nothing run.
set -u
bin=${1:?usage: test_cli.sh path/to/grainlab}
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

# expect_error NAME WORD ARGS...: exit 2, one stderr line mentioning WORD, empty stdout
expect_error() {
  local name=$1 word=$2
  shift 2
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$? lines
  lines=$(wc -l <"$tmp/err")
  if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && [ ! -s "$tmp/out" ] && grep -q -- "$word" "$tmp/err"; then
    ok "$name: $(cat "$tmp/err")"
  else
    bad "$name: exit $rc, $lines stderr line(s), stdout $(wc -c <"$tmp/out") bytes: $(head -c 300 "$tmp/err")"
  fi
}

# catalogue
if "$bin" scenes >"$tmp/scenes" && grep -q '"name":"pour"' "$tmp/scenes" &&
  grep -q '"name":"mu","unit":"","min":0.0,"max":1.5' "$tmp/scenes"; then
  ok "scenes lists pour with its parameters"
else
  bad "scenes output: $(head -c 300 "$tmp/scenes")"
fi
# the same catalogue as GET /api/scenes (test_store.sh compares the two): a sample's state is no
# measurement
if ! grep -q '"state"' "$tmp/scenes"; then
  ok "scenes lists measurements only, as the API does (no \"state\")"
else
  bad "scenes lists \"state\": $(grep -o '"measurements":\[[^]]*\]' "$tmp/scenes" | head -1)"
fi

# a short run: 4 samples (every 0.25 s) and a final line
"$bin" run --scene pour --quality 0 --seconds 1 --seed 3 >"$tmp/run1" 2>"$tmp/err"
rc=$?
samples=$(grep -c '^{"t":' "$tmp/run1")
final=$(tail -n 1 "$tmp/run1")
if [ $rc -eq 0 ] && [ "$samples" -eq 4 ] &&
  echo "$final" | grep -Eq '^\{"final":\{"t":1,"angle":(null|[-0-9.e]+),"top":[-0-9.e]+,"cx":.*"alive":[0-9]+,"state":"[a-z]+"\},"digest":"[0-9a-f]{16}","steps":240,"grains":[0-9]+\}$'; then
  ok "run prints 4 samples and the final line"
else
  bad "run: exit $rc, $samples samples, final: $final $(cat "$tmp/err")"
fi
if grep -q '"t":0.5,"angle":[^,]*,"top":[^,]*,"cx":[^,]*,"cz":[^,]*,"over_max":[^,]*,"flowing":[^,]*,"alive":[0-9]*,"state":"filling"' "$tmp/run1"; then
  ok "samples carry t, angle, top, cx, cz, over_max, flowing, alive, state"
else
  bad "sample keys: $(sed -n 2p "$tmp/run1")"
fi

# same inputs, 2 threads: same digest
"$bin" run --scene pour --quality 0 --seconds 1 --seed 3 --threads 2 >"$tmp/run2"
if [ "$(tail -n 1 "$tmp/run1")" = "$(tail -n 1 "$tmp/run2")" ]; then
  ok "1 and 2 threads print the same final line and digest"
else
  bad "thread digests differ: $(tail -n 1 "$tmp/run2")"
fi
"$bin" run --scene pour --quality 0 --seconds 1 --seed 4 >"$tmp/run3"
if [ "$(tail -n 1 "$tmp/run1" | grep -o 'digest":"[0-9a-f]*')" != "$(tail -n 1 "$tmp/run3" | grep -o 'digest":"[0-9a-f]*')" ]; then
  ok "another seed gives another digest"
else
  bad "seed did not change the run"
fi

# actions: stopping the pour early leaves fewer grains; moving the spout moves the pile
"$bin" run --scene pour --quality 0 --seconds 3 --action 1:pour:off >"$tmp/stop"
n_stop=$(tail -n 1 "$tmp/stop" | grep -o '"grains":[0-9]*' | cut -d: -f2)
"$bin" run --scene pour --quality 0 --seconds 3 >"$tmp/full"
n_full=$(tail -n 1 "$tmp/full" | grep -o '"grains":[0-9]*' | cut -d: -f2)
if [ "$n_stop" -gt 0 ] && [ "$n_stop" -lt "$n_full" ]; then
  ok "pour:off at 1 s stops the pour ($n_stop < $n_full grains)"
else
  bad "pour:off: $n_stop vs $n_full grains"
fi
"$bin" run --scene pour --quality 0 --seconds 8 --action 0:spout:2,-1 >"$tmp/moved"
cx=$(tail -n 1 "$tmp/moved" | grep -o '"cx":[-0-9.e]*' | cut -d: -f2)
cz=$(tail -n 1 "$tmp/moved" | grep -o '"cz":[-0-9.e]*' | cut -d: -f2)
if awk -v x="$cx" -v z="$cz" 'BEGIN { exit !(x > 1.5 && x < 2.5 && z > -1.5 && z < -0.5) }'; then
  ok "spout:2,-1 builds the pile at ($cx, $cz)"
else
  bad "spout:2,-1 pile centre at ($cx, $cz)"
fi
"$bin" run --scene pour --quality 0 --seconds 2 --action 0.5:tool:0,0.5,0,0,0,0 --action 1:tool_off --action 1.5:reset >"$tmp/tool"
# reset restarts the scene and its clock: 0.5 s remain after it
if [ $? -eq 0 ] && tail -n 1 "$tmp/tool" | grep -q '"t":0.5,.*"steps":120'; then
  ok "tool, tool_off and reset run; reset restarts the clock"
else
  bad "tool/reset run failed"
fi

# the other scenes' actions
# (each once its grains have settled: silo 3.75 s, slump 5.75 s, tilt 3.25 s at quality 0)
"$bin" run --scene silo --quality 0 --seconds 9 --action 5:open_hole >"$tmp/silo"
first=$(sed -n 20p "$tmp/silo" | grep -o '"mass_above":[0-9.e+]*' | cut -d: -f2)
last=$(tail -n 1 "$tmp/silo" | grep -o '"mass_above":[0-9.e+]*' | cut -d: -f2)
if tail -n 1 "$tmp/silo" | grep -q '"flow":[0-9.e+]*,.*"mass_above":[0-9.e+]*,"fill":[0-9.e+]*,.*"beverloo":[0-9.e+]*,.*"state":"flowing"' &&
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < 0.9 * a) }'; then
  ok "silo: open_hole drains it ($first -> $last kg above the plate)"
else
  bad "silo: $(tail -n 1 "$tmp/silo")"
fi
"$bin" run --scene slump --quality 0 --seconds 12 --action 7:pull_dam:2 >"$tmp/slump"
f0=$(sed -n 28p "$tmp/slump" | grep -o '"front":[0-9.]*' | cut -d: -f2)
f1=$(tail -n 1 "$tmp/slump" | grep -o '"front":[0-9.]*' | cut -d: -f2)
if awk -v a="$f0" -v b="$f1" 'BEGIN { exit !(b > a + 0.5) }'; then
  ok "slump: pull_dam:2 lets the column run out (front $f0 -> $f1 m)"
else
  bad "slump: front $f0 -> $f1"
fi
"$bin" run --scene tilt --quality 0 --seconds 12 --action 5:tilt:15,5 >"$tmp/tilt"
ang=$(tail -n 1 "$tmp/tilt" | grep -o '"angle":[-0-9.e]*' | cut -d: -f2)
if awk -v a="$ang" 'BEGIN { exit !(a > 12 && a < 18) }'; then
  ok "tilt: tilt:15,5 turns the box; the surface stands at $ang deg"
else
  bad "tilt: surface at $ang deg"
fi
"$bin" run --scene chains --quality 0 --seconds 3 >"$tmp/chains"
if tail -n 1 "$tmp/chains" | grep -q '"chains":[0-9]*,"contacts":[0-9]*,"digest"'; then
  ok "chains: the final line counts the force chains"
else
  bad "chains: $(tail -n 1 "$tmp/chains")"
fi
for scene in wet chains slump tilt silo; do
  if "$bin" run --scene "$scene" --quality 0 --seconds 0.5 --action 0.25:reset >/dev/null; then
    ok "$scene runs and resets"
  else
    bad "$scene failed to run"
  fi
done

# every kind of bad input
expect_error "unknown scene" "sandcastle" run --scene sandcastle
expect_error "unknown parameter" "viscosity" run --scene pour --set viscosity=1
expect_error "out-of-range value" "mu" run --scene pour --set mu=2
expect_error "negative value" "mu" run --scene pour --set mu=-0.1
expect_error "non-numeric value" "mu" run --scene pour --set mu=abc
expect_error "empty value" "mu" run --scene pour --set mu=
expect_error "not KEY=VALUE" "KEY=VALUE" run --scene pour --set mu
expect_error "fractional quality" "quality" run --scene pour --quality 1.5
expect_error "amount out of range" "amount" run --scene pour --amount 5
expect_error "grains with quality" "--grains excludes" run --scene pour --grains 100 --quality 1
expect_error "zero grains" "--grains" run --scene pour --grains 0
expect_error "non-numeric grains" "--grains" run --scene pour --grains lots
expect_error "negative seconds" "--seconds" run --scene pour --seconds -1
expect_error "non-numeric seconds" "--seconds" run --scene pour --seconds soon
expect_error "zero threads" "--threads" run --scene pour --threads 0
expect_error "non-integer seed" "--seed" run --scene pour --seed 1.5
expect_error "seed over 64 bits" "--seed" run --scene pour --seed 99999999999999999999
expect_error "unknown action" "fly" run --scene pour --action 1:fly
expect_error "silo action in pour" "open_hole" run --scene pour --action 1:open_hole
expect_error "tilt beyond 60 degrees" "tilt" run --scene tilt --action 1:tilt:90
expect_error "dam pulled at zero speed" "pull_dam" run --scene slump --action 1:pull_dam:0
expect_error "hole too small" "hole" run --scene silo --set hole=0.1
expect_error "aspect out of range" "aspect" run --scene slump --set aspect=9
expect_error "silo parameter in pour" "hole" run --scene pour --set hole=1
expect_error "action argument out of range" "spout" run --scene pour --action 1:spout:99,0
expect_error "action arguments missing" "spout" run --scene pour --action 1:spout:1
expect_error "action not in this scene" "tilt" run --scene pour --action 1:tilt:10
# an experiment is not started under the settle drag: the run stops at the action, saying why
if ! "$bin" run --scene silo --quality 0 --seconds 3 --action 0.5:open_hole >"$tmp/early" 2>"$tmp/err" &&
  grep -q "step 120: the grains are still settling (at most [0-9.]* s more): 'open_hole' waits" "$tmp/err"; then
  ok "open_hole while settling: $(cat "$tmp/err")"
else
  bad "open_hole while settling: $(head -c 300 "$tmp/err")"
fi
expect_error "action after the run ends" "outside" run --scene pour --seconds 2 --action 5:pour:off
expect_error "action without time" "time" run --scene pour --action pour:off
expect_error "unknown option" "--colour" run --scene pour --colour blue
expect_error "missing scene" "--scene" run --seconds 1
expect_error "option without value" "--seed" run --scene pour --seed
expect_error "unknown command" "fly" fly
expect_error "grains for a scene sized by its parameters" "grains" run --scene dambreak --grains 500
expect_error "grains for the two-body orbit" "grains" run --scene orbit --grains 3
expect_error "width out of range" "width" run --scene dambreak --set width=2
expect_error "negative softening" "eps" run --scene orbit --set eps=-0.1
expect_error "opening angle out of range" "theta" run --scene cluster --set theta=1.5
expect_error "fractional body count" "bodies" run --scene cluster --set bodies=100.5
expect_error "grain action in a water scene" "tool" run --scene dambreak --action 1:tool:0,1,0
expect_error "bench of a scene without a bench workload" "orbit" bench --scene orbit --grains 100
expect_error "bench without grains" "--grains" bench --scene pour
expect_error "bench with a bad step count" "--steps" bench --scene pour --grains 100 --steps 0
expect_error "bench with an unknown fill" "--fill" bench --scene pour --grains 100 --fill heap
expect_error "bench waiting after no action" "--after" bench --scene silo --grains 100 --after 1
expect_error "bench with a negative wait" "--after" bench --scene silo --grains 100 --action open_hole --after -1
expect_error "bench with an action the scene lacks" "open_hole" bench --scene pour --grains 100 --action open_hole
expect_error "bench with an action out of range" "angle" bench --scene tilt --grains 100 --action tilt:75
expect_error "bench of the silo's own fill at a bed" "fill" bench --scene silo --grains 100 --fill bed

# the fluid and gravity scenes: their own measurements, models in the catalogue, bench output
if grep -q '"name":"dambreak","model":"fluid"' "$tmp/scenes" &&
  grep -q '"name":"cluster","model":"gravity"' "$tmp/scenes" &&
  grep -q '"name":"pour","model":"granular"' "$tmp/scenes"; then
  ok "scenes name each scene's model"
else
  bad "models in the catalogue: $(grep -o '"name":"[a-z]*","model":"[a-z]*"' "$tmp/scenes" | tr '\n' ' ')"
fi
"$bin" run --scene dambreak --quality 0 --seconds 0.5 >"$tmp/water"
if grep -Eq '^\{"t":0.5,"alive":512,"front":[0-9.e]+,"height":[0-9.e]+,"kinetic":[0-9.e]+,"potential":[0-9.e]+,"energy":[0-9.e]+,"state":"running"\}$' "$tmp/water"; then
  ok "dambreak samples carry front, height and energies"
else
  bad "dambreak samples: $(sed -n 2p "$tmp/water")"
fi
"$bin" run --scene orbit --seconds 0.5 >"$tmp/orbit"
if grep -Eq '^\{"t":0.5,"alive":2,"kinetic":[0-9.e-]+,"potential":-[0-9.e-]+,"energy":-[0-9.e-]+,"energy_drift":[-0-9.e]+,"angular_momentum":[0-9.e-]+,"virial":[0-9.e-]+,"state":"running"\}$' "$tmp/orbit"; then
  ok "orbit samples carry energies, drift, angular momentum and virial ratio"
else
  bad "orbit samples: $(sed -n 2p "$tmp/orbit")"
fi
if "$bin" bench --scene cluster --grains 300 --steps 5 | grep -q '"model":"gravity","substeps":1,.*"force":"direct"' &&
  "$bin" bench --scene dambreak --grains 300 --steps 2 | grep -Eq '"model":"fluid","substeps":[0-9]+,.*"force":"pairs"'; then
  ok "bench runs water and bodies"
else
  bad "bench of the new models failed"
fi
# the dynamic workloads of bench/: the silo flowing (its own fill), the bed tilted at once
if "$bin" bench --scene silo --grains 300 --fill scene --action open_hole --after 0.5 --steps 20 |
  grep -Eq '"scene":"silo","grains":300,.*"max_speed":[1-9]' &&
  "$bin" bench --scene tilt --grains 300 --action tilt:35,90 --steps 20 | grep -q '"scene":"tilt","grains":300,'; then
  ok "bench runs the flowing silo and the avalanching bed"
else
  bad "bench of the flowing silo or the avalanching bed failed"
fi
# resting grains (under 1 cm/s): nearly all of a settled bed, few of a draining silo
bed=$("$bin" bench --scene pour --grains 300 --steps 60 | sed -n 's/.*"resting_fraction":\([0-9.]*\).*/\1/p')
flow=$("$bin" bench --scene silo --grains 300 --fill scene --action open_hole --after 0.5 --steps 60 |
  sed -n 's/.*"resting_fraction":\([0-9.]*\).*/\1/p')
if python3 -c 'import sys; b, f = map(float, sys.argv[1:]); sys.exit(0 if b > 0.8 and f < 0.3 else 1)' "${bed:-x}" "${flow:-x}" 2>/dev/null; then
  ok "bench counts resting grains: settled bed $bed, draining silo $flow"
else
  bad "resting fractions: bed '$bed', silo '$flow'"
fi

# --snapshot (issue 19): the run's final state as CSV and VTK, read back with Debian's python3-vtk9
# (tests/support/check_snapshot.py): every value hashes to the run's digest; a bad name or path
# is refused before anything runs, and leaves no file
here=$(cd "$(dirname "$0")/.." && pwd)
for f in csv vtk; do
  "$bin" run --scene silo --quality 0 --seconds 5.5 --action 5:open_hole --snapshot "$tmp/snap.$f" >"$tmp/snap-$f.out" 2>"$tmp/snap.err" ||
    bad "run --snapshot $f: $(head -c 300 "$tmp/snap.err")"
done
digest=$(tail -1 "$tmp/snap-csv.out" | sed -n 's/.*"digest":"\([0-9a-f]*\)".*/\1/p')
grains=$(tail -1 "$tmp/snap-csv.out" | sed -n 's/.*"grains":\([0-9]*\)}.*/\1/p')
if cmp -s <(tail -1 "$tmp/snap-csv.out") <(tail -1 "$tmp/snap-vtk.out") &&
  /usr/bin/python3 "$here/support/check_snapshot.py" "$tmp/snap.csv" "$tmp/snap.vtk" "${digest:-x}" "${grains:-0}" >"$tmp/check.out" 2>&1; then
  ok "run --snapshot: $grains grains of a draining silo as CSV ($(wc -c <"$tmp/snap.csv") bytes) and VTK ($(wc -c <"$tmp/snap.vtk") bytes) read back to digest $digest"
else
  bad "run --snapshot: $(grep -v '^ok' "$tmp/check.out" | head -c 600)"
fi
expect_error "snapshot with another extension" "ends neither" run --scene pour --quality 0 --seconds 0.25 --snapshot "$tmp/snap.txt"
expect_error "snapshot to a folder that does not exist" "cannot write" run --scene pour --quality 0 --seconds 0.25 --snapshot "$tmp/none/snap.csv"
expect_error "snapshot of a run refused" "seconds" run --scene pour --quality 0 --seconds -1 --snapshot "$tmp/refused.csv"
if [ ! -e "$tmp/snap.txt" ] && [ ! -e "$tmp/refused.csv" ]; then
  ok "a refused run leaves no snapshot file"
else
  bad "a refused run left a file: $(ls "$tmp")"
fi

# a negative seed is a valid 64-bit integer
if "$bin" run --scene pour --quality 0 --seconds 0.25 --seed -5 >/dev/null; then
  ok "negative seed accepted"
else
  bad "negative seed refused"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
