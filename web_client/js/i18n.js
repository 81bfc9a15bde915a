// The pages' words: one message catalogue per language (web_client/i18n/LANG.json), the language
// chosen by the header's switch (remembered in this browser) or else by the browser's own list.
// Every text a page shows comes from here: its HTML names keys (data-i18n…), its scripts call t().
export const LANGUAGES = { en: 'English', ja: '日本語' };
const STORE = 'grainlab.lang';

// The first of the browser's languages we have, by its primary subtag (ja-JP → ja); English else.
export function pickLanguage(stored, preferred) {
  if (stored && LANGUAGES[stored]) return stored;
  for (const l of preferred || []) {
    const primary = String(l).toLowerCase().split('-')[0];
    if (LANGUAGES[primary]) return primary;
  }
  return 'en';
}

function remembered() {
  try { return localStorage.getItem(STORE); } catch { return null; } // storage off: not remembered
}

export const lang = pickLanguage(remembered(), navigator.languages || [navigator.language]);
const messages = await fetch(`/i18n/${lang}.json`).then((r) => (r.ok ? r.json() : {})).catch(() => ({}));
const missing = new Set();

export function has(key) {
  return Object.prototype.hasOwnProperty.call(messages, key);
}

// The text for key, with {name} filled from vars. A key the catalogue lacks shows as itself (and
// is listed for tests in document.body.dataset.missingKeys): tests/unit/test_i18n.mjs keeps the
// catalogues complete, so users never see one.
export function t(key, vars = {}) {
  let text = messages[key];
  if (typeof text !== 'string') {
    missing.add(key);
    if (document.body) document.body.dataset.missingKeys = [...missing].join(' ');
    text = key;
  }
  return text.replace(/\{(\w+)\}/g, (m, k) => (Object.prototype.hasOwnProperty.call(vars, k) ? String(vars[k]) : m));
}

// t() of the first key the catalogue has: a specific text where one is written, a general one else
export function tFirst(keys, vars) {
  return t(keys.find(has) || keys[keys.length - 1], vars);
}

// A parameter's label with its unit ("sliding friction μ", "hole diameter (m)"), from the catalogue.
export function paramLabel(p) {
  const unit = p.unit ? unitText(p.unit) : '';
  return unit ? t('param.with_unit', { label: t(`param.${p.name}`), unit }) : t(`param.${p.name}`);
}

// A parameter with a grain count per setting (quality) is chosen from its counts, not slid:
// [value, words] for each, or null for any other parameter. The catalogue's counts are at the
// scene's defaults; `counts`, a session's quality_particles, are at its own amount.
export function paramChoices(scene, p, counts) {
  if (!Array.isArray(p.particles)) return null;
  const n = Array.isArray(counts) && counts.length === p.particles.length ? counts : p.particles;
  return n.map((k, q) => [p.min + q, t(`quality.${scene.model}`, { n: k, level: t(`quality.level.${q}`) })]);
}

// The field a teacher sets a parameter with, at its default: a quality chosen by its words, any
// other typed within its range (a whole number in steps of one).
export function paramInput(scene, p) {
  const choices = paramChoices(scene, p);
  if (!choices) {
    const input = document.createElement('input');
    return Object.assign(input, { type: 'number', min: p.min, max: p.max, step: p.integer ? 1 : 'any', value: p.default, required: true });
  }
  const select = document.createElement('select');
  for (const [value, words] of choices) select.add(new Option(words, String(value)));
  select.value = String(p.default);
  return select;
}

export function unitText(unit) {
  return unit ? t(`unit.${unit}`) : '';
}

// A measurement's label ("angle of repose"), and with its unit where it has one in SI.
export function measureLabel(name, unit) {
  const label = t(`measure.${name}`);
  return unit ? t('param.with_unit', { label, unit: unitText(unit) }) : label;
}

export function sceneName(name) {
  return t(`scene.${name}`);
}

// The HTML's keys: data-i18n (text), data-i18n-html (a catalogue text with markup of our own),
// and data-i18n-placeholder, -title, -aria-label for those attributes.
export function translate(root = document) {
  for (const el of root.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll('[data-i18n-html]')) el.innerHTML = t(el.dataset.i18nHtml);
  for (const attr of ['placeholder', 'title', 'aria-label']) {
    const data = 'i18n' + attr.replace(/(^|-)(\w)/g, (m, d, c) => c.toUpperCase());
    for (const el of root.querySelectorAll(`[data-i18n-${attr}]`)) el.setAttribute(attr, t(el.dataset[data]));
  }
}

// The switch in the page's header: the choice is kept and the page read again in it.
function languageSwitch() {
  const header = document.querySelector('header');
  if (!header || header.querySelector('.lang')) return;
  const select = document.createElement('select');
  select.className = 'lang';
  select.setAttribute('aria-label', t('common.language'));
  for (const [code, name] of Object.entries(LANGUAGES)) select.add(new Option(name, code, false, code === lang));
  select.addEventListener('change', () => {
    try { localStorage.setItem(STORE, select.value); } catch { /* not kept: this page only */ }
    location.reload();
  });
  header.appendChild(select);
}

document.documentElement.lang = lang;
translate();
languageSwitch();
