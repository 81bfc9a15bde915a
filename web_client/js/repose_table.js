// Angle of repose (°) against sliding friction mu from our own engine: the pour scene at its
// defaults (3000 grains, mur 0.1, no cohesion), each row the mean final angle of seeds
// 1..5 once the pile sleeps (60 s runs, one thread). Written by bench/repose_sweep.sh on
// 2026-12-04 at commit cce8c9a (166 s wall, one run at a time); run it again after a change to
// the contact law: tests/physics/test_repose_table.mjs fails when its middle row no longer holds.
// The angle rises like Coulomb's at small mu and levels off near 30° above mu ≈ 0.75.
export const REPOSE_SWEEP = {
  scene: 'pour', seeds: 5, seconds: 60,
  command: 'bench/repose_sweep.sh', date: '2026-12-04', commit: 'cce8c9a',
  // [mu, mean angle in °]
  rows: [[0.0, 10.32], [0.1, 18.26], [0.2, 23.2], [0.3, 25.14], [0.5, 28.21], [0.75, 29.94], [1.0, 30.76], [1.5, 30.34]],
  // the seeds' standard deviation at each row, °
  sd: [0.63, 0.2, 0.71, 0.33, 0.69, 0.35, 0.42, 0.68],
};
