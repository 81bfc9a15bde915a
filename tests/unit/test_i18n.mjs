// The message catalogues (web_client/i18n/LANG.json) are complete: every language has every key,
// with the same {placeholders}; every key a page's HTML or script names is there; and every name
// the pages show from the scene catalogue (scenes, parameters, units, measurements, states,
// actions, plots, models), from the OpenAPI (session states, how a run ended) and every error
// code the server can answer has its text. A missing key would show as the key itself.
// Usage: node test_i18n.mjs GRAINLAB SOURCE_DIR   (the CLI, for the catalogue: grainlab scenes)
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const [exe, src] = process.argv.slice(2);
if (!exe || !src) {
  console.error('usage: node test_i18n.mjs GRAINLAB SOURCE_DIR');
  process.exit(2);
}
let fail = 0;
function check(name, cond, detail = '') {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}`);
  if (!cond) fail++;
}

const client = join(src, 'web_client');
const langs = readdirSync(join(client, 'i18n')).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5)).sort();
const cat = Object.fromEntries(langs.map((l) => [l, JSON.parse(readFileSync(join(client, 'i18n', `${l}.json`), 'utf8'))]));
check('two languages: English and Japanese', langs.join(' ') === 'en ja', langs.join(' '));

// ---- the same keys and placeholders in every language ------------------------------------------
const holes = (s) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort().join(',');
const all = new Set(langs.flatMap((l) => Object.keys(cat[l])));
for (const l of langs) {
  const lacking = [...all].filter((k) => typeof cat[l][k] !== 'string' || cat[l][k].trim() === '');
  check(`${l}: every key has a text`, lacking.length === 0, lacking.slice(0, 20).join(' '));
  const wrong = [...all].filter((k) => typeof cat[l][k] === 'string' && holes(cat[l][k]) !== holes(cat.en[k] || ''));
  check(`${l}: placeholders as English has them`, wrong.length === 0, wrong.slice(0, 20).join(' '));
}
// the Japanese catalogue is Japanese: most of its texts hold kana or kanji
const japanese = Object.values(cat.ja).filter((s) => /[\u3040-\u30ff\u4e00-\u9fff]/.test(s)).length;
check('ja: the texts are in Japanese', japanese > 0.8 * Object.keys(cat.ja).length, `${japanese} of ${Object.keys(cat.ja).length}`);

// ---- every key the pages name ------------------------------------------------------------------
const need = new Map(); // key -> where it is named
const want = (key, where) => { if (!need.has(key)) need.set(key, where); };
for (const f of readdirSync(client).filter((n) => n.endsWith('.html'))) {
  const text = readFileSync(join(client, f), 'utf8');
  for (const m of text.matchAll(/data-i18n(?:-[a-z-]+)?="([^"]+)"/g)) want(m[1], f);
  // no words outside the catalogue: an element's own text is empty or grainlab's name
  const words = text.replace(/<(script|style)[\s\S]*?<\/\1>/g, '').replace(/<[^>]+>/g, ' ').replace(/&[a-z]+;|[×↻·()—\s]/g, ' ')
    .split(/\s+/).filter((w) => /[A-Za-z]{2}/.test(w) && w !== 'grainlab');
  check(`${f}: every word comes from the catalogues`, words.length === 0, words.slice(0, 10).join(' '));
}
const js = join(client, 'js');
for (const f of readdirSync(js).filter((n) => n.endsWith('.js'))) {
  const text = readFileSync(join(js, f), 'utf8');
  for (const m of text.matchAll(/\bt\(\s*'([a-z0-9_.]+)'/g)) want(m[1], f);
  // t(cond ? 'one' : 'other')
  for (const m of text.matchAll(/\bt\([^()]*?\?\s*'([a-z0-9_.]+)'\s*:\s*'([a-z0-9_.]+)'/g)) { want(m[1], f); want(m[2], f); }
  for (const m of text.matchAll(/'(error\.[a-z_]+)'/g)) want(m[1], f);
  // the laws' and figures' names (js/theory.js) look up law.NAME and figure.NAME
  for (const m of text.matchAll(/\b(?:lawName|name): '([a-z]+)'/g)) if (f === 'theory.js') want(`law.${m[1]}`, f);
  for (const m of text.matchAll(/\by: '([a-z_]+)'/g)) if (f === 'theory.js') want(`figure.${m[1]}`, f);
}

// ---- every name the pages look up --------------------------------------------------------------
const catalogue = JSON.parse(execFileSync(exe, ['scenes'], { encoding: 'utf8' }));
const units = new Set();
for (const s of catalogue.scenes) {
  want(`scene.${s.name}`, 'catalogue');
  want(`scene.${s.name}.about`, 'catalogue');
  s.plots.forEach((p, k) => want(`plot.${s.name}.${k}`, 'catalogue'));
  for (const p of s.params) {
    want(`param.${p.name}`, 'catalogue');
    want(`param.${p.name}.hint`, 'catalogue');
    if (p.unit) units.add(p.unit);
    if (p.particles) {
      want(`quality.${s.model}`, 'catalogue');
      p.particles.forEach((n, q) => want(`quality.level.${q}`, 'catalogue'));
    }
  }
}
for (const m of catalogue.models) want(`particles.${m.name}`, 'catalogue');
for (const m of catalogue.measurements) {
  want(`measure.${m.name}`, 'catalogue');
  if (m.unit) units.add(m.unit);
}
for (const st of catalogue.states) want(`mstate.${st}`, 'catalogue');
for (const a of catalogue.actions) {
  want(`action.${a.name}`, 'catalogue');
  const required = a.args.filter((g) => g.required);
  if (['spout', 'tool'].includes(a.name)) want(`action.${a.name}.drag`, 'catalogue');
  if (required.length === 1 && required[0].type === 'boolean') {
    want(`action.${a.name}.on`, 'catalogue');
    want(`action.${a.name}.off`, 'catalogue');
  }
  for (const g of a.args) {
    want(`arg.${g.name}`, 'catalogue');
    if (g.unit) units.add(g.unit);
  }
}
for (const u of units) want(`unit.${u}`, 'catalogue');

// the OpenAPI's session states and the ways a run ends
const openapi = readFileSync(join(src, 'schema', 'openapi.yaml'), 'utf8');
// a field's enum in the OpenAPI, the one that holds `member` (several objects have a "state")
const enumOf = (field, member) => {
  for (const m of openapi.matchAll(new RegExp(`\\b${field}: \\{type: [^\\n]*enum: \\[([^\\]]+)\\]`, 'g'))) {
    const values = m[1].split(',').map((x) => x.trim()).filter((x) => x !== 'null');
    if (values.includes(member)) return values;
  }
  return [];
};
const sessionStates = enumOf('state', 'running');
const endReasons = enumOf('end_reason', 'switched');
check('the OpenAPI lists session states and end reasons', sessionStates.length >= 5 && endReasons.length >= 8, `${sessionStates} | ${endReasons}`);
for (const st of sessionStates) want(`state.${st}`, 'openapi');
for (const r of [...endReasons, 'running']) want(`end.${r}`, 'openapi');
for (const st of ['open', 'ended']) want(`class.state.${st}`, 'class.c');

// every error code the server answers with
const codes = new Set();
const walk = (dir) => readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? walk(join(dir, n)) : [join(dir, n)]));
for (const f of walk(join(src, 'server')).filter((n) => n.endsWith('.c'))) {
  const text = readFileSync(f, 'utf8');
  // the HTTP layer's own refusals, the store's, and the one table of every other kind (api_error.c)
  const calls = /\b(?:http_error\(\s*\d+,|store__fail\(\s*\w+,\s*\w+,|http_too_many\(|reject\(\s*\w+,\s*\w+,)\s*"([a-z]+(?:_[a-z]+)*)"/g;
  for (const m of text.matchAll(calls)) codes.add(m[1]);
  for (const m of text.matchAll(/\[API_E_\w+\] = \{"([a-z_]+)", \d+\}/g)) codes.add(m[1]);
}
// and those the cluster's nginx answers for a node that is down (deploy/*.conf)
for (const f of readdirSync(join(src, 'deploy')).filter((n) => n.endsWith('.conf'))) {
  for (const m of readFileSync(join(src, 'deploy', f), 'utf8').matchAll(/"code":"([a-z_]+)"/g)) codes.add(m[1]);
}
check('the server\'s error codes are found', codes.has('settling') && codes.has('class_full') && codes.has('too_many_guesses') && codes.has('node_unavailable') && codes.size > 50, `${codes.size} codes`);
for (const c of codes) want(`error.${c}`, 'server');

for (const l of langs) {
  const lacking = [...need].filter(([k]) => typeof cat[l][k] !== 'string');
  check(`${l}: every key named is there (${need.size} keys)`, lacking.length === 0, lacking.slice(0, process.env.ALL_KEYS ? 10000 : 30).map(([k, w]) => `${k} (${w})`).join(' '));
}
// and nothing the pages never name stays behind unnoticed
const unused = [...all].filter((k) => !need.has(k) && !/^(error|param|measure|unit|scene|plot|action|arg|state|mstate|end|quality|particles|law|figure|field)\./.test(k));
check('every key is named by a page', unused.length === 0, unused.slice(0, 20).join(' '));

process.exit(fail ? 1 : 0);
