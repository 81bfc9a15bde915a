// The results page: stored runs with filters, a row per stretch of constant parameters of each
// (what the CSV of GET /api/runs gives), each run's CSV and snapshot, and one plot of a chosen
// scene's finished runs against its law across the parameter's whole catalogue range
// (js/law_plot.js, the class dashboard's plot: silo flow against Beverloo, piles against Coulomb
// and our own sweep, the slump's runout against Lube et al., N-body drift against the leapfrog's
// fit), each point a row of the table.
import { api, fmt } from './api.js';
import { describe, LawPlot, lawColumns, plottedScenes, xChoices } from './law_plot.js';
import { newHistory, readHistory, rowFigure, runRows, windowed } from './run_history.js';
import { EXPERIMENTS } from './theory.js';
import { runRef } from './node.js';

const $ = (s) => document.getElementById(s);
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
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
  const p = $('pname').value.trim();
  if (p && $('pmin').value) q.set(`param.${p}.min`, $('pmin').value);
  if (p && $('pmax').value) q.set(`param.${p}.max`, $('pmax').value);
  return q;
}

function setupX() {
  const xs = xChoices(EXPERIMENTS[$('plot-scene').value]), box = $('plot-x');
  box.innerHTML = xs.length > 1 ? xs.map((x) => `<option value="${x.name}">${esc(x.label)}</option>`).join('') : '';
  box.style.display = xs.length > 1 ? '' : 'none';
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
  describe($('plot'), shown);
  plot.draw(shown);
  // why a finished run has no point: said, not hidden
  const why = [];
  if (exp.l0) {
    const never = done.filter((r) => !hist.get(runRef(r)).start).length;
    const early = done.filter((r) => hist.get(runRef(r)).start && hist.get(runRef(r)).l0 === null).length;
    if (never) why.push(`${never} without ${exp.l0.action}`);
    if (early) why.push(`${early} without a sample before ${exp.l0.action} (L0 unknown)`);
  }
  const what = win ? 'stretches of constant parameters of' : '';
  $('plot-note').textContent = `${shown.cols.points} points from ${what ? `${what} ` : ''}${done.length} finished runs` +
    (win ? '' : ' (each run\'s outcome, under the parameters it ended with)') +
    (why.length ? `; ${why.join(', ')}` : '') + (unread ? `; ${unread} runs' events unreadable` : '') + (total > runs.length ? `; the first ${runs.length} of ${total} runs read` : '');
}

// A row as the CSV names it: the run, and its stretch where the run kept them.
const rowRef = (row) => (row.segment ? `${runRef(row.run)}/${row.segment}` : `${runRef(row.run)}`);

const list = (o) => Object.entries(o || {}).map(([k, v]) => `${esc(k)} ${fmt(v)}`).join(', ');

// Why a run's end state cannot be rebuilt, in words; null when it can (replayed by the server).
function notReplayable(r) {
  if (!r.end_reason || r.end_reason === 'interrupted') return 'it has no recorded end (still running, or cut off by a crash)';
  if (r.events_dropped > 0) return 'some of its events were not recorded';
  if (r.state_version !== catalogue.engine.state_version) {
    return r.state_version ? `it was recorded by an older engine (state version ${r.state_version}), which moved grains otherwise`
      : 'it was recorded before runs kept their engine\'s version';
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
    const files = `<a class="csv" href="/api/runs/${runRef(r)}/samples?format=csv" download>CSV</a>` +
      (cant ? ` · <span class="no-snapshot" title="no snapshot: ${esc(cant)}">no snapshot: ${esc(cant)}</span>`
        : ` · snapshot <a class="snap-csv" href="/api/runs/${runRef(r)}/snapshot?format=csv" download>CSV</a>` +
          ` <a class="snap-vtk" href="/api/runs/${runRef(r)}/snapshot?format=vtk" download>VTK</a>`);
    const end = esc(r.end_reason || 'running') + (r.end_reason === 'reset' ? ' (a new run started)' : '') +
      (r.reset_of ? ` · after a reset of ${esc(r.reset_of)}` : '');
    return rows.map((row, k) => {
      const span = row.segment ? `t ${fmt(row.from_t)}–${row.to_t === null || row.to_t === undefined ? 'now' : fmt(row.to_t)} s` : '';
      const changed = Object.keys(row.changed).length ? ` <b>${list(row.changed)}</b> changed` : '';
      return `<tr data-run="${runRef(r)}" data-row="${rowRef(row)}"><td>${k === 0 ? runRef(r) : ''}${row.segment ? ` <small>${span}</small>` : ''}</td>` +
        `<td>${esc(r.scene)}</td><td>${esc(r.label)}</td><td>${list(row.params)}${changed}</td>` +
        `<td>${list(row.results)}</td><td>${k === rows.length - 1 ? end : ''}</td><td>${k === 0 ? files : ''}</td></tr>`;
    }).join('');
  }).join('');
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

async function start() {
  catalogue = await api('GET', '/api/scenes');
  for (const s of catalogue.scenes) $('scene').insertAdjacentHTML('beforeend', `<option>${esc(s.name)}</option>`);
  $('plot-scene').innerHTML = plottedScenes(catalogue.scenes.map((s) => s.name)).map((s) => `<option>${esc(s)}</option>`).join('');
  setupX();
  $('filters').addEventListener('submit', (e) => { e.preventDefault(); load().catch(() => {}); });
  $('plot-scene').addEventListener('change', () => { chosen = true; setupX(); drawPlot().catch(() => {}); });
  $('plot-x').addEventListener('change', () => drawPlot().catch(() => {}));
  await load();
}
start().catch(() => {});
