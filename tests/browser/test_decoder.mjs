// The browser's frame decoder (web_client/js/stream.js) against the C reference decoder: every
// message a real session streamed (keyframes, deltas, force chains), dumped by ws_probe with
// the positions the C decoder found, must decode to the same positions (float32 rounding).
// Usage: node test_decoder.mjs DUMP_DIR
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const dir = resolve(process.argv[2]);
const here = new URL('.', import.meta.url);
const { Decoder, KEY, DELTA, CHAINS } = await import(new URL('../../web_client/js/stream.js', here));
const decoder = new Decoder();
const seen = { [KEY]: 0, [DELTA]: 0, [CHAINS]: 0 };
let worst = 0, bad = 0, compared = 0, pairs = 0;
for (const name of readdirSync(dir).filter((f) => f.endsWith('.bin')).sort()) {
  const bytes = readFileSync(join(dir, name));
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length);
  let info;
  try {
    info = decoder.decode(buffer);
  } catch (e) {
    console.log(`FAIL ${name}: ${e.message}`);
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
  const raw = readFileSync(join(dir, name.replace('.bin', '.pos'))); // may sit inside a shared pool
  const ref = new Float64Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
  if (ref.length !== decoder.positions.length) { bad++; continue; }
  for (let i = 0; i < ref.length; i++) worst = Math.max(worst, Math.abs(ref[i] - decoder.positions[i]));
  compared++;
}
const ok = (name, cond) => { console.log(`${cond ? 'ok  ' : 'FAIL'} ${name}`); if (!cond) bad++; };
ok(`keyframes ${seen[KEY]}, deltas ${seen[DELTA]}, force-chain messages ${seen[CHAINS]} (${pairs} pairs) decoded`,
   seen[KEY] > 0 && seen[DELTA] > 50 && seen[CHAINS] > 50);
// float32 keeps 24 bits: positions within a few metres differ from doubles by < 1e-6 m
ok(`${compared} frames equal to the C decoder's positions (worst ${worst.toExponential(2)} m)`, compared > 50 && worst < 1e-5);
process.exit(bad === 0 ? 0 : 1);
