// A session's page: the live 3D view, and for the controller (token in the URL fragment, never
// sent in a request line) the parameters, actions, pause/resume/reset, speed and drags; for
// everyone the measurements, a plot over time, and messages when a silo jams or drains.
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
window.grainlabView = view; // for scripting and tests
let session = null, scene = null, link = null, decoder = null, frames = 0;
let plot = null, plotKeys = [], plotData = [[]];

function message(text) {
  const box = $('message');
  box.textContent = text || '';
  box.style.display = text ? 'block' : 'none';
}

// What each scene plots over time: silo flow with its Beverloo line, slump angle and runout,
// the piles and the tilted box their angle.
function setupPlot() {
  const silo = scene.name === 'silo', slump = scene.name === 'slump';
  plotKeys = silo ? ['flow', 'beverloo'] : slump ? ['angle', 'front'] : ['angle'];
  $('plot-title').textContent = silo ? 'Flow, kg/s (dashed: Beverloo)' : slump ? 'Angle, ° · runout front, m' : 'Angle of repose, °';
  const width = $('plot').clientWidth || 330;
  const series = [{}], axes = [{ label: 't, s' }];
  if (silo) {
    series.push({ label: 'flow', stroke: '#c0392b', width: 2 }, { label: 'Beverloo', stroke: '#2c3e50', dash: [6, 4] });
    axes.push({});
  } else if (slump) {
    series.push({ label: 'angle, °', stroke: '#c0392b', width: 2, scale: 'deg' }, { label: 'front, m', stroke: '#2471a3', width: 2, scale: 'm' });
    axes.push({ scale: 'deg' }, { scale: 'm', side: 1, grid: { show: false } });
  } else {
    series.push({ label: 'angle, °', stroke: '#c0392b', width: 2 });
    axes.push({});
  }
  plotData = [[], ...plotKeys.map(() => [])];
  plot = new uPlot({ width, height: 200, series, axes, scales: { x: { time: false } } }, plotData, $('plot'));
}

function addSample(msg) {
  plotData[0].push(msg.t);
  plotKeys.forEach((k, i) => plotData[i + 1].push(msg.values[k] ?? null));
  if (plotData[0].length > 2400) for (const a of plotData) a.shift();
  plot.setData(plotData);
  document.body.dataset.plotLast = msg.values[plotKeys[0]] ?? ''; // for tests and scripting
  document.body.dataset.plotPoints = plotData[0].length;
  document.body.dataset.plotSeries = plotKeys.filter((k, i) => plotData[i + 1].some((v) => v !== null)).join(',');
}

function showMeasurements(values, state) {
  const rows = Object.entries(values).map(([k, v]) => `<span>${k}</span><span>${fmt(v)}</span>`);
  rows.push(`<span>state</span><span>${state}</span>`);
  $('meas').innerHTML = rows.join('');
}

function paramControls() {
  const box = $('params');
  box.innerHTML = '';
  for (const p of scene.params) {
    const row = document.createElement('div');
    row.className = 'param';
    // a round step (0.01 rather than 0.015) so typed and slid values land on what users expect
    const step = p.integer ? 1 : 10 ** Math.floor(Math.log10((p.max - p.min) / 100));
    row.innerHTML = `<label for="p-${p.name}" title="${p.description}">${p.name}${p.unit ? ` (${p.unit})` : ''}</label>` +
      `<input id="p-${p.name}" type="range" min="${p.min}" max="${p.max}" step="${step}">` +
      `<output id="o-${p.name}"></output>`;
    box.appendChild(row);
    const input = row.querySelector('input'), out = row.querySelector('output');
    input.value = session.params[p.name];
    out.textContent = fmt(session.params[p.name]);
    input.addEventListener('input', () => { out.textContent = fmt(Number(input.value)); });
    input.addEventListener('change', async () => {
      try {
        session = await api('PATCH', `/api/sessions/${id}/params`, { [p.name]: Number(input.value) }, controlToken);
      } catch (e) {
        input.value = session.params[p.name]; // refused: show what the session really has
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
      if (input && document.activeElement !== input && Number(input.value) !== session.params[p.name]) {
        input.value = session.params[p.name];
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
  setupPlot();
  if (controlToken) { paramControls(); actionButtons(); runControls(); }
  link = await connect(session.id, {
    onOpen() { if (token) link.send({ type: 'auth', token }); }, // a private session shows nothing before
    onFrame(info, d) {
      decoder = d;
      if (info.kind === CHAINS) { view.showChains(info, d); return; }
      frames++;
      view.update(d);
      $('badge').textContent = `t = ${info.t.toFixed(2)} s · ${d.count} grains`;
      document.body.dataset.frames = frames;
    },
    onText(msg) {
      if (msg.type === 'measurements') { showMeasurements(msg.values, msg.state); addSample(msg); }
      if (msg.type === 'event') {
        if (msg.event === 'jam') message('The silo has jammed: an arch of grains blocks the hole.');
        else if (msg.event === 'done' && msg.state === 'drained') message('The silo has drained.');
        else if (msg.event === 'run_started') { for (const a of plotData) a.length = 0; message(''); }
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
