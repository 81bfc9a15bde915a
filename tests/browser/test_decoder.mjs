// The browser's frame decoder (web_client/js/stream.js) against the C reference decoder: every
// message real sessions streamed (keyframes, predicted frames, deltas, force chains), dumped by
// ws_probe with the grid coordinates and positions the C decoder found, must decode to the very
// same grid coordinates (so to the same picture: what is drawn is a function of them, the shades
// and the radii) and positions equal up to float32 rounding. Each folder is one viewer's stream.
// Usage: node test_decoder.mjs DUMP_DIR...
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const here = new URL('.', import.meta.url);
const { Decoder, KEY, DELTA, CHAINS, PREDICTED } = await import(new URL('../../web_client/js/stream.js', here));
const seen = { [KEY]: 0, [DELTA]: 0, [CHAINS]: 0, [PREDICTED]: 0 };
let worst = 0, bad = 0, compared = 0, sameQ = 0, pairs = 0, grew = 0, overKept = 0;
// a file's bytes as its own ArrayBuffer (readFileSync may hand out a slice of a shared pool)
const own = (bytes) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
for (const arg of process.argv.slice(2)) {
  const dir = resolve(arg), decoder = new Decoder();
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.bin')).sort()) {
    let info;
    const buffer = own(readFileSync(join(dir, name))), v = new DataView(buffer);
    // a frame with more grains than the one right before it may keep no more than that one had
    if (v.getUint8(5) !== CHAINS && v.getUint32(8, true) === ((decoder.seq + 1) >>> 0) && v.getUint32(16, true) > decoder.count) {
      const over = buffer.slice(0);
      new DataView(over).setUint32(28, decoder.count + 1, true);
      const before = decoder.q.slice(0, 3 * decoder.count);
      try { decoder.decode(over); } catch { overKept += decoder.q.subarray(0, 3 * decoder.count).every((x, i) => x === before[i]); }
      grew++;
    }
    try {
      info = decoder.decode(buffer);
    } catch (e) {
      console.log(`FAIL ${arg}/${name}: ${e.message}`);
      bad++;
      continue;
    }
    seen[info.kind]++;
    if (info.kind === CHAINS) {
      for (let k = 0; k < info.count; k++) {
        if (info.a[k] >= decoder.count || info.b[k] >= decoder.count || !(info.force[k] > 0)) bad++;
      }
      pairs += info.count;
      continue;
    }
    const ref = new Float64Array(own(readFileSync(join(dir, name.replace('.bin', '.pos')))));
    const q = new Uint16Array(own(readFileSync(join(dir, name.replace('.bin', '.q')))));
    // the decoder's arrays may be longer than its grains (kept for the next frames): its first count
    const pos = decoder.positions.subarray(0, 3 * decoder.count), dq = decoder.q.subarray(0, 3 * decoder.count);
    if (ref.length !== pos.length || q.length !== dq.length) { bad++; continue; }
    for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(ref[i] - pos[i]));
    sameQ += q.every((x, i) => x === dq[i]);
    compared++;
  }
}
const ok = (name, cond) => { console.log(`${cond ? 'ok  ' : 'FAIL'} ${name}`); if (!cond) bad++; };
const refused = (decoder, buffer) => { try { decoder.decode(buffer); return false; } catch (e) { return true; } };

// hostile or out-of-place frames are refused and change nothing: the first keyframe and the
// predicted frame after it of the full-rate stream, altered
{
  const dir = resolve(process.argv[2]), files = readdirSync(dir).filter((f) => f.endsWith('.bin')).sort();
  const frames = files.map((f) => own(readFileSync(join(dir, f))));
  const kind = (b) => new DataView(b).getUint8(5);
  const seq = (b) => new DataView(b).getUint32(8, true);
  // a keyframe with the predicted frame right after it
  const k = frames.findIndex((b, i) => kind(b) === KEY && frames.some((c) => kind(c) === PREDICTED && seq(c) === seq(b) + 1));
  const p = frames.findIndex((b) => kind(b) === PREDICTED && seq(b) === seq(frames[k]) + 1);
  const d = new Decoder();
  ok('a predicted frame without the frames before it is refused', refused(d, frames[p]));
  d.decode(frames[k]);
  const q = d.q.slice();
  const altered = (b, at, put) => { const c = b.slice(0); put(new DataView(c), at); return c; };
  ok('a frame of format 1 is refused', refused(d, altered(frames[k], 4, (v, at) => v.setUint8(at, 1))));
  ok('a truncated frame is refused', refused(d, frames[k].slice(0, frames[k].byteLength - 1)));
  ok('a keyframe claiming 4 M grains is refused before anything is decompressed',
     refused(d, altered(frames[k], 16, (v, at) => { v.setUint32(at, 4000000, true); v.setUint32(at + 4, 8 * 4000000 + 208, true); })));
  ok('a raw size unlike the zstd frame\'s own is refused',
     refused(d, altered(frames[k], 20, (v, at) => v.setUint32(at, v.getUint32(at, true) + 8, true))));
  ok('a prediction of order 3 is refused', refused(d, altered(frames[p], 6, (v, at) => v.setUint8(at, 3))));
  ok('a predicted frame with fewer grains than the frame before it is refused',
     refused(d, altered(frames[p], 16, (v, at) => v.setUint32(at, v.getUint32(at, true) - 1, true))));
  ok('one that claims a grain more than its payload carries is refused',
     refused(d, altered(frames[p], 16, (v, at) => v.setUint32(at, v.getUint32(at, true) + 1, true))));
  ok('a frame that keeps more grains than it has is refused',
     refused(d, altered(frames[p], 28, (v, at) => v.setUint32(at, v.getUint32(at - 12, true) + 1, true))));
  ok('the decoder is unchanged by all that', d.q.every((x, i) => x === q[i]));
  ok('and takes the predicted frame after its keyframe', !refused(d, frames[p]));
}
ok(`keyframes ${seen[KEY]}, predicted ${seen[PREDICTED]}, deltas ${seen[DELTA]}, force-chain messages ${seen[CHAINS]} (${pairs} pairs) decoded`,
   seen[KEY] > 0 && seen[PREDICTED] > 20 && seen[DELTA] > 8 && seen[CHAINS] > 40);
ok(`${grew} frames bringing grains (pour), each refused unchanged when it keeps one grain more than that had: ${overKept}`,
   grew > 5 && overKept === grew);
ok(`${compared} frames with exactly the C decoder's grid coordinates (${sameQ} equal)`, compared > 40 && sameQ === compared);
// float32 keeps 24 bits: positions within a few metres differ from doubles by < 1e-6 m
ok(`and its positions (worst ${worst.toExponential(2)} m)`, worst < 1e-5);
process.exit(bad === 0 ? 0 : 1);
