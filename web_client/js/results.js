// The results page: stored runs with filters, a row per stretch of constant parameters of each
// (what the CSV of GET /api/runs gives), each run's CSV and snapshot, and one plot of a chosen
// scene's finished runs against its law across the parameter's whole catalogue range
// (js/law_plot.js, the class dashboard's plot: silo flow against Beverloo, piles against Coulomb
// and our own sweep, the slump's runout against Lube et al., N-body drift against the leapfrog's
// fit), each point a row of the table.
import { api, esc, fmt, labelCells, measureValue, pageFailed, paramValue } from './api.js';
import { measureLabel, paramLabel, sceneName, t } from './i18n.js';
import { catalogueParam, describe, LawPlot, lawColumns, plottedScenes, xChoices } from './law_plot.js';
import { newHistory, readHistory, rowFigure, runRows, windowed } from './run_history.js';
import { EXPERIMENTS } from './theory.js';
import { runRef } from './node.js';

const $ = (s) => document.getElementById(s);
const PAGE = 500; // GET /api/runs's largest limit
const PLOT_MAX = 2000; // runs read for one plot: each finished one costs a read of its events
let catalogue = null;
let chosen = false; // the plot's scene was picked by hand: loading runs no longer moves it
let generation = 0; // the latest plot asked for: an older one's late answers are dropped
const hist = new Map(); // run (runRef) -> its history (js/run_history.js); a finished run's never changes
const plot = new LawPlot($('plot'), { live: false });

// the form's filters, for the form's scene or the plot's
function filters(scene = $('scene').value) {
  const q = new URLSearchParams();
  if (scene) q.set('scene', scene);
  if ($('label').value) q.set('label', $('label').value);
  const p = $('pname').value;
  if (p && $('pmin').value) q.set(`param.${p}.min`, $('pmin').value);
  if (p && $('pmax').value) q.set(`param.${p}.max`, $('pmax').value);
  return q;
}

function setupX() {
  const xs = xChoices(catalogue, $('plot-scene').value), box = $('plot-x');
  box.replaceChildren(...(xs.length > 1 ? xs.map((x) => new Option(x.label, x.name)) : []));
  $('plot-x-label').hidden = xs.length < 2;
}

// GET without the page's error banner: a run's record that cannot be read is counted instead
async function quiet(path) {
  const r = await fetch(path);
  if (!r.ok) throw new Error(`${path}: ${r.status}`);
  return r.json();
}

// at most `n` reads at once
async function pool(items, n, fn) {
  const queue = [...items];
  await Promise.all(Array.from({ length: Math.min(n, queue.length) }, async () => {
    while (queue.length) await fn(queue.shift());
  }));
}

// The chosen scene's finished runs (under the form's other filters), each at the parameters its
// figure belongs to, against the law over the catalogue's range.
async function drawPlot() {
  const mine = ++generation, scene = $('plot-scene').value, exp = EXPERIMENTS[scene];
  if (!exp) return;
  const runs = [];
  let total = 0;
  for (;;) {
    const q = filters(scene);
    q.set('limit', String(PAGE));
    q.set('offset', String(runs.length));
    const page = await api('GET', '/api/runs?' + q);
    runs.push(...page.runs);
    total = page.total;
    if (page.runs.length === 0 || runs.length >= Math.min(total, PLOT_MAX)) break;
  }
  const done = runs.filter((r) => r.end_reason);
  let unread = 0;
  await pool(done.filter((r) => !(hist.get(runRef(r)) || {}).complete), 6, async (r) => {
    if (!hist.has(runRef(r))) hist.set(runRef(r), newHistory());
    // a run gone since the list (or unreadable): no L0 for its runout, and counted
    await readHistory(quiet, r, hist.get(runRef(r))).catch(() => { unread++; });
  });
  if (mine !== generation) return;
  const xName = $('plot-x').value || exp.x;
  const win = windowed(catalogue, scene);
  const points = done.flatMap((r) => runRows(r).map((row) => ({
    x: row.params[xName], y: rowFigure(row, hist.get(runRef(r)), win), results: row.results, ref: rowRef(row),
  })));
  const shown = lawColumns(catalogue, scene, xName, points);
  if (!shown) return;
  $('plot-title').textContent = shown.title;
  $('plot').setAttribute('aria-label', shown.title);
  describe($('plot'), shown);
  plot.draw(shown);
  // why a finished run has no point: said, not hidden
  const why = [];
  if (exp.l0) {
    const action = t(`action.${exp.l0.action}`);
    const never = done.filter((r) => !hist.get(runRef(r)).start).length;
    const early = done.filter((r) => hist.get(runRef(r)).start && hist.get(runRef(r)).l0 === null).length;
    if (never) why.push(t('results.why_never', { n: never, action }));
    if (early) why.push(t('results.why_early', { n: early, action }));
  }
  if (unread) why.push(t('results.why_unread', { n: unread }));
  if (total > runs.length) why.push(t('results.why_first', { n: runs.length, total }));
  const note = t(win ? 'results.points_stretches' : 'results.points_runs', { points: shown.cols.points, runs: done.length });
  $('plot-note').textContent = [note, ...why].join('; ');
}

// A row as the CSV names it: the run, and its stretch where the run kept them.
const rowRef = (row) => (row.segment ? `${runRef(row.run)}/${row.segment}` : `${runRef(row.run)}`);

// "sliding friction μ 0.5, hole diameter (m) 0.9": a run's parameters (or results) as labelled
const list = (scene, o, results = false) => Object.entries(o || {}).map(([k, v]) => {
  const m = results && catalogue.measurements.find((q) => q.name === k);
  const p = !results && catalogueParam(catalogue, scene, k);
  const label = m ? measureLabel(k, m.unit) : p ? paramLabel(p) : k;
  return `${esc(label)} ${esc(results ? measureValue(m, v) : paramValue(p, v))}`;
}).join(', ');

// Why a run's end state cannot be rebuilt, in words; null when it can (replayed by the server).
function notReplayable(r) {
  // an interrupted run ends at its last sample; one cut off before its first has no end
  if (!r.end_reason || r.end_steps === null || r.end_steps === undefined) return t('results.no_end');
  if (r.events_dropped > 0) return t('results.events_lost');
  if (r.state_version !== catalogue.engine.state_version) {
    return r.state_version ? t('results.older_engine', { version: r.state_version }) : t('results.before_versions');
  }
  return null;
}

async function load() {
  const q = filters();
  q.set('limit', String(PAGE));
  if ($('sort').value) q.set('sort', $('sort').value);
  const { runs, total } = await api('GET', '/api/runs?' + q);
  $('total').textContent = total;
  // the table's rows as the CSV gives them: a row per stretch of constant parameters
  const csv = new URLSearchParams(q);
  csv.set('format', 'csv');
  $('runs-csv').href = '/api/runs?' + csv;
  $('runs').innerHTML = runs.map((r) => {
    const rows = runRows(r);
    const cant = notReplayable(r);
    // the final state, replayed by the server (seconds for a minute of a silo), for Python or ParaView
    const files = `<a class="csv" href="/api/runs/${runRef(r)}/samples?format=csv" download>${esc(t('results.samples_csv'))}</a>` +
      (cant ? ` · <span class="no-snapshot">${esc(t('results.no_snapshot', { why: cant }))}</span>`
        : ` · ${esc(t('results.snapshot'))} <a class="snap-csv" href="/api/runs/${runRef(r)}/snapshot?format=csv" download>CSV</a>` +
          ` <a class="snap-vtk" href="/api/runs/${runRef(r)}/snapshot?format=vtk" download>VTK</a>`);
    const end = esc(t(`end.${r.end_reason || (r.reachable === false ? 'unreachable' : 'running')}`)) + (r.end_reason === 'reset' ? ` (${esc(t('results.reset_new'))})` : '') +
      (r.reset_of ? ` · ${esc(t('results.after_reset', { run: r.reset_of }))}` : '');
    return rows.map((row, k) => {
      const to = row.to_t === null || row.to_t === undefined ? t('results.now') : fmt(row.to_t);
      const span = row.segment ? t('results.span', { from: fmt(row.from_t), to }) : '';
      const changed = Object.keys(row.changed).length ? ` · ${esc(t('results.changed_now'))} <b>${list(r.scene, row.changed)}</b>` : '';
      return `<tr data-run="${runRef(r)}" data-row="${rowRef(row)}"><td>${k === 0 ? runRef(r) : ''}${row.segment ? ` <small>${esc(span)}</small>` : ''}</td>` +
        `<td>${esc(sceneName(r.scene))}</td><td>${esc(r.label)}</td><td>${list(r.scene, row.params)}${changed}</td>` +
        `<td>${list(r.scene, row.results, true)}</td><td>${k === rows.length - 1 ? end : ''}</td><td>${k === 0 ? files : ''}</td></tr>`;
    }).join('');
  }).join('');
  labelCells($('runs-table'));
  // the plot follows the scene filter; else, until picked by hand, the scene with most runs here
  const box = $('plot-scene'), options = [...box.options].map((o) => o.value);
  let want = options.includes($('scene').value) ? $('scene').value : null;
  if (!want && !chosen) {
    const count = (s) => runs.filter((r) => r.scene === s).length;
    want = options.reduce((best, s) => (count(s) > count(best) ? s : best), box.value);
  }
  if (want && want !== box.value) {
    box.value = want;
    setupX();
  }
  await drawPlot();
}

// The filters' and sorts' choices from the catalogue: every scene, every parameter (labelled as
// the first scene that has it labels it), and sorts by the plotted figures.
function choices() {
  for (const s of catalogue.scenes) $('scene').add(new Option(sceneName(s.name), s.name));
  const seen = new Map();
  for (const s of catalogue.scenes) for (const p of s.params) if (!seen.has(p.name)) seen.set(p.name, p);
  for (const p of seen.values()) $('pname').add(new Option(paramLabel(p), p.name));
  const by = (key, label, down) => $('sort').add(new Option(`${label} ${down ? '↓' : '↑'}`, `${down ? '-' : ''}${key}`));
  by('param.mu', paramLabel(seen.get('mu')), false);
  by('param.hole', paramLabel(seen.get('hole')), false);
  for (const m of ['angle', 'mean_flow']) {
    const info = catalogue.measurements.find((q) => q.name === m);
    by(`result.${m}`, measureLabel(m, info.unit), true);
  }
  $('plot-scene').replaceChildren(...plottedScenes(catalogue.scenes.map((s) => s.name)).map((s) => new Option(sceneName(s), s)));
}

async function start() {
  catalogue = await api('GET', '/api/scenes');
  choices();
  setupX();
  $('plot-scene').addEventListener('change', () => { chosen = true; setupX(); drawPlot().catch(pageFailed); });
  $('plot-x').addEventListener('change', () => drawPlot().catch(pageFailed));
  await load();
}
const started = start();
started.catch(pageFailed);
// the filters' form is there before the catalogue: a search sent early waits for it, and never
// reloads the page as a form with no listener would
$('filters').addEventListener('submit', (e) => {
  e.preventDefault();
  started.then(load).catch(pageFailed);
});
