// A session's stream drawn at the screen's rate: frames come 15 a second (schema/stream.md), and
// each picture in between shows the grains on the curve through the last three frames, a short
// delay behind the newest, so that the frame after the drawn time is always there already.
const KEEP = 4; // frames kept: the three a picture needs and the newest
const LAGS = 32; // frames over which the network's own delay is taken (its smallest lag)

// Lagrange weights of nodes t0, t1, t2 at time x (a quadratic through three points).
function weights(t0, t1, t2, x) {
  return [((x - t1) * (x - t2)) / ((t0 - t1) * (t0 - t2)), ((x - t0) * (x - t2)) / ((t1 - t0) * (t1 - t2)),
          ((x - t0) * (x - t1)) / ((t2 - t0) * (t2 - t1))];
}

export class Playback {
  constructor() {
    this.frames = []; // newest last: {seq, t, at (ms, publishing on the server's clock), kept, count, pos, shade, radius, geometry}
    this.lags = []; // arrival − publishing, ms: the smallest is the path's own delay
    this.gaps = []; // ms between the last frames' publishing
    this.delay = 0; // ms the picture trails the newest frame's publishing
    this.count = 0;
    this.positions = null; this.shade = null; this.radius = null; this.geometry = null;
    this.t = 0; // simulated time of the last frame the picture has reached
    this.seq = -1; // and its seq
    this.shown = ''; // what the last picture was, to skip drawing the same one again
    this.pushed = 0; // frames received: names each one (a new worker's seq starts again at 0)
  }

  // A decoded frame (stream.js: its info and the decoder right after it), received at `now` (ms,
  // Date.now). Its grains are copied: the decoder reuses its arrays.
  push(info, decoder, now = Date.now()) {
    const n = decoder.count, at = info.published / 1000;
    const last = this.frames[this.frames.length - 1];
    // shares grains with the frame kept last only if it comes right after it
    const kept = last && info.seq === ((last.seq + 1) >>> 0) ? info.kept : 0;
    const f = { id: ++this.pushed, seq: info.seq, t: info.t, at, kept, count: n, pos: decoder.positions.slice(0, 3 * n),
                shade: decoder.shade.slice(0, n), radius: decoder.radius, geometry: decoder.geometry };
    if (last && kept === 0) this.frames = [this.frames[this.frames.length - 1]]; // nothing to draw between
    this.frames.push(f);
    if (this.frames.length > KEEP) this.frames.shift();
    if (last && at > last.at) this.gaps.push(at - last.at);
    if (this.gaps.length > 8) this.gaps.shift();
    this.lags.push(now - at);
    if (this.lags.length > LAGS) this.lags.shift();
    // the delay: the usual gap between frames and how late beyond the network's own delay they
    // came lately (at most 0.25 s), so the frame after the drawn time has come
    const gap = [...this.gaps].sort((x, y) => x - y)[this.gaps.length >> 1] || 0;
    const base = Math.min(...this.lags), late = Math.min(250, Math.max(...this.lags.slice(-8)) - base);
    // longer at once (a picture waiting for its frame stops), shorter slowly
    const want = gap + late + 4;
    this.delay = want > this.delay ? want : 0.9 * this.delay + 0.1 * want;
  }

  // The picture at `now` (ms, Date.now) into count, positions, shade, radius and geometry (what
  // View.update reads); true when it differs from the last one.
  at(now = Date.now()) {
    return this.frames.length > 0 && this.drawAt(now - Math.min(...this.lags) - this.delay);
  }

  // The picture at `drawn` on the server's clock (ms, as the frames' publishing times).
  drawAt(drawn) {
    const fs = this.frames;
    if (!fs.length) return false;
    let b = fs.length - 1;
    while (b > 0 && fs[b - 1].at > drawn) b--;
    const fb = fs[b], fa = b > 0 ? fs[b - 1] : null;
    // before the oldest frame, past the newest, or between two that share no grain: a frame as is
    if (!fa || drawn >= fb.at || drawn < fa.at || fb.kept === 0) {
      const f = !fa || drawn >= fb.at ? fb : fa;
      return this.show(f, f, 1, `${f.id}`);
    }
    const s = (drawn - fa.at) / (fb.at - fa.at);
    return this.show(fa, fb, s, `${fb.id}:${s.toFixed(4)}`, b > 1 ? fs[b - 2] : null);
  }

  // Grains between frames fa and fb at fraction s of the way (simulated time), on the quadratic
  // through fz, fa and fb for the grains all three share, the straight line for those only fa and
  // fb share; the rest (new ones) as fb has them.
  show(fa, fb, s, key, fz = null) {
    if (key === this.shown) return false;
    this.shown = key;
    const n = fb.count;
    if (!this.positions || this.positions.length < 3 * n) { this.positions = new Float32Array(3 * n); this.shade = new Uint8Array(n); }
    this.count = n; this.radius = fb.radius; this.geometry = fb.geometry;
    this.t = s >= 1 ? fb.t : fa.t; this.seq = s >= 1 ? fb.seq : fa.seq;
    const p = this.positions, sh = this.shade;
    if (s >= 1 || fa === fb) {
      p.set(fb.pos); sh.set(fb.shade);
      return true;
    }
    const x = fa.t + s * (fb.t - fa.t);
    const lin = fb.kept, quad = fz && fa.kept > 0 && fz.t < fa.t && fa.t < fb.t ? Math.min(lin, fa.kept) : 0;
    const [w0, w1, w2] = quad ? weights(fz.t, fa.t, fb.t, x) : [0, 0, 0];
    for (let i = 0; i < 3 * quad; i++) p[i] = w0 * fz.pos[i] + w1 * fa.pos[i] + w2 * fb.pos[i];
    for (let i = 3 * quad; i < 3 * lin; i++) p[i] = fa.pos[i] + s * (fb.pos[i] - fa.pos[i]);
    for (let i = 3 * lin; i < 3 * n; i++) p[i] = fb.pos[i];
    for (let k = 0; k < lin; k++) sh[k] = Math.round(fa.shade[k] + s * (fb.shade[k] - fa.shade[k]));
    for (let k = lin; k < n; k++) sh[k] = fb.shade[k];
    return true;
  }
}
