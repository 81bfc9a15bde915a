// The repose sweep's table (web_client/js/repose_table.js) cannot go stale silently: its middle
// row is run again as bench/repose_sweep.sh ran it (the pour at its defaults, the same seeds and
// length) and the mean final angle must match the table's. Same engine, same bits: the angles are
// equal. A change that moves the grains' paths but not the physics moves a mean of 5 seeds by
// about √2·sd/√5 ≈ 0.45° (sd ≈ 0.7° between seeds at mu 0.5): the tolerance, 1.5°, is over three
// of those. A change to the contact law that moves the pile more fails: rerun the sweep.
// Usage: node test_repose_table.mjs GRAINLAB
import { execFileSync } from 'node:child_process';
const { REPOSE_SWEEP: sweep } = await import(new URL('../../web_client/js/repose_table.js', import.meta.url));
const grainlab = process.argv[2];
if (!grainlab) {
  console.error('usage: node test_repose_table.mjs GRAINLAB');
  process.exit(2);
}
const TOL = 1.5; // degrees, see above
const k = Math.floor(sweep.rows.length / 2);
const [mu, want] = sweep.rows[k];
let sum = 0, fail = 0;
for (let seed = 1; seed <= sweep.seeds; seed++) {
  const out = execFileSync(grainlab, ['run', '--scene', sweep.scene, '--set', `mu=${mu}`, '--seed', String(seed),
    '--seconds', String(sweep.seconds), '--threads', '1'], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const { final } = JSON.parse(out.trim().split('\n').pop());
  console.log(`     mu ${mu} seed ${seed}: ${final.angle.toFixed(2)}° (${final.state})`);
  if (final.state !== 'asleep') {
    console.log(`FAIL seed ${seed}: the pile is still ${final.state} after ${sweep.seconds} s, as the sweep's never were`);
    fail++;
  }
  sum += final.angle;
}
const got = sum / sweep.seeds;
const ok = Math.abs(got - want) <= TOL;
console.log(`${ok ? 'ok  ' : 'FAIL'} mean angle of repose at mu ${mu}, ${sweep.seeds} seeds: ${got.toFixed(2)}° ` +
            `(table ${want}° ± ${TOL}°, from ${sweep.command} at ${sweep.commit} on ${sweep.date})`);
if (!ok) fail++;
console.log(fail === 0 ? 'all passed' : `${fail} failed: rerun ${sweep.command} if the engine's physics changed on purpose`);
process.exit(fail === 0 ? 0 : 1);
