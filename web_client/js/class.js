// The class page at /class/{id}. With #teacher=TOKEN: the teacher's dashboard (a live tile per
// group, the class controls, pushes and their report, the spotlight). With #group=NAME and
// &control= or &viewer=TOKEN (what /join leads to): a student's page (their group's experiment,
// the spotlight offer). Both show the class's results (js/class_results.js).
import qrcode from 'qrcode-generator';
import { api, errorText, esc, fmt, pageFailed, paramValue, showError, studentsAddress } from './api.js';
import { measureLabel, paramInput, paramLabel, sceneName, t, unitText } from './i18n.js';
import { CHAINS, connectClass, frames } from './stream.js';
import { Tile2D } from './tile.js';
import { ClassResults, liveSession } from './class_results.js';
import { keyFigure } from './theory.js';

const $ = (s) => document.getElementById(s);
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
  $('state').textContent = t(`class.state.${klass.state}`) + (klass.locked ? ` · ${t('class.locked')}` : '');
  document.title = t('class.title_of', { name: klass.name });
  clock();
}

// Where and how students join, large enough to read from the back of the room, with a QR code of
// the join page's address carrying the code (/join?code=…) for their phones.
let joinShown = null;
async function joining() {
  const address = await studentsAddress();
  const url = `${address}?code=${encodeURIComponent(klass.code)}`;
  $('join-address').textContent = address;
  if (joinShown === url) return;
  joinShown = url;
  const qr = qrcode(0, 'M');
  qr.addData(url);
  qr.make();
  $('qr').innerHTML = qr.createSvgTag({ cellSize: 4, margin: 16, scalable: true });
  $('qr').setAttribute('aria-label', t('class.qr_alt', { address: url }));
  $('qr').dataset.url = url;
}

function clock() {
  if (!klass) return;
  if (klass.state === 'ended') { $('left').textContent = ''; return; } // the state says so
  const s = Math.max(0, Math.round((Date.parse(klass.ends_at) - Date.now()) / 1000));
  const hms = `${Math.floor(s / 3600)}:${String(Math.floor(s / 60) % 60).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
  $('left').textContent = t('class.left', { time: hms });
}

// ---- the teacher's tiles ---------------------------------------------------------------------
const tiles = new Map(); // group name -> {div, canvas, view, session, frames}
window.grainlabTiles = tiles; // for tests and scripting
// Every tile's frames come over one websocket, the class's stream (schema/stream.md): a class
// behind one school address would otherwise spend a connection per group of its per-address
// limit. Each frame is handed to the tile of its session.
const bySession = new Map(); // session id -> that tile's frames()
let classLink = null; // the class stream: null, 'opening', or open
async function openClassStream() {
  if (classLink) return;
  classLink = 'opening';
  try {
    classLink = await connectClass(id, teacher, TILE_FPS, {
      onFrame(sid, data) { const f = bySession.get(sid); if (f) f(data); },
      onClose() { classLink = null; }, // opened again at the next poll
    });
  } catch (e) {
    classLink = null;
    throw e;
  }
}

function openTile(g) {
  const div = document.createElement('div');
  div.className = 'tile';
  div.innerHTML = '<div class="tile-head"><label><input type="checkbox" class="pick"> <b></b></label><button class="spot"></button></div>' +
    '<canvas width="240" height="160" role="img"></canvas><div class="tile-stats"></div>';
  div.querySelector('b').textContent = g.name;
  div.querySelector('.pick').setAttribute('aria-label', t('class.pick', { group: g.name }));
  div.dataset.group = g.name;
  $('tiles').appendChild(div);
  // frames: decoded and drawn
  const tile = { div, canvas: div.querySelector('canvas'), view: null, session: null, frames: 0 };
  div.querySelector('.spot').addEventListener('click', () => {
    const spotlit = klass.spotlight && klass.spotlight.group === g.name;
    patch({ spotlight: spotlit ? null : g.name });
  });
  tiles.set(g.name, tile);
  return tile;
}

function closeTile(name) {
  const t = tiles.get(name);
  bySession.delete(t.session);
  t.div.remove();
  tiles.delete(name);
}

// A fresh view for the tile's scene: its model's colours, its extent found anew.
function setView(tile, sceneName) {
  const scene = catalogue.scenes.find((c) => c.name === sceneName);
  tile.view = new Tile2D(tile.canvas, scene ? scene.model : 'granular');
  tile.scene = sceneName;
}

// The tile shows session s from now on: every frame the class stream brings is decoded and
// drawn (the server keeps each group to TILE_FPS a second).
function stream(tile, s) {
  bySession.delete(tile.session);
  setView(tile, s.scene);
  tile.session = s.id;
  tile.frames = 0;
  bySession.set(s.id, frames({
    onFrame(info, decoder) {
      if (info.kind === CHAINS) return;
      tile.frames++;
      tile.div.dataset.frames = tile.frames;
      tile.view.update(decoder, info.key);
    },
  }));
}

function tileStats(tile, g) {
  const s = g.session;
  const scene = catalogue.scenes.find((c) => c.name === s.scene) || { measurements: [], plots: [] };
  const key = keyFigure(scene);
  const info = catalogue.measurements.find((m) => m.name === key);
  const model = catalogue.models.find((m) => m.name === scene.model) || { si: true };
  const unit = info && info.unit && model.si ? unitText(info.unit) : '';
  const value = key && s.measurements ? s.measurements[key] : null;
  // the scene's own state where it adds to the session's ("running (flowing)"), not "at rest (at rest)"
  const own = s.measurements && s.measurements.state ? t(`mstate.${s.measurements.state}`) : '';
  const mstate = own && own !== t(`state.${s.state}`) ? ` (${own})` : '';
  const figure = key ? t('class.tile_figure', { what: measureLabel(key), value: fmt(value), unit }) : '';
  tile.div.querySelector('.tile-stats').innerHTML =
    `<span>${esc(sceneName(s.scene))} · ${esc(t(`state.${s.state}`))}${esc(mstate)}</span>` +
    `<span>${esc(t('class.tile_clock', { t: fmt(s.t, 3), rt: fmt(s.rt_factor, 2), viewers: s.viewers }))}</span>` +
    (key ? `<span>${esc(figure)}</span>` : '');
  // the canvas's text: what it shows and the live key figure
  tile.canvas.setAttribute('aria-label', t('class.tile_alt', { group: g.name, scene: sceneName(s.scene), figure }));
  const spotlit = klass.spotlight && klass.spotlight.group === g.name;
  tile.div.classList.toggle('spotlit', !!spotlit);
  tile.div.querySelector('.spot').textContent = spotlit ? t('class.unspot') : t('class.spot');
}

function updateTiles() {
  const live = new Map(klass.groups.filter((g) => liveSession(g)).map((g) => [g.name, g]));
  for (const name of [...tiles.keys()]) if (!live.has(name)) closeTile(name);
  for (const [name, g] of live) {
    const tile = tiles.get(name) || openTile(g);
    if (tile.session !== g.session.id) {
      stream(tile, g.session);
    } else if (tile.scene !== g.session.scene) {
      setView(tile, g.session.scene); // the group switched scenes: same session, same stream
    }
    tileStats(tile, g);
  }
  document.body.dataset.tiles = tiles.size;
  if (tiles.size > 0) openClassStream().catch(() => showError(t('class.stream_failed')));
  else if (classLink && classLink !== 'opening') classLink.close();
  $('no-groups').hidden = tiles.size > 0 || klass.state === 'ended';
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

// One push per press: a double click pushed twice (a second Reset to every group, or the hole
// opened, then a report of every group refusing to open it again).
let pushing = false;
async function push(body) {
  if (pushing) return;
  if ($('push-to').value === 'selected') {
    body.groups = selected();
    if (body.groups.length === 0) { showError(t('class.none_selected')); return; }
  }
  const button = $('push').querySelector('button');
  let report;
  pushing = button.disabled = true;
  try {
    report = await api('POST', `/api/classes/${id}/push`, body, teacher);
  } catch (e) {
    return;
  } finally {
    pushing = button.disabled = false;
  }
  const scene = catalogue.scenes.find((c) => c.name === $('push-scene').value);
  const what = body.params
    ? Object.entries(body.params).map(([k, v]) => { const p = scene.params.find((q) => q.name === k); return `${paramLabel(p)} = ${paramValue(p, v)}`; }).join(', ')
    : t(`action.${body.action.type}`);
  const applied = report.applied.length ? report.applied.join(', ') : t('class.no_group');
  $('report').innerHTML = `<b>${esc(what)}</b>: ${esc(t('class.applied', { groups: applied }))}` +
    report.refused.map((r) => `<br>${esc(t('class.refused', { group: r.group, why: errorText(r.status, r) }))}`).join('');
  $('report').dataset.applied = report.applied.length;
  $('report').dataset.refused = report.refused.length;
}

// The push form: a parameter or an action of a scene, built from the catalogue. A parameter
// fixed when the scene is built restarts each group's scene with it; drags (spout, tool) are a
// student's, not pushed.
const NOT_PUSHED = new Set(['spout', 'tool', 'tool_off']);
function pushForm() {
  const sc = $('push-scene');
  sc.replaceChildren(...klass.scenes.map((s) => new Option(sceneName(s), s)));
  const labelled = (text, el) => {
    const label = document.createElement('label');
    label.append(text, ' ', el);
    return label;
  };
  const build = () => {
    const scene = catalogue.scenes.find((s) => s.name === sc.value);
    const box = $('push-what');
    if ($('push-kind').value === 'params') {
      const param = document.createElement('select');
      param.id = 'push-param';
      for (const p of scene.params) param.add(new Option(paramLabel(p) + (p.restart ? ` ${t('class.restarts')}` : ''), p.name));
      // the value's field as the class's own form has it: a quality by its words, else a number
      const valueLabel = labelled(t('class.push_value'), document.createElement('input'));
      box.replaceChildren(labelled(t('class.push_which'), param), valueLabel);
      const fill = () => {
        const value = paramInput(scene, scene.params.find((q) => q.name === param.value));
        value.id = 'push-value';
        if (value.tagName === 'INPUT') value.size = 7;
        valueLabel.lastChild.replaceWith(value);
      };
      param.addEventListener('change', fill);
      fill();
    } else {
      const names = [...scene.actions.filter((n) => !NOT_PUSHED.has(n)), 'pause', 'resume'];
      const action = document.createElement('select');
      action.id = 'push-action';
      for (const n of names) action.add(new Option(t(`action.${n}`), n));
      const args = document.createElement('span');
      args.id = 'push-args';
      args.className = 'row';
      box.replaceChildren(labelled(t('class.push_which_action'), action), args);
      const fill = () => {
        const a = catalogue.actions.find((x) => x.name === action.value);
        args.replaceChildren(...(a ? a.args : []).map((g) => {
          const input = document.createElement('input');
          input.dataset.arg = g.name;
          if (g.type === 'boolean') {
            Object.assign(input, { type: 'checkbox' });
            input.dataset.type = 'boolean';
          } else {
            Object.assign(input, { type: 'number', min: g.min, max: g.max, step: 'any', size: 7, required: !!g.required });
          }
          return labelled(t(`arg.${g.name}`) + (g.unit ? ` (${unitText(g.unit)})` : ''), input);
        }));
      };
      action.addEventListener('change', fill);
      fill();
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
  // the join panel as large as the screen allows, for a projector
  $('show-join').addEventListener('click', () => {
    const big = document.body.classList.toggle('show-join');
    $('show-join').textContent = t(big ? 'class.hide_join' : 'class.show_join');
  });
  $('end').addEventListener('click', async () => {
    if (!window.confirm(t('class.end_confirm', { name: klass.name }))) return;
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
  $('role').textContent = t(fragment.get('control') ? 'role.controller' : 'role.viewer');
  const link = $('session-link');
  if (g && liveSession(g)) {
    link.href = experimentLink(g.session.id, fragment.get('control') ? 'control' : 'view', fragment.get('control') || fragment.get('viewer'));
    link.textContent = t('class.open_experiment');
  } else {
    link.removeAttribute('href');
    link.textContent = t(klass.state === 'ended' ? 'class.ended_note' : 'class.no_session');
  }
  const spot = klass.spotlight, offer = $('offer');
  if (spot && spot.group !== group) {
    offer.innerHTML = `${esc(t('class.spotlight_other', { group: spot.group }))} <a href="${esc(experimentLink(spot.session, 'view', spot.viewer_token))}">${esc(t('class.watch'))}</a>`;
    offer.hidden = false;
  } else if (spot) {
    offer.textContent = t('class.spotlight_yours');
    offer.hidden = false;
  } else {
    offer.hidden = true;
  }
}

// A group's experiment page: its token (control or view) in the fragment, with the class and
// group the page shows in its banner.
function experimentLink(session, kind, tok) {
  const f = new URLSearchParams();
  if (tok) f.set(kind, tok);
  f.set('class', id);
  if (group) f.set('group', group);
  return `/s/${encodeURIComponent(session)}#${f.toString()}`;
}

// ---- both --------------------------------------------------------------------------------------
function render() {
  header();
  if (teacher) {
    $('lock').textContent = t(klass.locked ? 'class.unlock' : 'class.lock');
    // the code at once: the address beside it waits on a request, the code need not
    $('code').textContent = klass.code;
    joining();
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
  if (!id) { showError(t('class.no_id')); return; }
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

start().catch(pageFailed);
