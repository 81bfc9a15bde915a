// The laws a class's results are plotted against, one function each, and which run figures
// each scene compares with which law. Pure functions (no DOM): tests/unit/test_theory.mjs checks
// them against known values in node.
import { REPOSE_SWEEP } from './repose_table.js';

// The engine's constants for Beverloo's law, as ../shared/spec/engine.md §1 gives them. The
// bulk density is the silo's own, measured by the engine before its hole first opens (its
// `bulk_density`, ~0.68·RHO for these grains); the spec's 0.6·RHO stands in where none is known.
export const G = 9.8; // m/s²
export const D0 = 0.2; // m, mean grain diameter
export const RHO = 2650; // kg/m³, grain density
export const RHO_B = 0.6 * RHO; // kg/m³, the spec's bulk density
export const BEVERLOO_C = 0.58;
export const BEVERLOO_K = 1.5;

// Silo discharge through a hole of diameter d (m) for bulk density rhoB (kg/m³), kg/s:
// W = C·ρb·√g·(D − k·d0)^(5/2) for D > k·d0, else 0 (spec §3, "Beverloo").
export function beverloo(d, rhoB = RHO_B) {
  const e = d - BEVERLOO_K * D0;
  return e > 0 ? BEVERLOO_C * rhoB * Math.sqrt(G) * e ** 2.5 : 0;
}

// The bulk density the silos were measured at: the mean of the finished ones' (a class's silos
// differ by well under 1 %), or of the live ones' while none has finished; null when none says.
export function bulkDensity(rows) {
  const of = (rs) => rs.map((r) => r.results && r.results.bulk_density).filter((v) => Number.isFinite(v) && v > 0);
  const done = of(rows.filter((r) => !r.live)), ds = done.length ? done : of(rows);
  return ds.length ? ds.reduce((a, b) => a + b, 0) / ds.length : null;
}

// Angle of repose (degrees) for a sliding friction mu: Coulomb's sliding-block limit tan θ = μ
// (the classical relation; rolling resistance and packing move a real pile off it, which is
// what a class sees when it plots its piles against it).
export function reposeCoulomb(mu) {
  return (Math.atan(mu) * 180) / Math.PI;
}

// Angle of repose (degrees) our own engine gives a poured pile at sliding friction mu, the rest
// at the pour scene's defaults: straight lines between the rows of bench/repose_sweep.sh's table
// (js/repose_table.js), null outside the mu it swept. It rises like Coulomb's at small mu, then
// levels off near 30° above mu ≈ 0.75, where rolling resistance and the packing hold the slope.
export function reposeSweep(mu, rows = REPOSE_SWEEP.rows) {
  if (!Number.isFinite(mu) || rows.length === 0 || mu < rows[0][0] || mu > rows[rows.length - 1][0]) return null;
  if (rows.length === 1) return rows[0][1];
  let k = 1;
  while (rows[k][0] < mu) k++;
  const [x0, y0] = rows[k - 1], [x1, y1] = rows[k];
  return y0 + ((mu - x0) * (y1 - y0)) / (x1 - x0);
}

// Normalised runout (L∞ − L0)/L0 of a collapsing column of aspect ratio a = H0/L0 in a channel:
// Lube, Huppert, Sparks & Freundt (2005, Phys. Rev. E 72, 041301), 1.2·a for a ≤ 1.8 and
// 1.9·a^(2/3) for a ≥ 2.8; between the two regimes the laws are joined by a power law through
// both ends (a straight line on log axes), so the curve runs over the slump's whole range.
export const SLUMP_LOW = 1.8, SLUMP_HIGH = 2.8;
export function slumpRunout(a) {
  if (!(a > 0)) return 0;
  if (a <= SLUMP_LOW) return 1.2 * a;
  if (a >= SLUMP_HIGH) return 1.9 * a ** (2 / 3);
  const y0 = Math.log(1.2 * SLUMP_LOW), y1 = Math.log(1.9 * SLUMP_HIGH ** (2 / 3));
  const s = (Math.log(a) - Math.log(SLUMP_LOW)) / (Math.log(SLUMP_HIGH) - Math.log(SLUMP_LOW));
  return Math.exp(y0 + s * (y1 - y0));
}

// N-body: a kick-drift-kick leapfrog's relative energy error over a close pass is second order,
// ∝ (h/τ)², where τ ∝ √(r³/GM) is the pass's time scale; with the softening length ε setting the
// closest distance that gives |ΔE/E| = C·ε⁻³. The step h and the masses are fixed, so C is one
// number, fitted (least squares of log drift) to the runs themselves.
export function leapfrogDrift(eps, c) {
  return eps > 0 ? c / eps ** 3 : Infinity;
}
export function fitLeapfrog(points) {
  const ok = points.filter(([e, d]) => e > 0 && d > 0 && Number.isFinite(d));
  if (ok.length === 0) return null;
  const mean = ok.reduce((s, [e, d]) => s + Math.log(d) + 3 * Math.log(e), 0) / ok.length;
  return Math.exp(mean);
}

// n points of f over [x0, x1] (geometric spacing when log), for drawing a law as a curve.
export function sample(f, x0, x1, n = 120, log = false) {
  const xs = [], ys = [];
  for (let i = 0; i < n; i++) {
    const s = i / (n - 1);
    // the last point exactly at x1: a curve ends where the range ends, not a rounding short
    const x = i === n - 1 ? x1 : log ? x0 * (x1 / x0) ** s : x0 + (x1 - x0) * s;
    xs.push(x);
    ys.push(f(x));
  }
  return [xs, ys];
}

// What a class plots per scene (scenes not named here get the table only): x (a parameter in
// force), y (from a stretch's results, or from a live session's measurements), `measure`: the
// measurement y comes from (the catalogue says whether it is a figure over a window, which each
// stretch of a run has of its own, or the state, which only the run's last stretch shows as its
// outcome), the law, the axes' labels, and `key`: the measurement a dashboard tile shows for the
// scene. `runY(row)` (a stretch: {results}) and `liveY(session, live)` return null where the
// figure is not there yet. Parameter ranges for the curve come from the catalogue (GET
// /api/scenes), never from here; the words on the plot from the message catalogue (law: the
// law's name there, as `ref.name` is the second curve's).
const pile = {
  key: 'angle', measure: 'angle', x: 'mu',
  runY: (r) => num(r.results && r.results.angle),
  liveY: (s) => num(s.measurements && s.measurements.angle),
  law: reposeCoulomb, lawName: 'coulomb',
  // our own engine's piles over the same range, a second curve next to the law
  ref: { f: reposeSweep, xs: REPOSE_SWEEP.rows.map((r) => r[0]), name: 'sweep' },
  alt: { x: 'mur' }, // plotted without a law (no closed form)
};
export const EXPERIMENTS = {
  silo: {
    key: 'flow', measure: 'mean_flow', x: 'hole',
    // the engine's mean of the steady flow since the hole opened or anything changed
    runY: (r) => num(r.results && r.results.mean_flow),
    liveY: (s) => num(s.measurements && s.measurements.mean_flow),
    // Beverloo for the silos' measured bulk density
    fit: bulkDensity, law: beverloo,
    lawName: 'beverloo', // its fitted constant: the bulk density, kg/m³
  },
  pour: pile, wet: pile, chains: pile,
  slump: {
    key: 'front', measure: 'front', x: 'aspect', y: 'runout', // the runout (L∞ − L0)/L0
    // the column's length L0: its front just before the dam was pulled; its aspect is fixed when
    // the column is built (a restart parameter)
    // L0: this measurement at the last sample no later than this action (js/run_history.js)
    l0: { action: 'pull_dam', measure: 'front' },
    runY: (r, l0) => (num(r.results && r.results.front) !== null && l0 > 0 ? r.results.front / l0 - 1 : null),
    liveY: (s, live) => (live && live.l0 > 0 && num(s.measurements && s.measurements.front) !== null
      ? s.measurements.front / live.l0 - 1 : null),
    law: slumpRunout, lawName: 'lube',
  },
};
const nbody = {
  key: 'energy_drift', measure: 'energy_drift', x: 'eps', y: 'abs_drift', log: true,
  runY: (r) => absOrNull(r.results && r.results.energy_drift),
  liveY: (s) => absOrNull(s.measurements && s.measurements.energy_drift),
  // a fitted law needs finished runs to fit
  fit: (rows) => fitLeapfrog(rows.filter((r) => !r.live).map((r) => [r.x, r.y])), law: leapfrogDrift, lawName: 'leapfrog',
};
EXPERIMENTS.orbit = EXPERIMENTS.softening = EXPERIMENTS.cluster = nbody;

// A scene's key figure (the catalogue's scene): its experiment's measurement, else its first
// plotted one; what a dashboard tile shows and a view's text alternative says.
export function keyFigure(scene) {
  const exp = EXPERIMENTS[scene.name];
  if (exp && scene.measurements.includes(exp.key)) return exp.key;
  const p = (scene.plots || [])[0];
  return p && p.series.length ? p.series[0].key : null;
}

function num(v) {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}
function absOrNull(v) {
  const n = num(v);
  return n === null || n === 0 ? null : Math.abs(n);
}

// uPlot's columns for one plot of a class: rows [{x, y, live, results}] (finished stretches of
// runs and live sessions), the x range of the parameter (the catalogue's min and max), and the
// law drawn over the whole range (also at every row's x, so the curve passes under each point);
// with the law, an experiment's `ref` (our own sweep) as a second curve, given at its rows.
// Returns {data: [xs, runs' ys, live ys, law ys, ref ys (only with a ref)], law: bool, ref: bool,
// c: the law's fitted or measured constant or undefined, points: rows plotted}.
export function plotColumns(exp, rows, range, withLaw = true) {
  const pts = rows.filter((r) => Number.isFinite(r.x) && Number.isFinite(r.y) && (!exp.log || (r.x > 0 && r.y > 0)));
  let law = withLaw ? exp.law : null, c;
  if (law && exp.fit) {
    // fitted to the rows (the leapfrog's prefactor, to finished runs), or measured by them (a
    // silo's bulk density, by any that knows it)
    c = exp.fit(rows);
    law = c ? ((x) => exp.law(x, c)) : null;
  }
  const ref = withLaw && exp.ref ? exp.ref : null;
  let x0 = range.min, x1 = range.max;
  if (exp.log) {
    const least = Math.min(...pts.map((r) => r.x), x1);
    if (!(x0 > 0)) x0 = Math.min(least / 2, x1 / 100);
  }
  const xs = law ? sample(law, x0, x1, 120, !!exp.log)[0] : [];
  if (ref) xs.push(...ref.xs.filter((x) => x >= x0 && x <= x1));
  for (const r of pts) xs.push(r.x);
  xs.sort((a, b) => a - b);
  // one point per row: two groups at the same x take two entries of xs
  const used = new Set();
  const at = (live) => xs.map((x) => {
    const r = pts.find((p) => p.x === x && !!p.live === live && !used.has(p));
    if (!r) return null;
    used.add(r);
    return r.y;
  });
  const finished = at(false), current = at(true);
  const curve = (f) => xs.map((x, i) => { const y = f(x, i); return Number.isFinite(y) ? y : null; });
  const data = [xs, finished, current, law ? curve((x) => law(x)) : xs.map(() => null)];
  // the sweep at its own rows only: uPlot joins them with straight lines (as reposeSweep does)
  if (ref) data.push(curve((x, i) => (ref.xs.includes(x) && xs[i - 1] !== x ? ref.f(x) : null)));
  return { data, law: !!law, ref: !!ref, c, points: pts.length, plotted: pts };
}
