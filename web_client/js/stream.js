// A session's websocket stream (schema/stream.md): frames decoded into positions, shades, radii
// and scene geometry; text messages (hello, measurements, events, errors) handed on as objects.
import { decompress } from 'fzstd';

const MAGIC = 0x464e5247;
export const KEY = 1, DELTA = 2, CHAINS = 3;

function geometry(view, at) {
  const f = (o) => view.getFloat64(at + o, true), b = (o) => view.getUint8(at + o) !== 0;
  return {
    floorY: f(0), floor: [f(8), f(16), f(24), f(32)],
    box: b(40), boxX0: f(48), boxX1: f(56), boxZ0: f(64), boxZ1: f(72),
    siloR: f(80), plate: b(88), plugged: b(89), plateY: f(96), holeR: f(104),
    dam: b(112), damX: f(120), damEdge: f(128),
    tool: b(136), toolR: f(144), toolX: f(152), toolY: f(160), toolZ: f(168), tilt: f(176),
  };
}

export class Decoder {
  constructor() { this.keySeq = -1; this.count = 0; }

  // Returns {kind, seq, t, count, ...} or throws on anything malformed.
  decode(buffer) {
    const bytes = new Uint8Array(buffer);
    if (bytes.length < 64) throw new Error('short frame');
    const v = new DataView(buffer);
    if (v.getUint32(0, true) !== MAGIC || v.getUint8(4) !== 1) throw new Error('not a grainlab frame');
    const kind = v.getUint8(5), seq = v.getUint32(8, true), keySeq = v.getUint32(12, true);
    const n = v.getUint32(16, true), rawSize = v.getUint32(20, true), payload = v.getUint32(24, true);
    if (payload !== bytes.length - 64) throw new Error('bad payload size');
    const raw = decompress(bytes.subarray(64));
    if (raw.length !== rawSize) throw new Error('bad raw size');
    const head = { kind, seq, keySeq, count: n, t: v.getFloat64(32, true),
                   origin: [v.getFloat32(40, true), v.getFloat32(44, true), v.getFloat32(48, true)],
                   step: v.getFloat32(52, true), published: Number(v.getBigUint64(56, true)) };
    if (kind === CHAINS) {
      if (keySeq !== this.keySeq || rawSize !== 12 * n) throw new Error('chains for another keyframe');
      const dv = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
      const a = new Uint32Array(n), b = new Uint32Array(n), f = new Float32Array(n);
      for (let k = 0; k < n; k++) {
        a[k] = dv.getUint32(4 * k, true); b[k] = dv.getUint32(4 * (n + k), true);
        f[k] = dv.getFloat32(4 * (2 * n + k), true);
      }
      return { ...head, a, b, force: f };
    }
    if (kind === KEY) {
      if (rawSize !== 8 * n + 184) throw new Error('bad keyframe size');
      const dv = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
      this.keyQ = new Uint16Array(3 * n);
      for (let i = 0; i < 3 * n; i++) this.keyQ[i] = dv.getUint16(2 * i, true);
      this.keySeq = seq; this.count = n; this.origin = head.origin; this.step = head.step;
      this.radius = new Float32Array(n);
      for (let k = 0; k < n; k++) this.radius[k] = raw[7 * n + k] * 0.0005;
      this.geometry = geometry(dv, 8 * n);
      this.positions = new Float32Array(3 * n);
      this.shade = new Uint8Array(n);
      for (let k = 0; k < n; k++) {
        for (let a = 0; a < 3; a++) this.positions[3 * k + a] = this.origin[a] + this.keyQ[a * n + k] * this.step;
        this.shade[k] = raw[6 * n + k];
      }
      return { ...head, key: true };
    }
    if (kind !== DELTA) throw new Error('unknown frame kind');
    if (keySeq !== this.keySeq || n !== this.count || rawSize !== 10 * n) throw new Error('delta without its keyframe');
    for (let k = 0; k < n; k++) {
      for (let a = 0; a < 3; a++) {
        const z = raw[3 * a * n + k] | (raw[(3 * a + 1) * n + k] << 8) | (raw[(3 * a + 2) * n + k] << 16);
        const d = (z >>> 1) ^ -(z & 1);
        this.positions[3 * k + a] = this.origin[a] + (this.keyQ[a * n + k] + d) * this.step;
      }
      this.shade[k] = raw[9 * n + k];
    }
    return { ...head, key: false };
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
// delta that came before its keyframe waits for the next keyframe.
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
