// The teacher's form for a new class (POST /api/classes): its scenes and the one groups start in,
// each scene's settings (the catalogue's parameters, quality as grain counts), the end time from
// the teacher's clock, whether the groups start from one settled state or each from its own. The
// dashboard's link (its teacher token) is kept in this browser's list.
import { api, clearError, showError, studentsAddress } from './api.js';
import { paramInput, paramLabel, sceneName, t } from './i18n.js';

const $ = (id) => document.getElementById(id);
const MINE = 'grainlab.classes';
let catalogue = null;

function pad(n) { return String(n).padStart(2, '0'); }

// datetime-local wants local time without a zone
function localInput(date) {
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

// The link grainlabd prints on start carries the teacher token in its fragment (never sent to the
// server in a URL, never in its logs): the form then asks for nothing the teacher has not got.
function tokenFromLink() {
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  if (!token) return;
  $('token').value = token;
  $('token-row').hidden = true;
}

// ---- the classes this browser made, while they run ---------------------------------------------
function readMine() {
  try { return JSON.parse(localStorage.getItem(MINE) || '[]').filter((c) => Date.parse(c.ends_at) > Date.now()); } catch { return []; }
}

function remember(entry) {
  try { localStorage.setItem(MINE, JSON.stringify([entry, ...readMine()].slice(0, 20))); } catch { /* not kept */ }
}

function showMine() {
  const mine = readMine();
  $('mine').hidden = mine.length === 0;
  $('mine-list').replaceChildren(...mine.map((c) => {
    const li = document.createElement('li');
    const a = document.createElement('a');
    a.href = c.link;
    a.textContent = c.name;
    li.append(a, ` · ${t('teach.until', { time: new Date(c.ends_at).toLocaleString() })}`);
    return li;
  }));
}

// ---- the scenes and their settings -------------------------------------------------------------
const sceneOf = (name) => catalogue.scenes.find((s) => s.name === name);
const chosen = () => [...$('scenes').querySelectorAll('input:checked')].map((b) => b.value);

// One setting: quality as a choice of grain counts (the engine's, from the catalogue), any other
// parameter as a number within its range, starting at the scene's default.
function settingRow(scene, p) {
  const row = document.createElement('div');
  row.className = 'field';
  const id = `set-${scene.name}-${p.name}`;
  const label = document.createElement('label');
  label.htmlFor = id;
  label.textContent = paramLabel(p);
  const input = paramInput(scene, p);
  input.id = id;
  input.dataset.param = p.name;
  const hint = document.createElement('small');
  hint.className = 'hint';
  hint.textContent = t(`param.${p.name}.hint`);
  row.append(label, input, hint);
  return row;
}

function settings() {
  const open = new Set([...$('settings').querySelectorAll('details[open]')].map((d) => d.dataset.scene));
  const kept = new Map([...$('settings').querySelectorAll('[data-param]')].map((el) => [el.id, el.value]));
  $('settings').replaceChildren(...chosen().map((name) => {
    const scene = sceneOf(name);
    const box = document.createElement('details');
    box.className = 'card scene-settings';
    box.dataset.scene = name;
    box.open = open.has(name);
    const summary = document.createElement('summary');
    summary.textContent = t('teach.settings_for', { scene: sceneName(name) });
    box.append(summary, ...scene.params.map((p) => settingRow(scene, p)));
    for (const el of box.querySelectorAll('[data-param]')) if (kept.has(el.id)) el.value = kept.get(el.id);
    return box;
  }));
  const first = $('first').value;
  $('first').replaceChildren(...chosen().map((name) => new Option(sceneName(name), name)));
  if (chosen().includes(first)) $('first').value = first;
}

// the settings that differ from the scene's defaults, per scene
function defaults() {
  const out = {};
  for (const box of $('settings').querySelectorAll('details')) {
    const scene = sceneOf(box.dataset.scene);
    for (const el of box.querySelectorAll('[data-param]')) {
      const p = scene.params.find((q) => q.name === el.dataset.param);
      const v = Number(el.value);
      if (el.value !== '' && v !== p.default) (out[scene.name] ||= {})[p.name] = v;
    }
  }
  return out;
}

// ---- a refusal points at what it refuses --------------------------------------------------------
const FIELDS = { name: 'name', scenes: 'scenes-field', max_groups: 'groups', grain_budget: 'budget', ends_at: 'ends', second_join: 'second', seeds: 'seeds' };

function markInvalid(field) {
  const [top, scene] = String(field || '').split('.');
  mark(top === 'defaults' && scene ? $('settings').querySelector(`details[data-scene="${CSS.escape(scene)}"]`) : $(FIELDS[top]));
}

function mark(el) {
  for (const e of document.querySelectorAll('[aria-invalid]')) e.removeAttribute('aria-invalid');
  if (!el) return;
  el.setAttribute('aria-invalid', 'true');
  const box = el.closest('details');
  if (box) box.open = true;
  el.scrollIntoView({ block: 'center' });
  if (el.focus) el.focus();
}

// A number the form can judge itself is judged before sending, its range in the words (the
// server's refusal can only say it is outside what is allowed): the first such field, or null.
function badNumber() {
  for (const el of $('create').querySelectorAll('input[type=number]')) {
    if (el.checkValidity()) continue;
    const field = document.querySelector(`label[for="${CSS.escape(el.id)}"]`)?.textContent.trim() || el.id;
    const range = { field, min: el.min, max: el.max };
    const text = el.step === '1' ? t('teach.range_whole', range) : t('teach.range', range);
    return { el, text };
  }
  return null;
}

// One class per press, however the teacher presses: a double click, or presses while the page
// still loads, make one. A press before the scenes and limits have come waits for them (before
// this listener, the form went natively, reloading the page without its token).
let sending = false;
async function submit(ev) {
  ev.preventDefault();
  if (sending) return;
  sending = true;
  $('start').disabled = true;
  try {
    if (await ready.catch(() => false)) await send();
  } finally {
    sending = false;
    $('start').disabled = false;
  }
}

async function send() {
  clearError();
  const scenes = chosen();
  if (scenes.length === 0) { showError(t('teach.no_scene')); markInvalid('scenes'); return; }
  const bad = badNumber();
  if (bad) { showError(bad.text); mark(bad.el); return; }
  const ends = new Date($('ends').value);
  if (Number.isNaN(ends.getTime())) { showError(t('teach.bad_time')); markInvalid('ends_at'); return; }
  const first = $('first').value;
  const body = {
    name: $('name').value.trim(),
    // the class's first scene is where its groups start
    scenes: [first, ...scenes.filter((s) => s !== first)],
    defaults: defaults(),
    max_groups: Number($('groups').value),
    grain_budget: Number($('budget').value),
    ends_at: ends.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    private: $('private').checked,
    second_join: $('second').value,
    // shared: the groups' worlds are one settled state, kept once (issue 33); own: group k gets
    // seed k and settles its own grains
    seeds: $('seeds').value,
  };
  let made;
  try {
    made = await api('POST', '/api/classes', body, $('token').value);
  } catch (e) {
    markInvalid(e.code === 'unauthorized' || e.code === 'forbidden' ? null : e.field);
    if (e.code === 'unauthorized' || e.code === 'forbidden') { $('token-row').hidden = false; $('token').focus(); }
    return;
  }
  clearError();
  const link = `${location.origin}/class/${made.id}#teacher=${made.teacher_token}`;
  remember({ id: made.id, name: made.name, link, ends_at: made.ends_at });
  $('join-url').textContent = await studentsAddress();
  $('code').textContent = made.code;
  $('dashboard').href = link;
  $('made').hidden = false;
  $('create').hidden = true;
  $('mine').hidden = true;
  document.body.dataset.classId = made.id;
  $('dashboard').focus();
}

async function load() {
  tokenFromLink();
  showMine();
  catalogue = await api('GET', '/api/scenes');
  for (const s of catalogue.scenes) {
    const label = document.createElement('label');
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.value = s.name;
    box.checked = s.name === 'pour' || s.name === 'silo';
    box.dataset.scene = s.name;
    box.addEventListener('change', settings);
    label.append(box, ` ${sceneName(s.name)}`);
    $('scenes').append(label);
  }
  settings();
  // the largest class and group the server takes, so the form can say so before it sends
  const config = await api('GET', '/api/config');
  $('groups').max = config.class_groups_max;
  $('budget').max = config.max_grains;
  $('ends').value = localInput(new Date(Date.now() + 2 * 3600 * 1000));
  return true;
}

const ready = load();
ready.catch(() => {}); // shown by api()
$('create').addEventListener('submit', submit);
