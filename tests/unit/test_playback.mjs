// What the session page draws between frames (web_client/js/playback.js), without a browser:
// grains falling freely are drawn exactly where they are between frames 1/15 s apart (the
// quadratic through three frames), grains moving steadily on the line, new grains as the newest
// frame has them, nothing drawn between frames that keep no grain (a Reset), the delay behind the
// newest frame from the gaps and the network's lateness.
// Usage: node test_playback.mjs
const here = new URL('.', import.meta.url);
const { Playback } = await import(new URL('../../web_client/js/playback.js', here));
let fail = 0;
const ok = (name, cond, detail = '') => { console.log(`${cond ? 'ok  ' : 'FAIL'} ${name}${detail !== '' ? ': ' + detail : ''}`); if (!cond) fail++; };

const G = 9.81, DT = 1 / 15;
// grain 0 falls from rest at y = 10, grain 1 moves at 2 m/s along x; frame k at t = k·DT,
// published k·DT seconds after 1000 s (ms on the server's clock)
const exact = (t) => [0, 10 - 0.5 * G * t * t, 0, 1 + 2 * t, 5, 0];
const frame = (k, { n = 2, kept = n, seq = k } = {}) => {
  const t = k * DT, p = exact(t);
  const positions = new Float32Array(3 * n);
  positions.set(p.slice(0, 3 * Math.min(n, 2)));
  for (let i = 2; i < n; i++) positions.set([7, 7, 7], 3 * i);
  const shade = new Uint8Array(n).fill(10 * k);
  return [{ seq, t, published: (1000 + t) * 1e6, kept }, { count: n, positions, shade, radius: new Float32Array(n), geometry: {} }];
};
const pb = new Playback();
for (let k = 0; k < 3; k++) { const [info, dec] = frame(k); pb.push(info, dec, (1000 + k * DT) * 1000 + 5); }
// between frames 1 and 2, three moments
let worst = 0, shadeHalf = -1;
for (const s of [0.25, 0.5, 0.75]) {
  const t = (1 + s) * DT;
  pb.drawAt((1000 + t) * 1000);
  if (s === 0.5) shadeHalf = pb.shade[0];
  const want = exact(t);
  for (let i = 0; i < 6; i++) worst = Math.max(worst, Math.abs(pb.positions[i] - want[i]));
}
ok('free fall and steady motion drawn where they are between frames (float32 rounding)', worst < 2e-5, worst.toExponential(2));
ok('the picture says the time of the frame it started from', pb.t === DT && pb.seq === 1, pb.t);
ok('its shade on the line between the frames', shadeHalf === 15, shadeHalf);
ok('the same picture again is not drawn again', pb.drawAt((1000 + 1.75 * DT) * 1000) === false);
// past the newest frame: the newest, held (never guessed ahead)
pb.drawAt((1000 + 5 * DT) * 1000);
ok('past the newest frame it is held as it is', pb.positions[1] === Math.fround(exact(2 * DT)[1]) && pb.t === 2 * DT);
// a pour: frame 3 brings a third grain (kept 2 of its 3); it is drawn where frame 3 has it
{ const [info, dec] = frame(3, { n: 3, kept: 2 }); pb.push(info, dec, (1000 + 3 * DT) * 1000 + 5); }
pb.drawAt((1000 + 2.5 * DT) * 1000);
const want = exact(2.5 * DT);
ok('grains both frames have are drawn between them', Math.abs(pb.positions[1] - want[1]) < 2e-5 && pb.count === 3);
ok('a new grain is drawn where the newest frame has it', pb.positions[6] === 7 && pb.positions[8] === 7);
// a Reset: frame 4 keeps nothing; until its moment, frame 3 as it was, then frame 4
{ const [info, dec] = frame(4, { n: 3, kept: 0 }); dec.positions.fill(-1); pb.push(info, dec, (1000 + 4 * DT) * 1000 + 5); }
pb.drawAt((1000 + 3.5 * DT) * 1000);
ok('before a frame that keeps nothing, the frame before it as is', pb.positions[1] === Math.fround(exact(3 * DT)[1]));
pb.drawAt((1000 + 4 * DT) * 1000);
ok('then that frame', pb.positions[1] === -1);
// a gap in seq (a viewer that skipped frames): nothing drawn between
{ const [info, dec] = frame(6, { n: 3, seq: 7 }); pb.push(info, dec, (1000 + 6 * DT) * 1000 + 5); }
pb.drawAt((1000 + 5 * DT) * 1000);
ok('frames with a gap between them are not drawn between', pb.positions[1] === -1);
// the delay: gaps of 1/15 s and a network 5 ms late every time: a little over 1/15 s
ok('the delay is the gap between frames and a little', pb.delay > 60 && pb.delay < 90, pb.delay.toFixed(1));
const late = new Playback();
for (let k = 0; k < 40; k++) { const [info, dec] = frame(k); late.push(info, dec, (1000 + k * DT) * 1000 + 5 + (k % 4 === 0 ? 40 : 0)); }
ok('frames that come late now and then lengthen it by their lateness', late.delay > pb.delay + 25, late.delay.toFixed(1));
console.log(fail ? `${fail} failed` : 'all passed');
process.exit(fail ? 1 : 0);
