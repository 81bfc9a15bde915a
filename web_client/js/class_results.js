// A class's results, for the teacher's dashboard and the students' page alike: every group's
// runs in one table (GET /api/runs?class=ID), the groups' live sessions as they run, one plot of
// the chosen scene against its law (js/theory.js) drawn over the parameter's whole range, and
// the class's CSV.
import uPlot from 'uplot';
import { fmt, showError } from './api.js';
import { EXPERIMENTS, plotColumns } from './theory.js';

// A group's session while it runs (the class object names an ended one null; a session caught
// in its last moments may still say "ended")
export const liveSession = (g) => (g.session && g.session.state !== 'ended' ? g.session : null);

const PAGE = 500; // GET /api/runs's largest limit

const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export class ClassResults {
  // opts: classId, token (the teacher's: a private class's runs need it), catalogue (GET
  // /api/scenes), scenes (the class's), csvAllowed (a private class's CSV is the teacher's).
  constructor(root, opts) {
    Object.assign(this, opts);
    this.root = root;
    this.runs = [];
    this.klass = null;
    this.live = new Map(); // session id -> {run, sum, n, t}: a silo's mean flow so far
    this.hist = new Map(); // run id -> what its events tell (see history())
    this.plot = null;
    this.plotKey = '';
    const plotted = this.scenes.filter((s) => EXPERIMENTS[s]);
    root.innerHTML = `<div class="row"><label>plot <select class="cr-scene">${plotted.map((s) => `<option>${esc(s)}</option>`).join('')}</select></label>
      <select class="cr-x" style="display:none"></select>
      <button class="cr-csv">CSV of the class</button> <span class="cr-note"></span></div>
      <h3 class="cr-title"></h3><div class="plot cr-plot"></div>
      <table><thead><tr><th>group</th><th>scene</th><th>run</th><th>parameters</th><th>result</th><th>end</th></tr></thead><tbody class="cr-rows"></tbody></table>`;
    this.$ = (c) => root.querySelector(c);
    if (plotted.length === 0) this.$('.cr-plot').style.display = 'none';
    if (!this.csvAllowed) this.$('.cr-csv').style.display = 'none';
    this.$('.cr-scene').addEventListener('change', () => { this.setupX(); this.render(); });
    this.$('.cr-x').addEventListener('change', () => this.render());
    this.$('.cr-csv').addEventListener('click', () => this.csv().catch((e) => showError(e.message)));
    this.setupX();
  }

  scene() { return this.$('.cr-scene').value; }

  setupX() {
    const exp = EXPERIMENTS[this.scene()], box = this.$('.cr-x');
    box.innerHTML = exp && exp.alt ? `<option value="${exp.x}">${exp.xLabel}</option><option value="${exp.alt.x}">${exp.alt.xLabel}</option>` : '';
    box.style.display = exp && exp.alt ? '' : 'none';
  }

  // The latest class object (its groups' live sessions) and the class's runs afresh.
  async refresh(klass) {
    if (klass) this.klass = klass;
    this.track();
    if (this.denied) { this.render(); return; }
    try {
      // pages of the most /api/runs gives at once (500), until the class's total
      const runs = [];
      for (let total = Infinity; runs.length < total;) {
        const page = await this.quiet(`/api/runs?class=${encodeURIComponent(this.classId)}&limit=${PAGE}&offset=${runs.length}`);
        runs.push(...page.runs);
        total = page.runs.length === 0 ? runs.length : page.total;
      }
      this.runs = runs;
      this.$('.cr-note').textContent = '';
    } catch (e) {
      // a private class's runs are the teacher's: its students see the live sessions only
      this.denied = e.status === 404 || e.status === 403; // not asked again: it stays so
      this.$('.cr-note').textContent = this.denied ? 'stored runs: the teacher’s only' : e.message;
    }
    await this.history();
    this.render();
  }

  // GET without the page's error banner (a refusal here is shown in the panel's note)
  async quiet(path) {
    const headers = this.token ? { Authorization: 'Bearer ' + this.token } : {};
    const r = await fetch(path, { headers });
    const json = await r.json().catch(() => null);
    if (!r.ok) {
      const e = new Error((json && json.error && json.error.message) || `${r.status}`);
      e.status = r.status;
      throw e;
    }
    return json;
  }

  sessions() {
    return (this.klass ? this.klass.groups : []).filter(liveSession).map((g) => ({ group: g.name, s: g.session }));
  }

  // A live silo's mean flow over the samples seen while it flows (what its run's mean_flow
  // will be), restarted with each new run.
  track() {
    for (const { s } of this.sessions()) {
      let l = this.live.get(s.id);
      if (!l || l.run !== s.run_id) { l = { run: s.run_id, sum: 0, n: 0, t: -1 }; this.live.set(s.id, l); }
      const m = s.measurements || {};
      if (m.state === 'flowing' && Number.isFinite(m.flow) && s.t !== l.t) { l.sum += m.flow; l.n++; l.t = s.t; }
    }
  }

  // A run records the parameters it started with; a change while it ran (the group's slider, the
  // teacher's push) is a parameter_changed event, and its results belong to the parameters it
  // ended with. A slump's column is built at the start or a reset, and the runout counts from
  // the front just before the dam was pulled: for those, its events and samples. Read once per
  // finished run, and for a live slump until its dam is pulled.
  async history() {
    const live = new Set(this.sessions().map((g) => g.s.run_id));
    for (const r of this.runs) {
      if (!r.end_reason && !(EXPERIMENTS[r.scene] && EXPERIMENTS[r.scene].built && live.has(r.id))) continue;
      let h = this.hist.get(r.id);
      if (!h) {
        h = { after: 0, params: { ...r.params }, built: { ...r.params }, pull: null, l0: undefined, complete: false };
        this.hist.set(r.id, h);
      }
      if (h.complete) continue;
      try {
        for (let more = true; more;) {
          const page = await this.quiet(`/api/runs/${r.id}?events_after=${h.after}&events_limit=1000`);
          for (const e of page.events) {
            const type = e.kind === 'action' && e.detail && e.detail.action ? e.detail.action.type : null;
            if (e.kind === 'parameter_changed') Object.assign(h.params, e.detail.params);
            if (type === 'reset') h.built = { ...h.params };
            if (type === 'pull_dam' && !h.pull) h.pull = { t: e.t, params: { ...h.built } };
            h.after = e.id;
          }
          more = page.events_next !== null && page.events_next !== undefined && page.events.length > 0;
        }
        if (h.pull && h.l0 === undefined) {
          const { columns, rows } = await this.quiet(`/api/runs/${r.id}/samples`);
          const kt = columns.indexOf('t'), kf = columns.indexOf('front');
          const before = rows.filter((row) => row[kt] <= h.pull.t && Number.isFinite(row[kf]));
          h.l0 = before.length ? before[before.length - 1][kf] : null;
        }
        h.complete = !!r.end_reason && (!h.pull || h.l0 !== undefined);
      } catch (e) {
        h.complete = true; // not readable (a private session's run): its start parameters stand
      }
    }
  }

  // Table rows: every run (a running one with its session's live figures) and each live
  // session whose run is not listed yet.
  rows() {
    const bySession = new Map(this.sessions().map((g) => [g.s.run_id, g]));
    const out = this.runs.map((r) => {
      const g = !r.end_reason ? bySession.get(r.id) : null;
      const h = this.hist.get(r.id), exp = EXPERIMENTS[r.scene];
      // the parameters its figure belongs to: a slump's as its column was built when the dam
      // was pulled; any other's as they are now (live) or were at its end
      const params = exp && exp.built && h && h.pull ? h.pull.params : g ? g.s.params : h ? h.params : r.params;
      return { run: r, group: r.group, scene: r.scene, params, live: g ? g.s : null };
    });
    const listed = new Set(this.runs.map((r) => r.id));
    for (const g of this.sessions()) {
      if (!listed.has(g.s.run_id)) out.push({ run: null, group: g.group, scene: g.s.scene, params: g.s.params, live: g.s });
    }
    return out;
  }

  figure(row) {
    const exp = EXPERIMENTS[row.scene];
    if (!exp) return null;
    const h = row.run && this.hist.get(row.run.id);
    if (row.live) return exp.liveY(row.live, { ...this.live.get(row.live.id), l0: h && h.l0 });
    return exp.runY(row.run, h && h.l0);
  }

  render() {
    const rows = this.rows();
    const param = (sc, name) => ((this.catalogue.scenes.find((s) => s.name === sc) || { params: [] }).params.find((p) => p.name === name));
    this.$('.cr-rows').innerHTML = rows.map((row) => {
      const exp = EXPERIMENTS[row.scene];
      // the plotted parameters first, then those the group moved off the scene's default
      const shown = Object.entries(row.params || {}).filter(([k, v]) => (exp && (k === exp.x || (exp.alt && k === exp.alt.x))) || (param(row.scene, k) && param(row.scene, k).default !== v));
      const y = this.figure(row);
      return `<tr${row.live ? ' class="live"' : ''}><td>${esc(row.group ?? '—')}</td><td>${esc(row.scene)}</td><td>${row.run ? row.run.id : row.live.run_id}</td>` +
        `<td>${shown.map(([k, v]) => `${esc(k)} ${fmt(v)}`).join(', ')}</td>` +
        `<td>${exp ? `${esc(exp.yLabel)}: ${fmt(y)}` : ''}</td><td>${row.live ? 'live' : esc(row.run.end_reason || 'running')}</td></tr>`;
    }).join('');
    this.root.dataset.rows = rows.length;
    this.draw(rows);
  }

  draw(rows) {
    const scene = this.scene(), exp = EXPERIMENTS[scene];
    if (!exp) return;
    const xName = this.$('.cr-x').value || exp.x;
    const p = (this.catalogue.scenes.find((s) => s.name === scene) || { params: [] }).params.find((q) => q.name === xName);
    if (!p) return;
    const points = rows.filter((r) => r.scene === scene).map((r) => ({ x: r.params[xName], y: this.figure(r), live: !!r.live }));
    const alt = xName !== exp.x;
    const cols = plotColumns(exp, points, { min: p.min, max: p.max }, !alt);
    const xLabel = alt ? exp.alt.xLabel : exp.xLabel;
    this.$('.cr-title').textContent = `${scene}: ${exp.yLabel} against ${xLabel}` +
      (cols.law ? ` (curve: ${exp.lawLabel})` : alt ? ' (no closed-form law: points only)' : ' (the curve needs a finished run)');
    this.root.dataset.points = cols.points;
    this.root.dataset.curve = cols.law ? cols.data[0].length - cols.points : 0;
    this.root.dataset.scene = scene;
    const key = `${scene}/${xName}/${cols.law}`;
    if (this.plot && key === this.plotKey) { this.plot.setData(cols.data); return; }
    if (this.plot) this.plot.destroy();
    this.plotKey = key;
    const div = this.$('.cr-plot');
    const tick = (u, splits) => splits.map((v) => (v === null ? '' : Math.abs(v) < 1e-3 && v !== 0 ? v.toExponential(0) : String(Number(v.toPrecision(3)))));
    const dots = (stroke, size) => ({ stroke, fill: stroke, width: 0, points: { show: true, size, fill: stroke }, paths: () => null });
    this.plot = new uPlot({
      width: Math.max(320, Math.min(760, div.clientWidth || 640)), height: 280,
      scales: { x: { time: false, distr: exp.log ? 3 : 1 }, y: { distr: exp.log ? 3 : 1 } },
      axes: [{ label: xLabel, values: tick }, { label: exp.yLabel, size: 64, values: tick }],
      series: [{ label: xName }, { label: 'runs', ...dots('#c0392b', 8) }, { label: 'live', ...dots('#2471a3', 9) },
               { label: exp.lawLabel, stroke: '#2c3e50', width: 2, spanGaps: true, points: { show: false } }],
    }, cols.data, div);
  }

  // The class's CSV, with the token in a header (never in the address): fetched, then saved.
  async csv() {
    const headers = this.token ? { Authorization: 'Bearer ' + this.token } : {};
    const r = await fetch(`/api/runs?class=${encodeURIComponent(this.classId)}&format=csv&limit=${PAGE}`, { headers });
    if (!r.ok) {
      const j = await r.json().catch(() => null);
      throw new Error(j && j.error ? j.error.message : `CSV: ${r.status}`);
    }
    const url = URL.createObjectURL(await r.blob());
    const a = document.createElement('a');
    a.href = url;
    a.download = `class-${this.classId}.csv`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }
}
