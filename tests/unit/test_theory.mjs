// The class results' laws (web_client/js/theory.js) against known values: Beverloo against the
// engine's own `beverloo` measurement (GET /api/sessions of a silo at these holes), Coulomb's
// angle, Lube et al.'s runout in both regimes and joined between them, the leapfrog fit; the
// repose sweep's table (web_client/js/repose_table.js) in shape and against the catalogue's mu
// range; the plot's columns; what a stored run's record gives its figure (js/run_history.js).
// Usage: node test_theory.mjs GRAINLAB   (the CLI, for the catalogue: grainlab scenes)
import { execFileSync } from 'node:child_process';
const here = new URL('.', import.meta.url);
const t = await import(new URL('../../web_client/js/theory.js', here));
const { REPOSE_SWEEP } = await import(new URL('../../web_client/js/repose_table.js', here));
const rh = await import(new URL('../../web_client/js/run_history.js', here));
if (!process.argv[2]) {
  console.error('usage: node test_theory.mjs GRAINLAB');
  process.exit(2);
}
const catalogue = JSON.parse(execFileSync(process.argv[2], ['scenes'], { encoding: 'utf8' }));
const param = (scene, name) => catalogue.scenes.find((s) => s.name === scene).params.find((p) => p.name === name);
let fail = 0;
function near(name, got, want, tol) {
  const ok = Math.abs(got - want) <= tol;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}: ${got} (want ${want} ± ${tol})`);
  if (!ok) fail++;
}
function check(name, cond) {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${name}`);
  if (!cond) fail++;
}

// the engine's measurement at these holes, as grainlabd reported it
near('Beverloo, 0.9 m hole, kg/s', t.beverloo(0.9), 805.037816388969, 1e-9);
near('Beverloo, 1.3 m hole, kg/s', t.beverloo(1.3), 2886.94264439043, 1e-9);
near('Beverloo, 1.6 m hole, kg/s', t.beverloo(1.6), 5562.83958599992, 1e-9);
near('Beverloo, 0.5 m hole, kg/s', t.beverloo(0.5), 51.6432, 1e-4);
near('Beverloo at 1.5 grain diameters (0.3 m), kg/s', t.beverloo(0.3), 0, 0);
near('Beverloo below 1.5 grain diameters (0.2 m), kg/s', t.beverloo(0.2), 0, 0);

near('Coulomb angle at mu 1, °', t.reposeCoulomb(1), 45, 1e-12);
near('Coulomb angle at mu √3, °', t.reposeCoulomb(Math.sqrt(3)), 60, 1e-12);
near('Coulomb angle at mu 0, °', t.reposeCoulomb(0), 0, 0);

near('runout at aspect 1 (1.2 a)', t.slumpRunout(1), 1.2, 1e-12);
near('runout at aspect 1.8 (1.2 a)', t.slumpRunout(1.8), 2.16, 1e-12);
near('runout at aspect 2.8 (1.9 a^2/3)', t.slumpRunout(2.8), 1.9 * Math.cbrt(2.8 * 2.8), 1e-12);
near('runout at aspect 8 (1.9 a^2/3)', t.slumpRunout(8), 7.6, 1e-12);
near('runout continuous at 1.8', t.slumpRunout(1.8 + 1e-9), t.slumpRunout(1.8 - 1e-9), 1e-6);
near('runout continuous at 2.8', t.slumpRunout(2.8 - 1e-9), t.slumpRunout(2.8 + 1e-9), 1e-6);
const [as, rs] = t.sample(t.slumpRunout, 0.5, 4, 200);
check('runout grows over the slump range 0.5..4', rs.every((r, i) => i === 0 || r > rs[i - 1]));
check('sample spans the range', as[0] === 0.5 && Math.abs(as[199] - 4) < 1e-12 && as.length === 200);

const c = 2.5e-7;
const pts = [0.05, 0.1, 0.2, 0.5].map((e) => [e, t.leapfrogDrift(e, c)]);
near('leapfrog prefactor fitted back from exact points', t.fitLeapfrog(pts), c, 1e-18);
near('leapfrog drift at eps 0.1', t.leapfrogDrift(0.1, c), 2.5e-4, 1e-15);
check('no fit without a usable point', t.fitLeapfrog([[0, 1e-3], [0.1, 0]]) === null);
const [ls] = t.sample((x) => x, 0.01, 1, 3, true);
near('log sampling: the middle point', ls[1], 0.1, 1e-12);

for (const [scene, e] of Object.entries(t.EXPERIMENTS)) {
  check(`${scene}: an x parameter, a y figure and a law`, typeof e.x === 'string' && typeof e.runY === 'function' && typeof e.law === 'function');
}
near('silo: a run\'s mean_flow is its y', t.EXPERIMENTS.silo.runY({ results: { mean_flow: 812 } }), 812, 0);
near('slump: runout from the final front and L0', t.EXPERIMENTS.slump.runY({ results: { front: 6 } }, 2), 2, 1e-12);

// the plot's columns: the law over the whole parameter range, every point once; Beverloo for the
// bulk density the silos measured (their mean)
const silo = t.EXPERIMENTS.silo;
const rho = (v) => ({ bulk_density: v });
const cols = t.plotColumns(silo, [{ x: 0.9, y: 790, results: rho(1810) }, { x: 0.9, y: 830, results: rho(1814) },
  { x: 1.3, y: 2950, live: true, results: rho(1700) }, { x: 1.1, y: null, results: rho(1812) }], { min: 0.3, max: 1.6 });
const [xs, fin, cur, law] = cols.data;
check('columns: 120 curve points and 3 usable rows', xs.length === 123 && cols.points === 3 && cols.law);
near('columns: Beverloo at the finished silos\' mean bulk density', cols.c, 1812, 1e-9);
check('columns: no Beverloo curve without a bulk density', !t.plotColumns(silo, [{ x: 0.9, y: 790 }], { min: 0.3, max: 1.6 }).law);
check('columns: x sorted', xs.every((x, i) => i === 0 || x >= xs[i - 1]));
near('columns: the curve starts at the range\'s start', xs[0], 0.3, 0);
near('columns: the curve ends at the range\'s end', xs[xs.length - 1], 1.6, 1e-12);
check('columns: both runs at 0.9 m plotted', fin.filter((y) => y !== null).sort().join() === '790,830');
check('columns: the live point', cur.filter((y) => y !== null).join() === '2950');
near('columns: the law under a point', law[xs.indexOf(1.3)], t.beverloo(1.3, 1812), 1e-9);
check('columns: the plotted rows themselves', cols.plotted.length === 3 && cols.plotted[0].y === 790);
const nb = t.plotColumns(t.EXPERIMENTS.softening, [{ x: 0.1, y: 2.5e-4 }, { x: 0.2, y: 2.5e-7 / 0.008 }], { min: 0, max: 1 });
near('columns: the leapfrog prefactor fitted through two runs', nb.c, 2.5e-7, 1e-18);
check('columns: a log axis starts above 0', nb.data[0][0] > 0 && nb.data[3].every((y) => y > 0));
check('columns: no fitted law without a finished run', !t.plotColumns(t.EXPERIMENTS.softening, [{ x: 0.1, y: 1e-3, live: true }], { min: 0, max: 1 }).law);

// ---- the repose sweep's table: our own piles' angle against mu --------------------------------
const rows = REPOSE_SWEEP.rows, mu = param(REPOSE_SWEEP.scene, 'mu');
check(`sweep: ${rows.length} rows of [mu, angle], 6 or more`, rows.length >= 6 && rows.every((r) => r.length === 2 && r.every(Number.isFinite)));
check('sweep: one standard deviation per row', REPOSE_SWEEP.sd.length === rows.length && REPOSE_SWEEP.sd.every((d) => d >= 0));
check('sweep: mu strictly increasing', rows.every((r, i) => i === 0 || r[0] > rows[i - 1][0]));
near('sweep: starts at the catalogue\'s least mu', rows[0][0], mu.min, 0);
near('sweep: ends at the catalogue\'s greatest mu', rows[rows.length - 1][0], mu.max, 0);
check('sweep: every angle between 0° and 90°', rows.every(([, a]) => a > 0 && a < 90));
// the angle rises with friction and then levels off (near 30° above mu ≈ 0.75): no row may fall
// below the one before by more than two standard errors of the difference of the seeds' means
const worst = Math.min(...rows.slice(1).map(([, a], i) => {
  const se = Math.hypot(REPOSE_SWEEP.sd[i], REPOSE_SWEEP.sd[i + 1]) / Math.sqrt(REPOSE_SWEEP.seeds);
  return (a - rows[i][1]) / se;
}));
check(`sweep: monotone in mu within the seeds' scatter (worst step ${worst.toFixed(2)} standard errors, least allowed -2)`, worst >= -2);
check('sweep: rises by more than 10° over the range', rows[rows.length - 1][1] - rows[0][1] > 10);
near('sweep: exact at a row', t.reposeSweep(rows[2][0]), rows[2][1], 1e-12);
near('sweep: straight between rows', t.reposeSweep((rows[2][0] + rows[3][0]) / 2), (rows[2][1] + rows[3][1]) / 2, 1e-12);
check('sweep: nothing outside the mu swept', t.reposeSweep(rows[0][0] - 0.01) === null && t.reposeSweep(rows[rows.length - 1][0] + 0.01) === null);

// the pile's plot: Coulomb over the whole range and the sweep as a second curve at its rows
const pc = t.plotColumns(t.EXPERIMENTS.pour, [{ x: 0.5, y: 28 }], { min: mu.min, max: mu.max });
check('pile columns: x, runs, live, law and sweep', pc.data.length === 5 && pc.law && pc.ref);
check('pile columns: the sweep at each of its rows and nowhere else', pc.data[4].filter((y) => y !== null).length === rows.length);
near('pile columns: the law from the range\'s start', pc.data[0][0], mu.min, 0);
near('pile columns: the law to the range\'s end', pc.data[0][pc.data[0].length - 1], mu.max, 1e-12);
check('pile columns: no sweep on the rolling-friction axis (no law there)', !t.plotColumns(t.EXPERIMENTS.pour, [], { min: 0, max: 0.5 }, false).ref);
const hole = param('silo', 'hole');
const sc = t.plotColumns(t.EXPERIMENTS.silo, [{ x: 1, y: null, results: rho(1800) }], { min: hole.min, max: hole.max });
check('silo columns: Beverloo at 120 holes over the catalogue\'s range, no sweep', sc.data[0].length === 120 && sc.data.length === 4 &&
  sc.data[0][0] === hole.min && Math.abs(sc.data[0][119] - hole.max) < 1e-12);

// ---- a stored run's record: a row per stretch of parameters, a slump's L0 ----------------------
const catalogueW = { measurements: catalogue.measurements };
check('the silo\'s mean flow is a figure over a window; a pile\'s angle is not',
      rh.windowed(catalogueW, 'silo') && !rh.windowed(catalogueW, 'pour'));
const silo9 = { id: 9, scene: 'silo', params: { hole: 0.9 }, end_reason: 'finished', results: { mean_flow: 1900 },
  segments: [{ from_t: 0, to_t: 4, params: { hole: 0.9 }, changed: {}, results: { mean_flow: null } },
             { from_t: 4, to_t: 30, params: { hole: 1.2 }, changed: { hole: 1.2 }, results: { mean_flow: 1500 } },
             { from_t: 30, to_t: 40, params: { hole: 1.2, mu: 0.3 }, changed: { mu: 0.3 }, results: { mean_flow: 1900 } }] };
const r9 = rh.runRows(silo9);
check('rows: one per stretch, in order, the last marked', r9.length === 3 && r9.map((r) => r.segment).join() === '1,2,3' && r9[2].last && !r9[1].last);
check('rows: each stretch\'s own mean flow at the hole in force (a window)',
      r9.map((r) => rh.rowFigure(r, null, true)).join() === ',1500,1900' && r9[1].params.hole === 1.2);
const pile = { id: 4, scene: 'pour', params: { mu: 0.5 }, end_reason: 'finished', results: { angle: 25 },
  segments: [{ from_t: 0, to_t: 2, params: { mu: 0.5 }, results: { angle: 12 } }, { from_t: 2, to_t: 20, params: { mu: 0.8 }, results: { angle: 25 } }] };
check('rows: a state figure only as the run\'s outcome, at the parameters it ended with',
      rh.runRows(pile).map((r) => rh.rowFigure(r, null, false)).join() === ',25');
const legacy = { id: 3, scene: 'silo', params: { hole: 0.9 }, end_reason: 'finished', end_t: 20, results: { mean_flow: 800 }, segments: null };
check('rows: a run recorded before stretches is one row of its start parameters and final results',
      rh.runRows(legacy).length === 1 && rh.runRows(legacy)[0].segment === null && rh.rowFigure(rh.runRows(legacy)[0], null, true) === 800);
const record = {
  '/api/runs/7?events_after=0&events_limit=1000': { events: [
    { id: 1, t: 0, kind: 'run_started', detail: {} },
    { id: 2, t: 0.4, kind: 'parameter_changed', detail: { params: { mu: 0.3 } } },
  ], events_next: 2 },
  '/api/runs/7?events_after=2&events_limit=1000': { events: [
    { id: 5, t: 1.6, kind: 'action', detail: { action: { type: 'pull_dam' } } },
  ], events_next: null },
  '/api/runs/7/samples': { columns: ['t', 'steps', 'state', 'front'], rows: [[0.25, 60, 'settling', 3.1], [1.5, 360, 'running', 2.5], [1.75, 420, 'running', 2.9]] },
};
const asked = [];
const get = async (path) => { asked.push(path); if (!record[path]) throw new Error(`404 ${path}`); return record[path]; };
const slumpRun = { id: 7, scene: 'slump', params: { aspect: 2, mu: 0.5 }, end_reason: 'finished', results: { front: 7.5 },
  segments: [{ params: { aspect: 2, mu: 0.5 }, results: { front: 3.1 } }, { params: { aspect: 2, mu: 0.3 }, results: { front: 7.5 } }] };
const h = await rh.readHistory(get, slumpRun, rh.newHistory());
near('history: L0 is the front at the last sample before the pull', h.l0, 2.5, 0);
check('history: read to the end (two pages and the samples)', h.complete && asked.length === 3);
near('history: the runout (L∞ − L0)/L0 of the last stretch', rh.rowFigure(rh.runRows(slumpRun)[1], h, false), 2, 1e-12);
const n0 = asked.length;
await rh.readHistory(get, slumpRun, h);
check('history: a complete one is not read again', asked.length === n0);
record['/api/runs/8?events_after=0&events_limit=1000'] = { events: [{ id: 1, t: 0.1, kind: 'action', detail: { action: { type: 'pull_dam' } } }], events_next: null };
record['/api/runs/8/samples'] = { columns: ['t', 'steps', 'state', 'front'], rows: [[0.25, 60, 'running', 3]] };
const early = { id: 8, scene: 'slump', params: { aspect: 2 }, end_reason: 'deleted', results: { front: 7 } };
const he = await rh.readHistory(get, early, rh.newHistory());
check('history: a pull before the first sample leaves L0 unknown, and no runout',
      he.l0 === null && rh.rowFigure(rh.runRows(early)[0], he, false) === null && he.complete);
const nBefore = asked.length;
const hs = await rh.readHistory(get, silo9, rh.newHistory());
check('history: a silo needs nothing read', hs.complete && asked.length === nBefore);

console.log(fail === 0 ? 'all passed' : `${fail} failed`);
process.exit(fail === 0 ? 0 : 1);
