// The class page at /class/{id}. With #teacher=TOKEN: the teacher's dashboard (a live tile per
// group, the class controls, pushes and their report, the spotlight). With #group=NAME and
// &control= or &viewer=TOKEN (what /join leads to): a student's page (their group's experiment,
// the spotlight offer). Both show the class's results (js/class_results.js).
import { api, fmt, showError } from './api.js';
import { connect, CHAINS } from './stream.js';
import { Tile2D } from './tile.js';
import { ClassResults, liveSession } from './class_results.js';
import { EXPERIMENTS } from './theory.js';

const $ = (s) => document.getElementById(s);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const id = decodeURIComponent(location.pathname.split('/')[2] || '');
const fragment = new URLSearchParams(location.hash.slice(1));
const teacher = fragment.get('teacher');
const group = fragment.get('group');
const memberToken = fragment.get('control') || fragment.get('viewer');
const token = teacher || memberToken;
let catalogue = null, klass = null, results = null;
const TILE_FPS = 4; // frames per second a tile asks of its stream
window.grainlabTileFps = TILE_FPS; // for tests and scripting

function header() {
  $('name').textContent = klass.name;
  $('code').textContent = klass.code;
  $('state').textContent = klass.state + (klass.locked ? ' · locked' : '');
  document.title = `grainlab — ${klass.name}`;
  clock();
}

function clock() {
  if (!klass) return;
  if (klass.state === 'ended') { $('left').textContent = ''; return; } // the state says so
  const s = Math.max(0, Math.round((Date.parse(klass.ends_at) - Date.now()) / 1000));
  const hms = `${Math.floor(s / 3600)}:${String(Math.floor(s / 60) % 60).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
  $('left').textContent = `${hms} left`;
}

// ---- the teacher's tiles ---------------------------------------------------------------------
const tiles = new Map(); // group name -> {div, canvas, view, link, session, frames, skipped}
window.grainlabTiles = tiles; // for tests and scripting

function keyOf(scene) {
  // the scene's key figure (theory.js's table); any other scene: its first plotted measurement
  const exp = EXPERIMENTS[scene.name];
  if (exp && scene.measurements.includes(exp.key)) return exp.key;
  const p = (scene.plots || [])[0];
  return p && p.series.length ? p.series[0].key : null;
}

function openTile(g) {
  const div = document.createElement('div');
  div.className = 'tile';
  div.innerHTML = `<div class="tile-head"><label><input type="checkbox" class="pick"> <b></b></label><button class="spot">Spotlight</button></div>` +
    `<canvas width="240" height="160"></canvas><div class="tile-stats"></div>`;
  div.querySelector('b').textContent = g.name;
  div.dataset.group = g.name;
  $('tiles').appendChild(div);
  // frames: decoded and drawn; skipped: dropped undecoded (more than TILE_FPS came)
  const tile = { div, canvas: div.querySelector('canvas'), view: null, link: null, session: null, frames: 0, skipped: 0 };
  div.querySelector('.spot').addEventListener('click', () => {
    const spotlit = klass.spotlight && klass.spotlight.group === g.name;
    patch({ spotlight: spotlit ? null : g.name });
  });
  tiles.set(g.name, tile);
  return tile;
}

function closeTile(name) {
  const t = tiles.get(name);
  if (t.link) t.link.close();
  t.session = null; // a stream still connecting closes itself when it opens (stream())
  t.div.remove();
  tiles.delete(name);
}

// A fresh view for the tile's scene: its model's colours, its extent found anew.
function setView(tile, sceneName) {
  const scene = catalogue.scenes.find((c) => c.name === sceneName);
  tile.view = new Tile2D(tile.canvas, scene ? scene.model : 'granular');
  tile.scene = sceneName;
}

async function stream(tile, s, g) {
  setView(tile, s.scene);
  tile.session = s.id;
  tile.frames = 0;
  const link = await connect(s.id, {
    // connect() decodes at most TILE_FPS frames a second (and every keyframe); each is drawn
    onFrame(info, decoder) {
      if (info.kind === CHAINS) return;
      tile.frames++;
      tile.div.dataset.frames = tile.frames;
      tile.view.update(decoder, info.key);
    },
    onSkip() { tile.skipped++; tile.div.dataset.skipped = tile.skipped; },
    onText() {},
    // a stream lost while its session lives on is opened again at the next poll
    onClose() { if (tile.session === s.id) { tile.session = null; tile.link = null; } },
  }, { fps: TILE_FPS, token: g.viewer_token || undefined });
  if (tile.session !== s.id) { link.close(); return; } // replaced while connecting
  tile.link = link;
}

function tileStats(tile, g) {
  const s = g.session;
  const scene = catalogue.scenes.find((c) => c.name === s.scene) || { measurements: [], plots: [] };
  const key = keyOf(scene);
  const info = catalogue.measurements.find((m) => m.name === key);
  const model = catalogue.models.find((m) => m.name === scene.model) || { si: true };
  const unit = info && info.unit && model.si ? ` ${info.unit}` : '';
  const value = key && s.measurements ? s.measurements[key] : null;
  tile.div.querySelector('.tile-stats').innerHTML =
    `<span>${esc(s.scene)} · ${esc(s.state)}${s.measurements && s.measurements.state ? ` (${esc(s.measurements.state)})` : ''}</span>` +
    `<span>t ${fmt(s.t, 3)} s · rt ${fmt(s.rt_factor, 2)} · ${s.viewers} watching</span>` +
    (key ? `<span>${esc(info ? info.label : key)}: <b>${fmt(value)}</b>${esc(unit)}</span>` : '');
  const spotlit = klass.spotlight && klass.spotlight.group === g.name;
  tile.div.classList.toggle('spotlit', !!spotlit);
  tile.div.querySelector('.spot').textContent = spotlit ? 'Stop spotlight' : 'Spotlight';
}

function updateTiles() {
  const live = new Map(klass.groups.filter((g) => liveSession(g)).map((g) => [g.name, g]));
  for (const name of [...tiles.keys()]) if (!live.has(name)) closeTile(name);
  for (const [name, g] of live) {
    const tile = tiles.get(name) || openTile(g);
    if (tile.session !== g.session.id) {
      if (tile.link) { tile.link.close(); tile.link = null; }
      stream(tile, g.session, g).catch((e) => showError(`${name}: ${e.message}`));
    } else if (tile.scene !== g.session.scene) {
      setView(tile, g.session.scene); // the group switched scenes: same session, same stream
    }
    tileStats(tile, g);
  }
  document.body.dataset.tiles = tiles.size;
}

// ---- the teacher's controls ------------------------------------------------------------------
async function patch(body) {
  try {
    klass = await api('PATCH', `/api/classes/${id}`, body, teacher);
    render();
  } catch (e) { /* shown by api() */ }
}

function selected() {
  return [...tiles.entries()].filter(([, t]) => t.div.querySelector('.pick').checked).map(([name]) => name);
}

async function push(body) {
  if ($('push-to').value === 'selected') {
    body.groups = selected();
    if (body.groups.length === 0) { showError('no group selected: tick the groups on their tiles'); return; }
  }
  let report;
  try {
    report = await api('POST', `/api/classes/${id}/push`, body, teacher);
  } catch (e) {
    return;
  }
  const what = body.params ? Object.entries(body.params).map(([k, v]) => `${k} = ${v}`).join(', ') : body.action.type;
  $('report').innerHTML = `<b>${esc(what)}</b>: applied to ${report.applied.length ? report.applied.map(esc).join(', ') : 'no group'}` +
    (report.refused.length ? `; refused by ${report.refused.map((r) => `${esc(r.group)} (${esc(r.code)}: ${esc(r.message)})`).join('; ')}` : '');
  $('report').dataset.applied = report.applied.length;
  $('report').dataset.refused = report.refused.length;
}

// The push form: a parameter or an action of a scene, built from the catalogue.
function pushForm() {
  const sc = $('push-scene');
  sc.innerHTML = klass.scenes.map((s) => `<option>${esc(s)}</option>`).join('');
  const build = () => {
    const scene = catalogue.scenes.find((s) => s.name === sc.value);
    const box = $('push-what');
    if ($('push-kind').value === 'params') {
      box.innerHTML = `<select id="push-param">${scene.params.map((p) => `<option value="${p.name}">${p.name}${p.unit ? ` (${p.unit})` : ''}</option>`).join('')}</select>` +
        '<input id="push-value" type="number" required size="7">';
      const fill = () => {
        const p = scene.params.find((q) => q.name === $('push-param').value);
        Object.assign($('push-value'), { min: p.min, max: p.max, step: p.integer ? 1 : 'any', value: p.default, title: p.description });
      };
      $('push-param').addEventListener('change', fill);
      fill();
    } else {
      const names = [...scene.actions, ...catalogue.actions.filter((a) => a.session).map((a) => a.name)];
      box.innerHTML = `<select id="push-action">${names.map((n) => `<option>${n}</option>`).join('')}</select><span id="push-args"></span>`;
      const args = () => {
        const a = catalogue.actions.find((x) => x.name === $('push-action').value);
        $('push-args').innerHTML = (a ? a.args : []).map((g) => (g.type === 'boolean'
          ? `<label title="${esc(g.description)}"><input type="checkbox" data-arg="${g.name}" data-type="boolean"> ${g.name}</label>`
          : `<input type="number" data-arg="${g.name}" placeholder="${g.name}${g.unit ? ` (${g.unit})` : ''}" min="${g.min}" max="${g.max}" step="any" size="7"${g.required ? ' required' : ''} title="${esc(g.description)}">`)).join('');
      };
      $('push-action').addEventListener('change', args);
      args();
    }
  };
  sc.addEventListener('change', build);
  $('push-kind').addEventListener('change', build);
  build();
  $('push').addEventListener('submit', (e) => {
    e.preventDefault();
    if ($('push-kind').value === 'params') {
      push({ params: { [$('push-param').value]: Number($('push-value').value) } });
    } else {
      const action = { type: $('push-action').value };
      for (const input of $('push-args').querySelectorAll('[data-arg]')) {
        if (input.dataset.type === 'boolean') action[input.dataset.arg] = input.checked;
        else if (input.value !== '') action[input.dataset.arg] = Number(input.value);
      }
      push({ action });
    }
  });
}

function teacherControls() {
  $('pause-all').addEventListener('click', () => push({ action: { type: 'pause' } }));
  $('resume-all').addEventListener('click', () => push({ action: { type: 'resume' } }));
  $('lock').addEventListener('click', () => patch({ locked: !klass.locked }));
  $('second-join').addEventListener('change', () => patch({ second_join: $('second-join').value }));
  $('unspot').addEventListener('click', () => patch({ spotlight: null }));
  $('end').addEventListener('click', async () => {
    if (!window.confirm(`End the class “${klass.name}”? Every group's session ends and its run is recorded as finished.`)) return;
    try {
      klass = await api('POST', `/api/classes/${id}/end`, {}, teacher);
      render();
    } catch (e) { /* shown */ }
  });
  pushForm();
}

// ---- the student's page ----------------------------------------------------------------------
function student() {
  const g = klass.groups.find((x) => x.name === group);
  $('group').textContent = group || '—';
  const role = fragment.get('control') ? 'controller' : 'viewer';
  $('role').textContent = role;
  const link = $('session-link');
  if (g && liveSession(g)) {
    const tok = fragment.get('control') ? `#control=${fragment.get('control')}` : fragment.get('viewer') ? `#view=${fragment.get('viewer')}` : '';
    link.href = `/s/${g.session.id}${tok}`;
    link.textContent = "open your group's experiment";
  } else {
    link.removeAttribute('href');
    link.textContent = klass.state === 'ended' ? 'the class has ended' : 'your group has no session now: join again from /join';
  }
  const spot = klass.spotlight, offer = $('offer');
  if (spot && spot.group !== group) {
    offer.innerHTML = `The teacher spotlights <b>${esc(spot.group)}</b> — <a href="/s/${esc(spot.session)}${spot.viewer_token ? `#view=${esc(spot.viewer_token)}` : ''}">watch</a>`;
    offer.hidden = false;
  } else if (spot) {
    offer.textContent = 'The teacher spotlights your group: the class is watching.';
    offer.hidden = false;
  } else {
    offer.hidden = true;
  }
}

// ---- both --------------------------------------------------------------------------------------
function render() {
  header();
  if (teacher) {
    $('lock').textContent = klass.locked ? 'Unlock the groups' : 'Lock the groups';
    $('second-join').value = klass.second_join;
    $('unspot').hidden = !klass.spotlight;
    // an ended class takes no more commands (its results stay below)
    for (const b of document.querySelectorAll('#teacher button, #teacher select, #teacher input')) b.disabled = klass.state === 'ended';
    updateTiles();
  } else {
    student();
  }
}

let polls = 0, polling = false;
async function poll() {
  if (polling) return; // a slow answer: no second request on top of it
  polling = true;
  try {
    await pollOnce();
  } finally {
    polling = false;
  }
}
async function pollOnce() {
  try {
    klass = await api('GET', `/api/classes/${id}`, undefined, token);
  } catch (e) {
    return;
  }
  render();
  // the runs: every poll on a student's page (2 s), every other one on the teacher's (1 s)
  if (!teacher || polls++ % 2 === 0) await results.refresh(klass);
}

async function start() {
  if (!id) { showError('no class in the address'); return; }
  catalogue = await api('GET', '/api/scenes');
  klass = await api('GET', `/api/classes/${id}`, undefined, token);
  $(teacher ? 'teacher' : 'student').hidden = false;
  document.body.classList.add(teacher ? 'teacher' : 'student');
  // the runs of a private class are the teacher's: a student's own token is not sent with them
  results = new ClassResults($('results'), { classId: id, token: teacher, catalogue, scenes: klass.scenes, csvAllowed: !!teacher || !klass.private });
  if (teacher) teacherControls();
  render();
  await results.refresh(klass);
  setInterval(poll, teacher ? 1000 : 2000);
  setInterval(clock, 1000);
}

start().catch((e) => showError(e.message));
