// A session's websocket stream (schema/stream.md, format 4): frames decoded into positions,
// shades, radii and scene geometry; text messages (hello, measurements, events, errors) handed on
// as objects.
import { decompress } from 'fzstd';

const MAGIC = 0x464e5247, VERSION = 4, GEOMETRY = 208, ORDER_MAX = 2, MAX_GRAINS = 4000000;
export const KEY = 1, DELTA = 2, CHAINS = 3, PREDICTED = 4;

function geometry(view, at) {
  const f = (o) => view.getFloat64(at + o, true), b = (o) => view.getUint8(at + o) !== 0;
  return {
    floorY: f(0), floor: [f(8), f(16), f(24), f(32)],
    box: b(40), boxX0: f(48), boxX1: f(56), boxZ0: f(64), boxZ1: f(72),
    siloR: f(80), plate: b(88), plugged: b(89), plateY: f(96), holeR: f(104),
    dam: b(112), damX: f(120), damEdge: f(128),
    tool: b(136), toolR: f(144), toolX: f(152), toolY: f(160), toolZ: f(168), tilt: f(176),
    drumR: f(184), drumY: f(192), drumW: f(200),
  };
}

// The content size a zstd frame's header declares (RFC 8878 §3.1.1.1), or -1 when it declares
// none: checked against the header's raw_size before anything is decompressed, so that a few
// hostile bytes cannot make the decompressor allocate what they claim.
function contentSize(z) {
  if (z.length < 6 || z[0] !== 0x28 || z[1] !== 0xb5 || z[2] !== 0x2f || z[3] !== 0xfd) return -1;
  const flg = z[4], fcf = flg >> 6, single = (flg >> 5) & 1, dict = [0, 1, 2, 4][flg & 3];
  const bytes = fcf ? 1 << fcf : single, at = 5 + (single ? 0 : 1) + dict;
  if (!bytes || z.length < at + bytes) return -1;
  let size = 0;
  for (let i = bytes - 1; i >= 0; i--) size = size * 256 + z[at + i];
  return fcf === 1 ? size + 256 : size;
}

export class Decoder {
  constructor() { this.keySeq = -1; this.keyCount = 0; this.count = 0; this.prevCount = 0; this.seq = -1; this.run = 0; }

  // Returns {kind, seq, t, count, ...} or throws on anything malformed, a delta whose keyframe it
  // has not decoded, or a predicted frame without the frames right before it; a refused frame
  // changes nothing. this.q holds the decoded grid coordinates (x, y, z planes of count): the
  // keyframe's grains first, then those that came since.
  decode(buffer) {
    const bytes = new Uint8Array(buffer);
    if (bytes.length < 64) throw new Error('short frame');
    const v = new DataView(buffer);
    if (v.getUint32(0, true) !== MAGIC || v.getUint8(4) !== VERSION) throw new Error(`not a grainlab frame of format ${VERSION}`);
    const kind = v.getUint8(5), order = v.getUint8(6), seq = v.getUint32(8, true), keySeq = v.getUint32(12, true);
    const n = v.getUint32(16, true), rawSize = v.getUint32(20, true), payload = v.getUint32(24, true);
    if (payload !== bytes.length - 64) throw new Error('bad payload size');
    if (n > MAX_GRAINS) throw new Error('too many grains');
    const head = { kind, seq, keySeq, count: n, t: v.getFloat64(32, true),
                   origin: [v.getFloat32(40, true), v.getFloat32(44, true), v.getFloat32(48, true)],
                   step: v.getFloat32(52, true), published: Number(v.getBigUint64(56, true)), kept: v.getUint32(28, true) };
    if (head.kept > n) throw new Error('more grains kept than the frame has');
    if (kind === CHAINS) {
      if (keySeq !== this.keySeq || rawSize !== 12 * n) throw new Error('chains for another keyframe');
    } else if (kind === KEY) {
      if (order !== 0 || rawSize !== 8 * n + GEOMETRY || !(head.step > 0)) throw new Error('bad keyframe');
    } else if (kind === DELTA || kind === PREDICTED) {
      if (kind === DELTA ? order !== 0 : order < 1 || order > ORDER_MAX) throw new Error('bad frame order');
      if (keySeq !== this.keySeq) throw new Error('a frame without its keyframe');
      // coded against frames before: a delta's keyframe's grains, a predicted frame's the last
      // frame's; the grains after them came since, whole
      head.base = kind === DELTA ? this.keyCount : this.count;
      if (n < head.base || rawSize !== 10 * head.base + 8 * (n - head.base)) throw new Error('bad frame size');
      if (kind === PREDICTED && (this.seq !== ((seq - 1) >>> 0) || this.run < order)) {
        throw new Error('a predicted frame without the frames before it');
      }
    } else {
      throw new Error('unknown frame kind');
    }
    // `kept` counts grains of the frame right before: a decoder that has it knows how many it had
    if (kind !== CHAINS && this.seq >= 0 && seq === ((this.seq + 1) >>> 0) && head.kept > this.count) {
      throw new Error('more grains kept than the frame before had');
    }
    const z = bytes.subarray(64);
    if (contentSize(z) !== rawSize) throw new Error('bad raw size');
    const raw = decompress(z);
    if (raw.length !== rawSize) throw new Error('bad raw size');
    if (kind === CHAINS) {
      const dv = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
      const a = new Uint32Array(n), b = new Uint32Array(n), f = new Float32Array(n);
      for (let k = 0; k < n; k++) {
        a[k] = dv.getUint32(4 * k, true); b[k] = dv.getUint32(4 * (n + k), true);
        f[k] = dv.getFloat32(4 * (2 * n + k), true);
        if (a[k] >= this.count || b[k] >= this.count) throw new Error('chains name grains the keyframe lacks');
      }
      return { ...head, a, b, force: f };
    }
    // the new q first, into scratch: a grain off the grid refuses the whole frame
    const q = kind === KEY || !this.qNew || this.qNew.length < 3 * n ? new Uint16Array(3 * n) : this.qNew;
    const base = head.base || 0, m = n - base, n1 = this.count, n2 = this.prevCount;
    if (kind === KEY) {
      const dv = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
      for (let i = 0; i < 3 * n; i++) q[i] = dv.getUint16(2 * i, true);
    } else {
      // residual planes of the base grains: byte b of axis a's zigzag code in plane 3b + a; then
      // the new grains' q planes (u16), shades and radii
      const dv = new DataView(raw.buffer, raw.byteOffset, raw.byteLength), added = 10 * base;
      for (let a = 0; a < 3; a++) {
        for (let k = 0; k < base; k++) {
          const j = a * base + k;
          const zz = raw[j] | (raw[3 * base + j] << 8) | (raw[6 * base + j] << 16);
          const d = (zz >>> 1) ^ -(zz & 1);
          const p = kind === DELTA ? this.keyQ[j]
            : order === 2 && k < n2 ? 2 * this.q[a * n1 + k] - this.qPrev[a * n2 + k] : this.q[a * n1 + k];
          const x = p + d;
          if (x < 0 || x > 65535) throw new Error('a grain off the grid');
          q[a * n + k] = x;
        }
        for (let k = 0; k < m; k++) q[a * n + base + k] = dv.getUint16(added + 2 * (a * m + k), true);
      }
    }
    if (kind === KEY) {
      const dv = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
      this.keyQ = q.slice(0, 3 * n);
      this.keySeq = seq; this.keyCount = n; this.origin = head.origin; this.step = head.step;
      this.radius = new Float32Array(n);
      for (let k = 0; k < n; k++) this.radius[k] = raw[7 * n + k] * 0.0005;
      this.geometry = geometry(dv, 8 * n);
      this.shade = raw.slice(6 * n, 7 * n);
      this.qPrev = new Uint16Array(3 * n);
      this.run = 1;
    } else {
      if (this.shade.length < n) { const s = new Uint8Array(n); s.set(this.shade); this.shade = s; }
      if (this.radius.length < n) { const r = new Float32Array(n); r.set(this.radius); this.radius = r; }
      for (let k = 0; k < base; k++) this.shade[k] = kind === DELTA ? raw[9 * base + k] : this.shade[k] + raw[9 * base + k];
      const added = 10 * base;
      for (let k = 0; k < m; k++) {
        this.shade[base + k] = raw[added + 6 * m + k];
        this.radius[base + k] = raw[added + 7 * m + k] * 0.0005;
      }
      // a delta right after the frame before continues the run; after a gap it starts one
      const next = this.seq === ((seq - 1) >>> 0);
      this.run = next ? Math.min(this.run + 1, ORDER_MAX) : 1;
    }
    this.prevCount = kind === KEY ? 0 : this.count;
    this.count = n;
    this.qNew = this.qPrev;
    this.qPrev = this.q || new Uint16Array(3 * n);
    this.q = q;
    this.seq = seq;
    if (!this.positions || this.positions.length < 3 * n) this.positions = new Float32Array(3 * n);
    for (let k = 0; k < n; k++) {
      for (let a = 0; a < 3; a++) this.positions[3 * k + a] = this.origin[a] + q[a * n + k] * this.step;
    }
    return { ...head, key: kind === KEY };
  }
}

// The daemon's websocket address (GET /api/config), asked once per page however many streams
// it opens.
let config = null;
function wsConfig() {
  if (!config) config = fetch('/api/config').then((r) => r.json()).catch((e) => { config = null; throw e; });
  return config;
}

async function open(path, id) {
  const cfg = await wsConfig();
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const ws = new WebSocket(cfg.ws_port ? `${proto}//${location.hostname}:${cfg.ws_port}${cfg[path]}${id}`
                                       : `${proto}//${location.host}${cfg[path]}${id}`);
  ws.binaryType = 'arraybuffer';
  return ws;
}

// What one stream's frames go through: its decoder, then handlers.onFrame(info, decoder). A
// frame the decoder cannot use (the server sends none: a delta before its keyframe, a predicted
// frame without the frames before it) is dropped, and the stream goes on from the next it can.
export function frames(handlers) {
  const decoder = new Decoder();
  return (data) => {
    let info;
    try { info = decoder.decode(data); } catch (e) { return; }
    handlers.onFrame(info, decoder);
  };
}

// Connect to a session's stream; handlers: onOpen(), onFrame(info, decoder), onText(msg),
// onClose(ev). options.token: authenticate first (a private session's viewer or control token:
// it shows nothing before). A reduced rate is the class stream's (connectClass).
export async function connect(id, handlers, options = {}) {
  const ws = await open('ws_path', id);
  const frame = frames(handlers);
  const send = (obj) => ws.readyState === 1 && ws.send(JSON.stringify(obj));
  ws.onmessage = (ev) => {
    if (typeof ev.data !== 'string') { frame(ev.data); return; }
    if (handlers.onText) handlers.onText(JSON.parse(ev.data));
  };
  ws.onopen = () => {
    if (options.token) send({ type: 'auth', token: options.token });
    if (handlers.onOpen) handlers.onOpen();
  };
  ws.onclose = (ev) => handlers.onClose && handlers.onClose(ev);
  return { ws, send, close: () => ws.close() };
}

// A class dashboard's one stream of every group's session (schema/stream.md), opened with the
// teacher's token at fps frames a second per group: each frame goes to onFrame(sessionId, data)
// after the {"type":"frame"} message that names its session. onText(msg) gets the rest.
export async function connectClass(id, token, fps, handlers) {
  const ws = await open('ws_class_path', id);
  let of = null;
  const send = (obj) => ws.readyState === 1 && ws.send(JSON.stringify(obj));
  ws.onmessage = (ev) => {
    if (typeof ev.data !== 'string') {
      if (of) handlers.onFrame(of, ev.data);
      of = null;
      return;
    }
    const msg = JSON.parse(ev.data);
    if (msg.type === 'frame') { of = msg.session; return; }
    if (msg.type === 'auth') send({ type: 'rate', fps });
    if (handlers.onText) handlers.onText(msg);
  };
  ws.onopen = () => send({ type: 'auth', token });
  ws.onclose = (ev) => handlers.onClose && handlers.onClose(ev);
  return { ws, send, close: () => ws.close() };
}
