// A cheap 2D live view for the class dashboard's tiles: a side projection (x across, y up) of a
// decoded frame into a small canvas's pixels, one square per particle shaded by speed, with the
// floor, the silo's walls and plate and the dam as lines. No WebGL: thirty of these on one page
// cost a few milliseconds per frame together.
import { LOOKS } from './looks.js';

const rgb = (hex) => [(hex >> 16) & 255, (hex >> 8) & 255, hex & 255];

// The frame's extent to draw: every particle, or for a swarm of bodies the central 96 % (a few
// escaped bodies would shrink the rest to a dot). Pure, for tests: {x0, x1, y0, y1}.
export function extent(positions, count, swarm) {
  if (count === 0) return null;
  const xs = new Float32Array(count), ys = new Float32Array(count);
  for (let k = 0; k < count; k++) { xs[k] = positions[3 * k]; ys[k] = positions[3 * k + 1]; }
  if (swarm && count > 50) {
    xs.sort(); ys.sort();
    const lo = Math.floor(0.02 * (count - 1)), hi = Math.ceil(0.98 * (count - 1));
    return { x0: xs[lo], x1: xs[hi], y0: ys[lo], y1: ys[hi] };
  }
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (let k = 0; k < count; k++) {
    x0 = Math.min(x0, xs[k]); x1 = Math.max(x1, xs[k]); y0 = Math.min(y0, ys[k]); y1 = Math.max(y1, ys[k]);
  }
  return { x0, x1, y0, y1 };
}

export class Tile2D {
  constructor(canvas, model) {
    this.canvas = canvas;
    this.ctx = canvas.getContext('2d');
    this.look = LOOKS[model] || LOOKS.granular;
    this.slow = rgb(this.look.slow);
    this.fast = rgb(this.look.fast);
    this.bg = rgb(this.look.background);
    this.box = null; // world extent shown: grows with the particles (a silo drains, a column runs out), never shrinks
    this.image = this.ctx.createImageData(canvas.width, canvas.height);
    this.draws = 0;
  }

  grow(e, g) {
    if (!e) return;
    const b = { ...e };
    if (g && Number.isFinite(g.floorY)) b.y0 = Math.min(b.y0, g.floorY);
    if (g && g.siloR > 0) { b.x0 = Math.min(b.x0, -g.siloR); b.x1 = Math.max(b.x1, g.siloR); }
    if (g && g.drumR > 0) {
      b.x0 = Math.min(b.x0, -g.drumR); b.x1 = Math.max(b.x1, g.drumR);
      b.y0 = Math.min(b.y0, g.drumY - g.drumR); b.y1 = Math.max(b.y1, g.drumY + g.drumR);
    }
    if (!this.box) {
      // a margin, and never narrower than a metre (a single body, a thin column)
      const pad = Math.max(0.08 * Math.max(b.x1 - b.x0, b.y1 - b.y0), 0.5);
      this.box = { x0: b.x0 - pad, x1: b.x1 + pad, y0: b.y0 - pad, y1: b.y1 + pad };
      return;
    }
    const o = this.box;
    this.box = { x0: Math.min(o.x0, b.x0), x1: Math.max(o.x1, b.x1), y0: Math.min(o.y0, b.y0), y1: Math.max(o.y1, b.y1) };
  }

  // Draw the decoder's current positions; a keyframe (key) may widen the view.
  update(decoder, key) {
    const n = decoder.count, p = decoder.positions, shade = decoder.shade, r = decoder.radius;
    if (key || !this.box) this.grow(extent(p, n, this.look.swarm), decoder.geometry);
    if (!this.box) return;
    const w = this.canvas.width, h = this.canvas.height, data = this.image.data, b = this.box;
    const s = Math.min(w / (b.x1 - b.x0), h / (b.y1 - b.y0));
    const ox = (w - s * (b.x1 - b.x0)) / 2 - s * b.x0, oy = h - (h - s * (b.y1 - b.y0)) / 2 + s * b.y0;
    const [br, bg, bb] = this.bg;
    for (let i = 0; i < data.length; i += 4) { data[i] = br; data[i + 1] = bg; data[i + 2] = bb; data[i + 3] = 255; }
    const [sr, sg, sb] = this.slow, [fr, fg, fb] = this.fast;
    for (let k = 0; k < n; k++) {
      const px = Math.round(ox + s * p[3 * k]), py = Math.round(oy - s * p[3 * k + 1]);
      const half = Math.max(0, Math.round(s * r[k]) - 1); // at least one pixel
      const f = shade[k] / 255, cr = sr + (fr - sr) * f, cg = sg + (fg - sg) * f, cb = sb + (fb - sb) * f;
      for (let y = Math.max(0, py - half); y <= Math.min(h - 1, py + half); y++) {
        for (let x = Math.max(0, px - half); x <= Math.min(w - 1, px + half); x++) {
          const i = 4 * (y * w + x);
          data[i] = cr; data[i + 1] = cg; data[i + 2] = cb;
        }
      }
    }
    this.ctx.putImageData(this.image, 0, 0);
    this.lines(decoder.geometry, s, ox, oy);
    this.draws++;
  }

  lines(g, s, ox, oy) {
    if (!g) return;
    const c = this.ctx, X = (x) => ox + s * x, Y = (y) => oy - s * y, w = this.canvas.width;
    c.strokeStyle = 'rgba(170,185,205,0.8)';
    c.lineWidth = 1;
    c.beginPath();
    if (Number.isFinite(g.floorY)) { c.moveTo(0, Y(g.floorY)); c.lineTo(w, Y(g.floorY)); }
    if (g.siloR > 0) {
      const bottom = g.plate ? g.plateY : g.floorY;
      for (const x of [-g.siloR, g.siloR]) { c.moveTo(X(x), Y(bottom)); c.lineTo(X(x), 0); }
    }
    if (g.plate) {
      const hole = g.plugged ? 0 : g.holeR;
      c.moveTo(X(-g.siloR), Y(g.plateY)); c.lineTo(X(-hole), Y(g.plateY));
      c.moveTo(X(hole), Y(g.plateY)); c.lineTo(X(g.siloR), Y(g.plateY));
    }
    if (g.dam) { c.moveTo(X(g.damX), Y(Math.max(g.damEdge, g.floorY))); c.lineTo(X(g.damX), 0); }
    if (g.drumR > 0) { c.moveTo(X(g.drumR), Y(g.drumY)); c.arc(X(0), Y(g.drumY), s * g.drumR, 0, 2 * Math.PI); }
    c.stroke();
  }
}
