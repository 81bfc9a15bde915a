// A session's page: the live 3D view, and for the controller (token in the URL fragment, never
// sent in a request line) the parameters, actions, pause/resume/reset, speed and drags; for
// everyone the measurements, the scene's plots over time, and messages when a silo jams or drains.
import uPlot from 'uplot';
import { api, download, errorText, esc, fmt, measureValue, pageFailed, showError } from './api.js';
import { has, measureLabel, paramChoices, paramLabel, sceneName, t, unitText } from './i18n.js';
import { connect, CHAINS } from './stream.js';
import { Playback } from './playback.js';
import { View } from './view.js';
import { EXPERIMENTS, keyFigure, slumpRunout } from './theory.js';

const id = decodeURIComponent(location.pathname.split('/')[2] || '');
const fragment = new URLSearchParams(location.hash.slice(1));
const controlToken = fragment.get('control');
const viewToken = fragment.get('view');
const token = controlToken || viewToken;
const $ = (s) => document.getElementById(s);
if (!controlToken) document.body.classList.add('viewer');
$('role').textContent = t(controlToken ? 'role.controller' : 'role.viewer');

const view = new View($('view'));
window.grainlabView = view; // for scripting and tests
let session = null, scene = null, link = null, frames = 0;
// frames come 15 a second: the picture is drawn between them at the screen's rate; force chains
// wait until the picture reaches the frame they belong to
const playback = new Playback();
let chains = null;
window.grainlabPlayback = playback; // for the browser tests
function draw() {
  // a picture not drawn yet (a slow machine draws at most half the time) is not replaced by
  // another: its grains would be set for nothing
  if (!view.dirty && playback.at()) {
    view.update(playback);
    $('badge').textContent = t('session.badge', { t: playback.t.toFixed(2), n: playback.count, particles: t(`particles.${scene.model}`) });
  }
  if (chains && playback.seq >= chains.seq) { view.showChains(chains, playback); chains = null; }
  requestAnimationFrame(draw);
}
let plots = []; // per plot of the scene: {keys, data, uplot, div}

function message(text) {
  const box = $('message');
  box.textContent = text || '';
  box.style.display = text ? 'block' : 'none';
}

// What a scene plots comes from the catalogue (scene.plots: a title and series of measurement
// keys, some on a right-hand axis, reference curves marked); here only the colours.
const COLOURS = ['#c0392b', '#2471a3', '#2c3e50', '#1e8449', '#8e44ad'];
let measureInfo = {}; // measurement key -> {unit}, from the catalogue (units '' in model units)

function plotsOf(sc) {
  return (sc.plots || []).map((p, k) => ({
    title: t(`plot.${sc.name}.${k}`),
    series: p.series.filter((s) => sc.measurements.includes(s.key)).map((s, i) => {
      const m = measureInfo[s.key] || { unit: '' };
      return { key: s.key, label: measureLabel(s.key, m.unit), stroke: COLOURS[i % COLOURS.length],
               dash: s.reference ? [6, 4] : undefined, scale: s.axis === 'right' ? 'right' : 'y' };
    }),
  })).filter((p) => p.series.length > 0);
}

// An axis tick: short whatever the magnitude (an energy drift of 1e-7, an energy of 264 J).
function tick(v) {
  if (v === null || v === undefined) return '';
  if (v === 0) return '0';
  return Math.abs(v) < 1e-3 || Math.abs(v) >= 1e5 ? v.toExponential(1) : String(Number(v.toPrecision(4)));
}

// A y scale's range: uPlot's own, padded, but never narrower than a thousandth of its values.
// A circular orbit's angular momentum reads 1.0000000000000009, then 1.0000000000000016: uPlot's
// ticks over such a span never advance past float rounding and it throws (its issue 1084), and
// no tick label of four digits could tell them apart anyway.
function yRange(u, min, max) {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [0, 1]; // no data yet
  const least = 1e-3 * Math.max(Math.abs(min), Math.abs(max));
  const mid = 0.5 * (min + max);
  return max - min < least ? uPlot.rangeNum(mid - least, mid + least, 0.1, true) : uPlot.rangeNum(min, max, 0.1, true);
}

// A slump's runout law on its front axis (issue 19): once the dam is pulled, a dashed line at the
// final front the law predicts, L0·(1 + slumpRunout(aspect)), L0 being the front just before the
// pull (as theory.js's liveY counts the runout) and the aspect the one the column was built with
// (at the start or a reset). A page opened after the pull draws no line: it never saw L0.
const runoutLaw = { key: EXPERIMENTS.slump.key, label: t(`law.${EXPERIMENTS.slump.lawName}`) };
let lastFront = null, builtAspect = null, predictedFront = null;

function resetRunoutLaw() {
  builtAspect = session && session.params ? session.params.aspect : null;
  predictedFront = null;
  document.body.dataset.plotLaw = '';
}

// The stream's events that move the line: the pull fixes it, a new run or a reset clears it.
function plotEvent(msg) {
  const type = msg.event === 'action' && msg.action ? msg.action.type : null;
  if (msg.event === 'run_started' || type === 'reset') resetRunoutLaw();
  if (type === 'pull_dam' && predictedFront === null && lastFront > 0 && builtAspect > 0) {
    predictedFront = lastFront * (1 + slumpRunout(builtAspect));
    document.body.dataset.plotLaw = predictedFront;
  }
}

function setupPlots() {
  const box = $('plots');
  box.innerHTML = '';
  resetRunoutLaw();
  plots = plotsOf(scene).map((p, i) => {
    const section = document.createElement('section');
    section.innerHTML = `<h2 class="plot-title"></h2><div class="plot" id="plot-${i}" role="img"></div>`;
    section.querySelector('h2').textContent = p.title;
    section.querySelector('.plot').setAttribute('aria-label', p.title);
    box.appendChild(section);
    const div = section.querySelector('.plot');
    const scales = [...new Set(p.series.map((s) => s.scale || 'y'))];
    const series = [{ label: t('session.time_axis') }, ...p.series.map((s) => ({ label: s.label, stroke: s.stroke, width: 2, dash: s.dash, scale: s.scale || 'y' }))];
    const front = scene.name === 'slump' ? p.series.find((s) => s.key === runoutLaw.key) : null;
    if (front) series.push({ label: runoutLaw.label, stroke: front.stroke, width: 1.5, dash: [6, 4], scale: front.scale || 'y' });
    const values = (u, splits) => splits.map(tick);
    // an axis as wide as its longest label, measured in its font (a drift's "4.0e-12" was cut at
    // a phone's edge); after two rounds the size stands, so uPlot's layout converges
    const size = (u, labels, i, cycle) => {
      const axis = u.axes[i];
      if (cycle > 1) return axis._size;
      const longest = (labels || []).reduce((a, l) => (String(l).length > a.length ? String(l) : a), '0.00');
      u.ctx.font = axis.font[0];
      return Math.ceil(axis.ticks.size + axis.gap + u.ctx.measureText(longest).width / devicePixelRatio) + 4;
    };
    const axes = [{ label: t('session.time_axis') }, ...scales.map((sc, k) => (k === 0 ? { scale: sc, values, size }
      : { scale: sc, values, size, side: 1, grid: { show: false } }))];
    const data = series.map(() => []);
    const ys = Object.fromEntries(scales.map((sc) => [sc, { range: yRange }]));
    const uplot = new uPlot({ width: div.clientWidth || 330, height: 180, series, axes, scales: { x: { time: false }, ...ys } }, data, div);
    // law: the data column of the law's line, after the measurements' (none: no line)
    return { keys: p.series.map((s) => s.key), data, uplot, div, law: front ? p.series.length + 1 : 0 };
  });
  document.body.dataset.plots = plots.map((p) => p.keys.join(',')).join(';');
}

// The plots keep the last ten minutes of simulated time, whatever the scene's sample interval
// (the catalogue's: 0.25 s for most, 1/60 s for a dam break), and redraw at most ten times a second.
const PLOT_SECONDS = 600;
let plotDraw = null, lastValues = {};
function drawPlots() {
  plotDraw = null;
  for (const p of plots) {
    p.uplot.setData(p.data);
    // for tests and scripting: which series have data, how many points, the newest values
    p.div.dataset.series = p.keys.filter((k, i) => p.data[i + 1].some((v) => v !== null)).join(',');
    p.div.dataset.points = p.data[0].length;
    p.div.dataset.last = p.keys.map((k) => lastValues[k] ?? '').join(',');
  }
  const first = plots[0];
  if (!first) return;
  document.body.dataset.plotLast = lastValues[first.keys[0]] ?? '';
  document.body.dataset.plotPoints = first.data[0].length;
  const t = first.data[0];
  document.body.dataset.plotDt = t.length > 1 ? t[t.length - 1] - t[t.length - 2] : '';
  document.body.dataset.plotSeries = first.div.dataset.series;
  document.body.dataset.plotSeriesAll = plots.map((p) => p.div.dataset.series).join(';');
}

function addSample(msg) {
  if (Number.isFinite(msg.values[runoutLaw.key])) lastFront = msg.values[runoutLaw.key];
  const keep = Math.ceil(PLOT_SECONDS / scene.sample_seconds);
  lastValues = msg.values;
  for (const p of plots) {
    p.data[0].push(msg.t);
    p.keys.forEach((k, i) => p.data[i + 1].push(Number.isFinite(msg.values[k]) ? msg.values[k] : null));
    if (p.law) p.data[p.law].push(predictedFront);
    if (p.data[0].length > keep) for (const a of p.data) a.splice(0, a.length - keep);
  }
  if (!plotDraw) plotDraw = setTimeout(drawPlots, 100);
}

function clearPlots() {
  for (const p of plots) {
    for (const a of p.data) a.length = 0;
    p.uplot.setData(p.data);
  }
}

function showMeasurements(values, state) {
  const cells = [];
  for (const [k, v] of Object.entries(values)) {
    const name = document.createElement('span'), value = document.createElement('span');
    name.textContent = measureLabel(k, measureInfo[k] ? measureInfo[k].unit : '');
    name.dataset.key = k;
    value.textContent = measureValue(measureInfo[k], v);
    cells.push(name, value);
    // a figure with none yet says when it is taken (a silo's mean flow needs grains a hole's
    // width deep 2 s after opening: a small silo with a wide hole never has one)
    if ((v === null || v === undefined) && has(`measure.${k}.none`)) {
      const why = document.createElement('small');
      why.className = 'meas-note';
      why.dataset.key = k;
      why.textContent = t(`measure.${k}.none`);
      cells.push(why);
    }
  }
  const name = document.createElement('span'), value = document.createElement('span');
  name.textContent = t('session.state');
  value.textContent = t(`mstate.${state}`);
  cells.push(name, value);
  $('meas').replaceChildren(...cells);
  // the view's text: what it shows, and its key figure now
  const key = keyFigure(scene);
  if (key && key in values) {
    $('view').setAttribute('aria-label', t('session.view_alt', {
      scene: sceneName(scene.name), figure: measureLabel(key, measureInfo[key] ? measureInfo[key].unit : ''), value: fmt(values[key]),
      state: t(`mstate.${state}`),
    }));
  }
}

// A slider's position for a value and back: linear, or logarithmic for whole numbers spanning
// decades (bodies: 16 to 200000), where a linear slider could not pick a small count.
const logScale = (p) => p.integer && p.min > 0 && p.max / p.min >= 100;
const toSlider = (p, v) => (logScale(p) ? (1000 * Math.log(v / p.min)) / Math.log(p.max / p.min) : v);
const fromSlider = (p, x) => (logScale(p) ? Math.round(p.min * (p.max / p.min) ** (x / 1000)) : x);

// A slider per parameter: live ones first; those fixed when the scene is built (the grains'
// quality, a column's aspect) under their own heading, since moving one starts over.
function paramControls() {
  $('params').replaceChildren();
  $('restart-params').replaceChildren();
  $('restart-head').hidden = !scene.params.some((p) => p.restart);
  for (const p of scene.params) {
    const row = document.createElement('div');
    row.className = 'param';
    // a round step (0.01 rather than 0.015) so typed and slid values land on what users expect
    const step = p.integer ? 1 : 10 ** Math.floor(Math.log10((p.max - p.min) / 100));
    const label = document.createElement('label');
    label.htmlFor = `p-${p.name}`;
    label.textContent = paramLabel(p);
    label.title = t(`param.${p.name}.hint`);
    // a grain count per setting is chosen by its words; the rest slide
    const choices = paramChoices(scene, p, session.quality_particles);
    const input = document.createElement(choices ? 'select' : 'input');
    if (choices) for (const [value, words] of choices) input.add(new Option(words, String(value)));
    else Object.assign(input, { type: 'range' }, logScale(p) ? { min: 0, max: 1000, step: 1 } : { min: p.min, max: p.max, step });
    input.id = `p-${p.name}`;
    const out = document.createElement('output');
    out.id = `o-${p.name}`;
    out.htmlFor = input.id;
    out.hidden = !!choices;
    row.append(label, input, out);
    $(p.restart ? 'restart-params' : 'params').appendChild(row);
    const shown = (v) => (choices ? String(v) : toSlider(p, v));
    const read = () => (choices ? Number(input.value) : fromSlider(p, Number(input.value)));
    input.value = shown(session.params[p.name]);
    out.textContent = fmt(session.params[p.name]);
    input.addEventListener('input', () => { out.textContent = fmt(read()); });
    input.addEventListener('change', async () => {
      const value = read();
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
        input.value = shown(session.params[p.name]); // refused: show what the session really has
        out.textContent = fmt(session.params[p.name]);
      }
      labelChoices();
    });
  }
}

// A choice's words follow the session's own settings: at 200 % of the grains "light" starts 1500,
// not the catalogue's 750 (every count shown is one the session really starts with).
function labelChoices() {
  for (const p of scene.params) {
    const input = $(`p-${p.name}`), choices = paramChoices(scene, p, session.quality_particles);
    if (input && choices) choices.forEach(([, words], k) => { if (input.options[k]) input.options[k].textContent = words; });
  }
}

let dragMode = null;
// Which actions a scene offers, and their arguments and ranges, come from the catalogue, their
// words from the message catalogue; the two that follow the pointer are drags.
const DRAGS = new Set(['spout', 'tool']);
function actionButtons(actionInfo) {
  const box = $('actions');
  box.innerHTML = '';
  const add = (label, fn) => {
    const b = document.createElement('button');
    b.textContent = label;
    b.addEventListener('click', fn);
    box.appendChild(b);
    return b;
  };
  // one action per press of a button: a double tap on Open hole opened it, then showed the
  // second's refusal ("the hole is open already") as if the first had failed. A slider is not
  // held back: each value it is let go at is sent, or the world would not be at the one shown.
  const act = async (body, button = null) => {
    if (button?.dataset.busy) return;
    if (button) button.dataset.busy = '1';
    try {
      await api('POST', `/api/sessions/${id}/actions`, body, controlToken);
    } catch { /* shown by api() */ } finally {
      if (button) delete button.dataset.busy;
    }
  };
  for (const name of scene.actions) {
    const a = actionInfo[name];
    if (!a || name === 'reset') continue; // reset sits with pause and resume
    const required = a.args.filter((g) => g.required);
    if (DRAGS.has(name)) {
      const b = add(t(`action.${name}.drag`), (e) => toggleDrag(name, e.target));
      b.setAttribute('aria-pressed', 'false');
    } else if (required.length === 0) {
      const b = add(t(`action.${name}`), (e) => act({ type: name }, e.currentTarget));
      b.id = name.replace(/_/g, '-');
    } else if (required.length === 1 && required[0].type === 'boolean') {
      const g = required[0];
      add(t(`action.${name}.on`), (e) => act({ type: name, [g.name]: true }, e.currentTarget));
      add(t(`action.${name}.off`), (e) => act({ type: name, [g.name]: false }, e.currentTarget));
    } else if (required.length === 1) {
      // one number: a slider over its range, sent when let go
      const g = required[0];
      const wrap = document.createElement('div');
      wrap.className = 'param';
      const start = Math.min(Math.max(0, g.min), g.max);
      wrap.innerHTML = `<label for="act-${name}"></label>` +
        `<input id="act-${name}" type="range" min="${g.min}" max="${g.max}" step="${(g.max - g.min) / 120}" value="${start}"><output>${start}</output>`;
      wrap.querySelector('label').textContent = t(`action.${name}`) + (g.unit ? ` (${unitText(g.unit)})` : '');
      box.appendChild(wrap);
      const input = wrap.querySelector('input');
      input.addEventListener('input', () => { wrap.querySelector('output').textContent = fmt(Number(input.value)); });
      input.addEventListener('change', () => act({ type: name, [g.name]: Number(input.value) }));
    }
  }
  // a scene whose only action is reset (under Run) has no Actions section
  box.parentElement.hidden = box.children.length === 0;
}

function toggleDrag(mode, button) {
  dragMode = dragMode === mode ? null : mode;
  view.controls.enabled = !dragMode;
  for (const b of $('actions').querySelectorAll('button[aria-pressed]')) b.setAttribute('aria-pressed', 'false');
  if (dragMode) button.setAttribute('aria-pressed', 'true');
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

function snapshotButtons() {
  const take = (format) => download(`/api/sessions/${id}/snapshot?format=${format}`, token, `session-${id}.${format}`)
    .then((name) => { document.body.dataset.snapshot = name; })
    .catch(() => {});
  $('snap-csv').onclick = () => take('csv');
  $('snap-vtk').onclick = () => take('vtk');
}

// While the grains settle no experiment may start (the server refuses with 409 settling): the
// scene's actions and live parameters wait, disabled, under a countdown of the seconds left at
// most (simulated seconds: at the session's speed and pace). Pause, resume, reset, speed and the
// parameters that restart the scene stay.
function showSettling() {
  const left = session.settling_left > 0 ? Math.ceil(session.settling_left) : 0;
  const box = $('settling');
  box.hidden = left === 0;
  // waiting for another group's settle of the same grains, it does not step: no countdown
  box.textContent = !left ? '' : session.settle_wait ? t('session.settle_wait')
    : t('session.settling', { seconds: left });
  document.body.dataset.settling = left;
  controlsState();
}

// What may be touched now. While the grains settle, the scene's actions and live parameters wait
// (pause, resume, reset, speed and the restart parameters stay); while the teacher locks the
// class, or once the class or the session has ended, nothing does.
let classLocked = false, classEnded = false;
function controlsState() {
  const settling = session.settling_left > 0;
  const held = classLocked || classEnded || session.state === 'ended' || session.state === 'failed';
  const live = new Set(scene.params.filter((p) => !p.restart).map((p) => `p-${p.name}`));
  for (const el of document.querySelectorAll('.controller-only button, .controller-only input, .controller-only select')) {
    const waits = settling && (el.closest('#actions') || live.has(el.id));
    el.disabled = held || !!waits;
  }
  document.body.classList.toggle('held', held);
}

// ---- the class this session is a group's: where it belongs, and the teacher's lock, spotlight
// and end as a banner that stays while they hold ------------------------------------------------
let klass = null, classPolls = 0;
async function classBanner() {
  const c = session.class;
  if (!c) return;
  classLocked = !!c.locked;
  // the class itself (its name, spotlight and end) every other second
  if (classPolls++ % 2 === 0) {
    try {
      klass = await api('GET', `/api/classes/${encodeURIComponent(c.id)}`, undefined, token);
    } catch (e) { /* said by api(); the banner keeps what it knew */ }
  }
  classEnded = !!klass && klass.state === 'ended';
  $('class-bar').hidden = false;
  const where = $('class-where');
  const results = `/class/${encodeURIComponent(c.id)}#${new URLSearchParams({ group: c.group, [controlToken ? 'control' : 'viewer']: token || '' })}`;
  where.innerHTML = `${esc(t('session.in_class', { name: klass ? klass.name : '', group: c.group }))} · <a href="${esc(results)}">${esc(t('session.class_results'))}</a>`;
  const spot = klass && klass.spotlight;
  let text = '', link = null;
  if (classEnded) text = t('session.class_ended');
  else if (classLocked) text = t('session.locked');
  else if (spot && spot.group === c.group) text = t('session.spotlight_yours');
  else if (spot) {
    text = t('session.spotlight_other', { group: spot.group });
    const f = new URLSearchParams({ class: c.id });
    if (spot.viewer_token) f.set('view', spot.viewer_token);
    link = `/s/${encodeURIComponent(spot.session)}#${f}`;
  }
  const banner = $('banner');
  banner.hidden = !text;
  banner.innerHTML = esc(text) + (link ? ` <a href="${esc(link)}">${esc(t('session.watch_them'))}</a>` : '');
  banner.dataset.kind = classEnded ? 'ended' : classLocked ? 'locked' : spot ? 'spotlight' : '';
  document.body.dataset.banner = banner.dataset.kind;
  controlsState();
}

async function refresh() {
  try {
    session = await api('GET', `/api/sessions/${id}`, undefined, token);
  } catch (e) {
    return;
  }
  showSettling();
  classBanner();
  $('viewers').textContent = session.viewers;
  $('state').textContent = t('session.state_rt', { state: t(`state.${session.state}`), rt: fmt(session.rt_factor, 2) });
  if (controlToken) {
    labelChoices();
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
  if (!id) { showError(t('session.no_id')); return; }
  const catalogue = await api('GET', '/api/scenes');
  measureInfo = Object.fromEntries(catalogue.measurements.map((m) => [m.name, { unit: m.unit, count: m.count }]));
  const actionInfo = Object.fromEntries(catalogue.actions.map((a) => [a.name, a]));
  session = await api('GET', `/api/sessions/${id}`, undefined, token);
  scene = catalogue.scenes.find((s) => s.name === session.scene);
  const model = catalogue.models.find((m) => m.name === scene.model) || { si: true };
  // model units (N-body, G = 1): no SI unit applies to any figure
  if (!model.si) for (const k of Object.keys(measureInfo)) measureInfo[k] = { ...measureInfo[k], unit: '' };
  $('title').textContent = `${sceneName(session.scene)}${session.label ? ' — ' + session.label : ''}`;
  // a group's session is its controller's to run; any other, whoever holds its control link's
  $('watching-note').textContent = t(session.class ? 'session.watching_note' : 'session.watching_note_link');
  $('join').textContent = session.join_code;
  $('viewer-link').value = `${location.origin}/s/${session.id}${viewToken ? '#view=' + viewToken : ''}`;
  document.title = t('session.title_of', { scene: sceneName(session.scene) });
  $('view').setAttribute('role', 'img');
  $('view').setAttribute('aria-label', sceneName(session.scene));
  view.setModel(scene.model);
  setupPlots();
  if (controlToken) { paramControls(); actionButtons(actionInfo); runControls(); }
  showSettling();
  snapshotButtons();
  link = await connect(session.id, {
    onOpen() { if (token) link.send({ type: 'auth', token }); }, // a private session shows nothing before
    onFrame(info, d) {
      if (info.kind === CHAINS) { chains = info; return; }
      frames++;
      playback.push(info, d);
      document.body.dataset.frames = frames;
    },
    onText(msg) {
      if (msg.type === 'measurements') {
        showMeasurements(msg.values, msg.state);
        addSample(msg);
        // settled since the last look: the controls need not wait for the next refresh
        if (msg.state !== 'settling' && session.settling_left > 0) refresh();
      }
      if (msg.type === 'event') {
        plotEvent(msg);
        if (msg.event === 'jam') message(t('session.jammed'));
        else if (msg.event === 'done' && msg.state === 'drained') message(t('session.drained'));
        else if (msg.event === 'run_started' && msg.scene !== scene.name) location.reload(); // another scene: its own page
        else if (msg.event === 'run_started') { clearPlots(); message(''); }
        else if (msg.event === 'session_failed') message(t('session.failed'));
        else if (msg.event === 'action' && msg.action && msg.action.type === 'open_hole') message('');
      }
      if (msg.type === 'error') showError(errorText(409, msg.error));
    },
    // 1001: the session ended; 1008: refused, with the server's reason; 1006 (no close from the
    // server) a cut stream: the node that ran it may have stopped, which the next refresh says
    onClose(ev) {
      if (ev.code === 1001) message(t('session.ended'));
      else if (ev.code === 1008) message(t('session.refused'));
      else if (ev.code === 1006) message(t('session.cut'));
    },
  });
  requestAnimationFrame(draw);
  setInterval(refresh, 1000);
  refresh();
}

start().catch(pageFailed);
