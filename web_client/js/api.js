// The REST API from the browser: JSON in and out, errors shown to the user, never swallowed.
import { has, t, tFirst } from './i18n.js';

export function showError(message) {
  const box = document.getElementById('error');
  if (!box) return;
  box.textContent = message;
  box.style.display = 'block';
  clearTimeout(showError.timer);
  showError.timer = setTimeout(() => { box.style.display = 'none'; }, 8000);
}

// A message that no longer holds (the thing it refused has since worked) leaves the screen.
export function clearError() {
  const box = document.getElementById('error');
  if (box) box.style.display = 'none';
  clearTimeout(showError.timer);
}

// A refusal in the page's language and in plain words: the catalogue's text for its code (and,
// where one is written, for its code and field), the field named as the page labels it. The
// server's own message is English and for developers: it goes to the console, not the screen.
export function errorText(status, err) {
  if (!err || !err.code) return t('error.status', { status });
  console.info(`${status} ${err.code}${err.field ? ` (${err.field})` : ''}: ${err.message}`);
  const field = err.field && has(`field.${err.field}`) ? t(`field.${err.field}`)
    : err.field && has(`param.${err.field}`) ? t(`param.${err.field}`) : '';
  const vars = { field, status, seconds: Math.ceil(err.seconds_left || 0) };
  return tFirst([`error.${err.code}.${err.field}`, ...(field ? [`error.${err.code}.field`] : []), `error.${err.code}`, 'error.other'], vars);
}

export async function api(method, path, body, token) {
  const headers = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (token) headers['Authorization'] = 'Bearer ' + token;
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    showError(t('error.unreachable'));
    e.shown = true;
    throw e;
  }
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { /* not JSON: reported below */ }
  if (!response.ok) {
    const err = json && json.error;
    const message = errorText(response.status, err);
    showError(message);
    const e = new Error(message);
    e.status = response.status;
    e.code = err && err.code;
    e.field = err && err.field;
    e.shown = true;
    throw e;
  }
  return json;
}

// A file from the API saved by the browser: fetched with the token (a private session's needs
// its header, which a plain link cannot carry), named as the server's Content-Disposition says.
export async function download(path, token, fallbackName) {
  const headers = token ? { Authorization: 'Bearer ' + token } : {};
  let response;
  try {
    response = await fetch(path, { headers });
  } catch (e) {
    showError(t('error.unreachable'));
    e.shown = true;
    throw e;
  }
  if (!response.ok) {
    const text = await response.text();
    let err = null;
    try { err = JSON.parse(text).error; } catch { /* not JSON: its status is said */ }
    const message = errorText(response.status, err);
    showError(message);
    throw Object.assign(new Error(message), { shown: true });
  }
  const named = /filename="([^"]+)"/.exec(response.headers.get('Content-Disposition') || '');
  const url = URL.createObjectURL(await response.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = named ? named[1] : fallbackName;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
  return a.download;
}

// A page's start or handler failed: a refusal was shown already (api() and download() show
// theirs); anything else is a fault of the page, said in plain words (details in the console).
export function pageFailed(e) {
  if (e && e.shown) return;
  console.error(e);
  showError(t('error.page'));
}

// Where students join: this page's own address, unless it is this machine's loopback and the
// server, serving a classroom, names the address its network reaches (GET /api/config).
export async function studentsAddress() {
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(location.hostname);
  if (loopback) {
    const config = await fetch('/api/config').then((r) => r.json()).catch(() => ({}));
    if (config.students) return config.students;
  }
  return `${location.origin}/join`;
}

// A table read as cards on a phone (app.css, table.stacked): each cell is labelled with its
// column's heading, which the narrow layout shows above it in place of the hidden header row.
export function labelCells(table) {
  // a column whose heading is for screen readers only (a link that says what it does) gets none
  const heads = [...table.querySelectorAll('thead th')].map((th) => (th.querySelector('.sr-only') ? '' : th.textContent.trim()));
  for (const row of table.tBodies[0]?.rows || []) {
    [...row.cells].forEach((td, i) => { if (heads[i]) td.dataset.label = heads[i]; });
  }
}

// Text for innerHTML: every character that could open markup or end an attribute, escaped.
export const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function fmt(v, digits = 3) {
  if (v === null || v === undefined || Number.isNaN(v)) return '—';
  if (typeof v !== 'number') return String(v);
  return Math.abs(v) >= 1000 ? v.toFixed(0) : v.toPrecision(digits);
}

// A measurement's value as the pages show it (m from the catalogue's measurements): a count of
// things whole ("2" bodies, not "2.00"), any other with fmt's digits.
export function measureValue(m, v) {
  return m && m.count && Number.isInteger(v) ? String(v) : fmt(v);
}

// A parameter's value as the pages show it beside its label (p from the catalogue; undefined for
// a name it does not know): a quality by its level's word, since the grains it starts depends on
// the amount beside it; a whole number whole (not "2.00"); any other with fmt's digits.
export function paramValue(p, v) {
  const level = p && Array.isArray(p.particles) ? v - p.min : -1;
  if (Number.isInteger(level) && level >= 0 && level < p.particles.length) return t(`quality.level.${level}`);
  return p && p.integer && Number.isInteger(v) ? String(v) : fmt(v);
}
