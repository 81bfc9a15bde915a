// The results page: stored runs with filters, a plot across runs against theory (silo flow vs
// hole diameter with the Beverloo curve; pile angle vs friction; N-body energy drift vs the
// softening length), and each run's CSV.
import uPlot from 'uplot';
import { api, fmt } from './api.js';

const $ = (s) => document.getElementById(s);
let plot = null;

function query() {
  const q = new URLSearchParams({ limit: '500' });
  if ($('scene').value) q.set('scene', $('scene').value);
  if ($('label').value) q.set('label', $('label').value);
  const p = $('pname').value.trim();
  if (p && $('pmin').value) q.set(`param.${p}.min`, $('pmin').value);
  if (p && $('pmax').value) q.set(`param.${p}.max`, $('pmax').value);
  if ($('sort').value) q.set('sort', $('sort').value);
  return q.toString();
}

// Beverloo: W = C ρb √g (D − k d)^2.5, with the engine's constants fitted through the runs'
// own Beverloo figure at each hole (flow_vs_beverloo = 1 on the curve).
function drawPlot(runs) {
  const silo = runs.filter((r) => r.scene === 'silo' && r.results.mean_flow !== undefined);
  const piles = runs.filter((r) => r.results.angle !== undefined);
  // N-body runs: how far the total energy drifted by the run's end, against the softening
  const bodies = runs.filter((r) => r.results.energy_drift !== undefined && r.params.eps !== undefined);
  let data, opts;
  if (bodies.length > silo.length && bodies.length > piles.length) {
    bodies.sort((a, b) => a.params.eps - b.params.eps);
    $('plot-title').textContent = 'N-body: |energy drift| at the end vs softening eps';
    // decades apart: a log axis (a drift of exactly 0 has no place on it)
    data = [bodies.map((r) => r.params.eps), bodies.map((r) => Math.abs(r.results.energy_drift) || null)];
    opts = { series: [{ label: 'eps' }, { label: '|drift|', stroke: '#c0392b', points: { size: 7 }, paths: () => null }],
             scales: { x: { time: false }, y: { distr: 3 } },
             axes: [{}, { size: 60, values: (u, splits) => splits.map((v) => (v ? v.toExponential(0) : '')) }] };
  } else if (silo.length >= piles.length && silo.length > 0) {
    silo.sort((a, b) => a.params.hole - b.params.hole);
    $('plot-title').textContent = 'Silo: mean flow vs hole diameter (dashed: Beverloo)';
    const bev = silo.map((r) => (r.results.flow_vs_beverloo ? r.results.mean_flow / r.results.flow_vs_beverloo : null));
    data = [silo.map((r) => r.params.hole), silo.map((r) => r.results.mean_flow), bev];
    opts = { series: [{}, { label: 'mean flow, kg/s', stroke: '#c0392b', points: { size: 7 }, paths: () => null },
                      { label: 'Beverloo', stroke: '#2c3e50', dash: [6, 4] }] };
  } else {
    piles.sort((a, b) => a.params.mu - b.params.mu);
    $('plot-title').textContent = 'Angle of repose vs sliding friction mu';
    data = [piles.map((r) => r.params.mu), piles.map((r) => r.results.angle)];
    opts = { series: [{}, { label: 'angle, °', stroke: '#c0392b', points: { size: 7 }, paths: () => null }] };
  }
  if (plot) plot.destroy();
  plot = new uPlot({ width: Math.min(720, window.innerWidth - 40), height: 260, scales: { x: { time: false } }, ...opts }, data, $('plot'));
}

async function load() {
  const { runs, total } = await api('GET', '/api/runs?' + query());
  $('total').textContent = total;
  $('runs').innerHTML = runs.map((r) => {
    const params = Object.entries(r.params).map(([k, v]) => `${k} ${fmt(v)}`).join(', ');
    const results = Object.entries(r.results).map(([k, v]) => `${k} ${fmt(v)}`).join(', ');
    return `<tr><td>${r.id}</td><td>${r.scene}</td><td>${String(r.label).replace(/[<&]/g, '')}</td>` +
      `<td>${params}</td><td>${results}</td><td>${r.end_reason || 'running'}</td>` +
      `<td><a class="csv" href="/api/runs/${r.id}/samples?format=csv" download>CSV</a></td></tr>`;
  }).join('');
  drawPlot(runs);
}

async function start() {
  const { scenes } = await api('GET', '/api/scenes');
  for (const s of scenes) $('scene').insertAdjacentHTML('beforeend', `<option>${s.name}</option>`);
  $('filters').addEventListener('submit', (e) => { e.preventDefault(); load().catch(() => {}); });
  await load();
}
start().catch(() => {});
