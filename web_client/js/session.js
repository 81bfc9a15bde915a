// A session's page: the live 3D view, and for the controller (token in the URL fragment, never
// sent in a request line) the parameters, actions, pause/resume/reset, speed and drags; for
// everyone the measurements, the scene's plots over time, and messages when a silo jams or drains.
import uPlot from 'uplot';
import { api, fmt, showError } from './api.js';
import { connect, CHAINS } from './stream.js';
import { View } from './view.js';

const id = decodeURIComponent(location.pathname.split('/')[2] || '');
const fragment = new URLSearchParams(location.hash.slice(1));
const controlToken = fragment.get('control');
const viewToken = fragment.get('view');
const token = controlToken || viewToken;
const $ = (s) => document.getElementById(s);
if (!controlToken) document.body.classList.add('viewer');
$('role').textContent = controlToken ? 'controller' : 'viewer';

const view = new View($('view'));
const NOUN = { granular: 'grains', fluid: 'water particles', gravity: 'bodies' };
window.grainlabView = view; // for scripting and tests
let session = null, scene = null, link = null, decoder = null, frames = 0;
let plots = []; // per plot of the scene: {keys, data, uplot, div}

function message(text) {
  const box = $('message');
  box.textContent = text || '';
  box.style.display = text ? 'block' : 'none';
}

// What each scene plots over time, each plot a list of measurement keys; series on one plot
// share an axis unless they name their own scale (then the second one's axis is on the right).
const RED = '#c0392b', BLUE = '#2471a3', DARK = '#2c3e50', GREEN = '#1e8449';
const ENERGIES = {
  title: 'Energy, J: kinetic, potential, total',
  series: [{ key: 'kinetic', label: 'kinetic', stroke: RED }, { key: 'potential', label: 'potential', stroke: BLUE },
           { key: 'energy', label: 'total', stroke: DARK, dash: [6, 4] }],
};
// N-body: kinetic and potential trade while their sum stays flat on their scale; the relative
// drift of that sum from t = 0, on its own scale (right), shows how well it is conserved
const GRAVITY = [
  { title: 'Energy (G = 1 units): kinetic, potential, total · drift of the total',
    series: [{ key: 'kinetic', label: 'K', stroke: RED, scale: 'E' }, { key: 'potential', label: 'W', stroke: BLUE, scale: 'E' },
             { key: 'energy', label: 'E', stroke: DARK, dash: [6, 4], scale: 'E' },
             { key: 'energy_drift', label: 'drift', stroke: GREEN, scale: 'drift' }] },
  { title: 'Virial ratio 2K/|W| · angular momentum',
    series: [{ key: 'virial', label: '2K/|W|', stroke: RED, scale: 'Q' }, { key: 'angular_momentum', label: '|L|', stroke: BLUE, scale: 'L' }] },
];
const PLOTS = {
  silo: [{ title: 'Flow, kg/s (dashed: Beverloo)',
           series: [{ key: 'flow', label: 'flow', stroke: RED }, { key: 'beverloo', label: 'Beverloo', stroke: DARK, dash: [6, 4] }] }],
  slump: [{ title: 'Angle, ° · runout front, m',
            series: [{ key: 'angle', label: 'angle, °', stroke: RED, scale: 'deg' }, { key: 'front', label: 'front, m', stroke: BLUE, scale: 'm' }] }],
  dambreak: [{ title: 'Surge front and water height at the wall, m',
               series: [{ key: 'front', label: 'front', stroke: BLUE }, { key: 'height', label: 'height', stroke: RED }] }, ENERGIES],
  drop: [ENERGIES, { title: 'Top of the water, m', series: [{ key: 'top', label: 'top', stroke: BLUE }] }],
};
const MODEL_PLOTS = { fluid: [ENERGIES], gravity: GRAVITY };
const ANGLE = [{ title: 'Angle of repose, °', series: [{ key: 'angle', label: 'angle, °', stroke: RED }] }];

function plotsOf(sc) {
  // a scene's own plots, or its model's, keeping only keys the scene measures
  const chosen = PLOTS[sc.name] || MODEL_PLOTS[sc.model] || ANGLE;
  return chosen.map((p) => ({ ...p, series: p.series.filter((s) => sc.measurements.includes(s.key)) }))
    .filter((p) => p.series.length > 0);
}

// An axis tick: short whatever the magnitude (an energy drift of 1e-7, an energy of 264 J).
function tick(v) {
  if (v === null || v === undefined) return '';
  if (v === 0) return '0';
  return Math.abs(v) < 1e-3 || Math.abs(v) >= 1e5 ? v.toExponential(1) : String(Number(v.toPrecision(4)));
}

function setupPlots() {
  const box = $('plots');
  box.innerHTML = '';
  plots = plotsOf(scene).map((p, i) => {
    const section = document.createElement('section');
    section.innerHTML = `<h2 class="plot-title">${p.title}</h2><div class="plot" id="plot-${i}"></div>`;
    box.appendChild(section);
    const div = section.querySelector('.plot');
    const scales = [...new Set(p.series.map((s) => s.scale || 'y'))];
    const series = [{ label: 't, s' }, ...p.series.map((s) => ({ label: s.label, stroke: s.stroke, width: 2, dash: s.dash, scale: s.scale || 'y' }))];
    const values = (u, splits) => splits.map(tick);
    const axes = [{ label: 't, s' }, ...scales.map((sc, k) => (k === 0 ? { scale: sc, values, size: 56 }
      : { scale: sc, values, size: 56, side: 1, grid: { show: false } }))];
    const data = [[], ...p.series.map(() => [])];
    const uplot = new uPlot({ width: div.clientWidth || 330, height: 180, series, axes, scales: { x: { time: false } } }, data, div);
    return { keys: p.series.map((s) => s.key), data, uplot, div };
  });
  document.body.dataset.plots = plots.map((p) => p.keys.join(',')).join(';');
}

function addSample(msg) {
  for (const p of plots) {
    p.data[0].push(msg.t);
    p.keys.forEach((k, i) => p.data[i + 1].push(Number.isFinite(msg.values[k]) ? msg.values[k] : null));
    if (p.data[0].length > 2400) for (const a of p.data) a.shift();
    p.uplot.setData(p.data);
    // for tests and scripting: which series have data, how many points, the newest values
    p.div.dataset.series = p.keys.filter((k, i) => p.data[i + 1].some((v) => v !== null)).join(',');
    p.div.dataset.points = p.data[0].length;
    p.div.dataset.last = p.keys.map((k) => msg.values[k] ?? '').join(',');
  }
  const first = plots[0];
  if (!first) return;
  document.body.dataset.plotLast = msg.values[first.keys[0]] ?? '';
  document.body.dataset.plotPoints = first.data[0].length;
  document.body.dataset.plotSeries = first.div.dataset.series;
  document.body.dataset.plotSeriesAll = plots.map((p) => p.div.dataset.series).join(';');
}

function clearPlots() {
  for (const p of plots) {
    for (const a of p.data) a.length = 0;
    p.uplot.setData(p.data);
  }
}

function showMeasurements(values, state) {
  const rows = Object.entries(values).map(([k, v]) => `<span>${k}</span><span>${fmt(v)}</span>`);
  rows.push(`<span>state</span><span>${state}</span>`);
  $('meas').innerHTML = rows.join('');
}

// A slider's position for a value and back: linear, or logarithmic for whole numbers spanning
// decades (bodies: 16 to 200000), where a linear slider could not pick a small count.
const logScale = (p) => p.integer && p.min > 0 && p.max / p.min >= 100;
const toSlider = (p, v) => (logScale(p) ? (1000 * Math.log(v / p.min)) / Math.log(p.max / p.min) : v);
const fromSlider = (p, x) => (logScale(p) ? Math.round(p.min * (p.max / p.min) ** (x / 1000)) : x);

function paramControls() {
  const box = $('params');
  box.innerHTML = '';
  for (const p of scene.params) {
    const row = document.createElement('div');
    row.className = 'param';
    // a round step (0.01 rather than 0.015) so typed and slid values land on what users expect
    const step = p.integer ? 1 : 10 ** Math.floor(Math.log10((p.max - p.min) / 100));
    const range = logScale(p) ? 'min="0" max="1000" step="1"' : `min="${p.min}" max="${p.max}" step="${step}"`;
    // a parameter fixed at the start (the particle count, an orbit's speed) restarts the scene
    const title = `${p.description}${p.restart ? ' (changing it restarts the scene)' : ''}`;
    row.innerHTML = `<label for="p-${p.name}" title="${title}">${p.name}${p.unit ? ` (${p.unit})` : ''}${p.restart ? ' ↻' : ''}</label>` +
      `<input id="p-${p.name}" type="range" ${range}>` +
      `<output id="o-${p.name}"></output>`;
    box.appendChild(row);
    const input = row.querySelector('input'), out = row.querySelector('output');
    input.value = toSlider(p, session.params[p.name]);
    out.textContent = fmt(session.params[p.name]);
    input.addEventListener('input', () => { out.textContent = fmt(fromSlider(p, Number(input.value))); });
    input.addEventListener('change', async () => {
      const value = fromSlider(p, Number(input.value));
      try {
        if (p.restart) {
          // the restart keeps every other parameter as the session has it now (read afresh: a
          // periodic refresh sent before the last live change may have answered after it)
          const now = await api('GET', `/api/sessions/${id}`, undefined, controlToken);
          session = await api('POST', `/api/sessions/${id}/scene`, { scene: scene.name, params: { ...now.params, [p.name]: value }, seed: now.seed }, controlToken);
        } else {
          session = await api('PATCH', `/api/sessions/${id}/params`, { [p.name]: value }, controlToken);
        }
      } catch (e) {
        input.value = toSlider(p, session.params[p.name]); // refused: show what the session really has
        out.textContent = fmt(session.params[p.name]);
      }
    });
  }
}

let dragMode = null;
function actionButtons() {
  const box = $('actions');
  box.innerHTML = '';
  const add = (label, fn) => {
    const b = document.createElement('button');
    b.textContent = label;
    b.addEventListener('click', fn);
    box.appendChild(b);
    return b;
  };
  const act = (body) => api('POST', `/api/sessions/${id}/actions`, body, controlToken).catch(() => {});
  for (const a of scene.actions) {
    if (a === 'open_hole') add('Open hole', () => act({ type: 'open_hole' })).id = 'open-hole';
    if (a === 'plug_hole') add('Plug hole', () => act({ type: 'plug_hole' }));
    if (a === 'pull_dam') add('Pull dam', () => act({ type: 'pull_dam' }));
    if (a === 'pour') { add('Pour on', () => act({ type: 'pour', on: true })); add('Pour off', () => act({ type: 'pour', on: false })); }
    if (a === 'tilt') {
      const wrap = document.createElement('div');
      wrap.className = 'param';
      wrap.innerHTML = '<label for="tilt">tilt (°)</label><input id="tilt" type="range" min="0" max="60" step="1" value="0"><output id="tilt-out">0</output>';
      box.appendChild(wrap);
      const input = wrap.querySelector('input');
      input.addEventListener('input', () => { wrap.querySelector('output').textContent = input.value; });
      input.addEventListener('change', () => act({ type: 'tilt', angle: Number(input.value) }));
    }
    if (a === 'spout') add('Drag the spout', (e) => toggleDrag('spout', e.target));
    if (a === 'tool') { add('Finger tool', (e) => toggleDrag('tool', e.target)); add('Tool off', () => act({ type: 'tool_off' })); }
  }
}

function toggleDrag(mode, button) {
  dragMode = dragMode === mode ? null : mode;
  view.controls.enabled = !dragMode;
  for (const b of $('actions').querySelectorAll('button')) b.style.borderColor = '';
  if (dragMode) button.style.borderColor = 'var(--accent)';
}

// drags travel over the socket (continuous interactions), at most 30 per second
let lastDrag = 0, lastPoint = null, dragging = false;
view.renderer.domElement.addEventListener('pointerdown', () => { dragging = !!dragMode; });
window.addEventListener('pointerup', () => {
  dragging = false;
  if (dragMode === 'tool' && lastPoint) link.send({ type: 'action', action: { type: 'tool', x: lastPoint.x, y: view.floorY + 0.4, z: lastPoint.z } });
});
view.renderer.domElement.addEventListener('pointermove', (e) => {
  if (!dragging || !dragMode || !link) return;
  const now = performance.now();
  if (now - lastDrag < 33) return;
  const p = view.floorPoint(e);
  if (!p) return;
  if (dragMode === 'spout') {
    link.send({ type: 'action', action: { type: 'spout', x: p.x, z: p.z } });
  } else {
    const dt = (now - lastDrag) / 1000, prev = lastPoint || p;
    const vx = dt > 0 && dt < 0.5 ? (p.x - prev.x) / dt : 0, vz = dt > 0 && dt < 0.5 ? (p.z - prev.z) / dt : 0;
    link.send({ type: 'action', action: { type: 'tool', x: p.x, y: view.floorY + 0.4, z: p.z, vx, vy: 0, vz } });
  }
  lastPoint = p;
  lastDrag = now;
});

function runControls() {
  const act = (type) => api('POST', `/api/sessions/${id}/actions`, { type }, controlToken).catch(() => {});
  $('pause').onclick = () => act('pause');
  $('resume').onclick = () => act('resume');
  $('reset').onclick = () => act('reset');
  $('speed').addEventListener('input', () => { $('speed-out').textContent = $('speed').value + '×'; });
  $('speed').addEventListener('change', () =>
    api('PATCH', `/api/sessions/${id}`, { speed: Number($('speed').value) }, controlToken).catch(() => {}));
}

async function refresh() {
  try {
    session = await api('GET', `/api/sessions/${id}`, undefined, token);
  } catch (e) {
    return;
  }
  $('viewers').textContent = session.viewers;
  $('state').textContent = `${session.state} · rt ${fmt(session.rt_factor, 2)}`;
  if (controlToken) {
    for (const p of scene.params) {
      const input = $(`p-${p.name}`);
      if (input && document.activeElement !== input && fromSlider(p, Number(input.value)) !== session.params[p.name]) {
        input.value = toSlider(p, session.params[p.name]);
        $(`o-${p.name}`).textContent = fmt(session.params[p.name]);
      }
    }
  }
}

async function start() {
  if (!id) { showError('no session in the address'); return; }
  const catalogue = await api('GET', '/api/scenes');
  session = await api('GET', `/api/sessions/${id}`, undefined, token);
  scene = catalogue.scenes.find((s) => s.name === session.scene);
  $('title').textContent = `${session.scene}${session.label ? ' — ' + session.label : ''}`;
  $('join').textContent = session.join_code;
  $('viewer-link').value = `${location.origin}/s/${session.id}${viewToken ? '#view=' + viewToken : ''}`;
  document.title = `grainlab — ${session.scene}`;
  view.setModel(scene.model);
  setupPlots();
  if (controlToken) { paramControls(); actionButtons(); runControls(); }
  link = await connect(session.id, {
    onOpen() { if (token) link.send({ type: 'auth', token }); }, // a private session shows nothing before
    onFrame(info, d) {
      decoder = d;
      if (info.kind === CHAINS) { view.showChains(info, d); return; }
      frames++;
      view.update(d);
      $('badge').textContent = `t = ${info.t.toFixed(2)} s · ${d.count} ${NOUN[scene.model] || 'grains'}`;
      document.body.dataset.frames = frames;
    },
    onText(msg) {
      if (msg.type === 'measurements') { showMeasurements(msg.values, msg.state); addSample(msg); }
      if (msg.type === 'event') {
        if (msg.event === 'jam') message('The silo has jammed: an arch of grains blocks the hole.');
        else if (msg.event === 'done' && msg.state === 'drained') message('The silo has drained.');
        else if (msg.event === 'run_started' && msg.scene !== scene.name) location.reload(); // another scene: its own page
        else if (msg.event === 'run_started') { clearPlots(); message(''); }
        else if (msg.event === 'session_failed') message(`The session failed: ${msg.reason}`);
        else if (msg.event === 'action' && msg.action && msg.action.type === 'open_hole') message('');
      }
      if (msg.type === 'error') showError(msg.error.message);
    },
    onClose(ev) { if (ev.code === 1001) message('The session has ended.'); },
  });
  setInterval(refresh, 1000);
  refresh();
}

start().catch((e) => showError(e.message));
