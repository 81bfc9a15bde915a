// The class results' laws (web_client/js/theory.js) against known values: Beverloo against the
// engine's own `beverloo` measurement (GET /api/sessions of a silo at these holes), Coulomb's
// angle, Lube et al.'s runout in both regimes and joined between them, the leapfrog fit.
// Usage: node test_theory.mjs
const here = new URL('.', import.meta.url);
const t = await import(new URL('../../web_client/js/theory.js', here));
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

// the plot's columns: the law over the whole parameter range, every point once
const silo = t.EXPERIMENTS.silo;
const cols = t.plotColumns(silo, [{ x: 0.9, y: 790 }, { x: 0.9, y: 830 }, { x: 1.3, y: 2950, live: true }, { x: 1.1, y: null }], { min: 0.3, max: 1.6 });
const [xs, fin, cur, law] = cols.data;
check('columns: 120 curve points and 3 usable rows', xs.length === 123 && cols.points === 3 && cols.law);
check('columns: x sorted', xs.every((x, i) => i === 0 || x >= xs[i - 1]));
near('columns: the curve starts at the range\'s start', xs[0], 0.3, 0);
near('columns: the curve ends at the range\'s end', xs[xs.length - 1], 1.6, 1e-12);
check('columns: both runs at 0.9 m plotted', fin.filter((y) => y !== null).sort().join() === '790,830');
check('columns: the live point', cur.filter((y) => y !== null).join() === '2950');
near('columns: the law under a point', law[xs.indexOf(1.3)], t.beverloo(1.3), 1e-9);
const nb = t.plotColumns(t.EXPERIMENTS.softening, [{ x: 0.1, y: 2.5e-4 }, { x: 0.2, y: 2.5e-7 / 0.008 }], { min: 0, max: 1 });
near('columns: the leapfrog prefactor fitted through two runs', nb.c, 2.5e-7, 1e-18);
check('columns: a log axis starts above 0', nb.data[0][0] > 0 && nb.data[3].every((y) => y > 0));
check('columns: no fitted law without a finished run', !t.plotColumns(t.EXPERIMENTS.softening, [{ x: 0.1, y: 1e-3, live: true }], { min: 0, max: 1 }).law);
console.log(fail === 0 ? 'all passed' : `${fail} failed`);
process.exit(fail === 0 ? 0 : 1);
