// A class's results, for the teacher's dashboard and the students' page alike: every group's
// runs in one table (GET /api/runs?class=ID), a row per stretch of constant parameters as the
// class's CSV has them, the groups' live sessions as they run, and one plot of the chosen scene
// against its law (js/theory.js) drawn over the parameter's whole range, each point a row.
import { errorText, esc, fmt, labelCells, paramValue, showError } from './api.js';
import { paramLabel, sceneName, t } from './i18n.js';
import { catalogueParam, describe, LawPlot, lawColumns, plottedScenes, xChoices, yLabel } from './law_plot.js';
import { newHistory, readHistory, rowFigure, runRows, windowed } from './run_history.js';
import { EXPERIMENTS } from './theory.js';

// A group's session while it runs (the class object names an ended one null; a session caught
// in its last moments may still say "ended")
export const liveSession = (g) => (g.session && g.session.state !== 'ended' ? g.session : null);

const PAGE = 500; // GET /api/runs's largest limit


export class ClassResults {
  // opts: classId, token (the teacher's: a private class's runs need it), catalogue (GET
  // /api/scenes), scenes (the class's), csvAllowed (a private class's CSV is the teacher's).
  constructor(root, opts) {
    Object.assign(this, opts);
    this.root = root;
    this.runs = [];
    this.klass = null;
    this.hist = new Map(); // run id -> what its events tell (a slump's L0: js/run_history.js)
    const plotted = plottedScenes(this.scenes);
    root.innerHTML = `<div class="row"><label>${esc(t('results.plot'))} <select class="cr-scene">${plotted.map((s) => `<option value="${esc(s)}">${esc(sceneName(s))}</option>`).join('')}</select></label>
      <label class="cr-x-label" hidden>${esc(t('results.against'))} <select class="cr-x"></select></label>
      <label class="check"><input type="checkbox" class="cr-switched"> ${esc(t('results.show_switched'))} <span class="cr-switched-n"></span></label>
      <button class="cr-csv">${esc(t('results.class_csv'))}</button> <span class="cr-note"></span></div>
      <h3 class="cr-title"></h3><div class="plot cr-plot" role="img"></div>
      <div class="scroll"><table class="stacked"><thead><tr><th>${esc(t('col.group'))}</th><th>${esc(t('col.scene'))}</th><th>${esc(t('col.run'))}</th><th>${esc(t('col.from'))}</th><th>${esc(t('col.params'))}</th><th>${esc(t('col.result'))}</th><th>${esc(t('col.end'))}</th></tr></thead><tbody class="cr-rows"></tbody></table></div>`;
    this.$ = (c) => root.querySelector(c);
    this.plot = new LawPlot(this.$('.cr-plot'));
    if (plotted.length === 0) this.$('.cr-plot').hidden = true;
    if (!this.csvAllowed) this.$('.cr-csv').hidden = true;
    this.chosen = false; // the plot's scene picked by hand: the class's running scene no longer moves it
    this.$('.cr-scene').addEventListener('change', () => { this.chosen = true; this.setupX(); this.render(); });
    this.$('.cr-x').addEventListener('change', () => this.render());
    this.$('.cr-switched').addEventListener('change', () => this.render());
    this.$('.cr-csv').addEventListener('click', () => this.csv().catch(() => {}));
    this.setupX();
  }

  scene() { return this.$('.cr-scene').value; }

  setupX() {
    const xs = xChoices(this.catalogue, this.scene()), box = this.$('.cr-x');
    box.replaceChildren(...(xs.length > 1 ? xs.map((x) => new Option(x.label, x.name)) : []));
    this.$('.cr-x-label').hidden = xs.length < 2;
  }

  // Until picked by hand, the plot shows the scene most groups run now (the class's first scene
  // before any group runs one of those plotted).
  followClass() {
    if (this.chosen) return;
    const options = [...this.$('.cr-scene').options].map((o) => o.value);
    const count = (sc) => this.sessions().filter((g) => g.s.scene === sc).length;
    const want = options.reduce((best, sc) => (count(sc) > count(best) ? sc : best), options[0]);
    if (want && want !== this.scene()) {
      this.$('.cr-scene').value = want;
      this.setupX();
    }
  }

  // The latest class object (its groups' live sessions) and the class's runs afresh.
  async refresh(klass) {
    if (klass) this.klass = klass;
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
      this.$('.cr-note').textContent = this.denied ? t('results.teacher_only') : e.message;
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
      const e = new Error(errorText(r.status, json && json.error));
      e.status = r.status;
      throw e;
    }
    return json;
  }

  sessions() {
    return (this.klass ? this.klass.groups : []).filter(liveSession).map((g) => ({ group: g.name, s: g.session }));
  }

  // What each run's figure needs from its record (js/run_history.js: a slump's L0): read once per
  // finished run, and for a live slump until its dam is pulled.
  async history() {
    const live = new Set(this.sessions().map((g) => g.s.run_id));
    for (const r of this.runs) {
      if (!r.end_reason && !live.has(r.id)) continue;
      if (!this.hist.has(r.id)) this.hist.set(r.id, newHistory());
      const h = this.hist.get(r.id);
      try {
        await readHistory((path) => this.quiet(path), r, h);
      } catch (e) {
        h.complete = true; // not readable (a private session's run): no L0
      }
    }
  }

  // Table rows: every stretch of constant parameters of every run (a running run's last one with
  // its session's live figures), and each live session whose run is not listed yet.
  rows() {
    const bySession = new Map(this.sessions().map((g) => [g.s.run_id, g]));
    // a run its group left by switching scenes is no experiment of its own: hidden unless asked for
    const switched = this.runs.filter((r) => r.end_reason === 'switched');
    this.$('.cr-switched-n').textContent = `(${switched.length})`;
    const shown = this.$('.cr-switched').checked ? this.runs : this.runs.filter((r) => r.end_reason !== 'switched');
    const out = shown.flatMap((r) => runRows(r).map((row) => {
      const g = !r.end_reason && row.last ? bySession.get(r.id) : null;
      return { ...row, group: r.group, scene: r.scene, live: g ? g.s : null, params: g ? g.s.params : row.params };
    }));
    const listed = new Set(this.runs.map((r) => r.id));
    for (const g of this.sessions()) {
      if (!listed.has(g.s.run_id)) out.push({ run: null, segment: null, last: true, group: g.group, scene: g.s.scene, params: g.s.params, results: {}, live: g.s });
    }
    return out;
  }

  figure(row) {
    const exp = EXPERIMENTS[row.scene];
    if (!exp) return null;
    const h = row.run && this.hist.get(row.run.id);
    if (row.live) return exp.liveY(row.live, { l0: h && h.l0 });
    return rowFigure(row, h, windowed(this.catalogue, row.scene));
  }

  render() {
    this.followClass();
    const rows = this.rows();
    const param = (sc, name) => catalogueParam(this.catalogue, sc, name);
    const label = (sc, name) => (param(sc, name) ? paramLabel(param(sc, name)) : name);
    this.$('.cr-rows').innerHTML = rows.map((row) => {
      const exp = EXPERIMENTS[row.scene];
      // the plotted parameters first, then those the group moved off the scene's default
      const shown = Object.entries(row.params || {}).filter(([k, v]) => (exp && (k === exp.x || (exp.alt && k === exp.alt.x))) || (param(row.scene, k) && param(row.scene, k).default !== v));
      const y = this.figure(row);
      const from = row.segment ? fmt(row.from_t) : '';
      const changed = row.changed && Object.keys(row.changed).length
        ? ` (${t('results.changed_what', { what: Object.keys(row.changed).map((k) => label(row.scene, k)).join(', ') })})` : '';
      const end = row.live ? t('results.live') : row.last ? t(`end.${row.run.end_reason || (row.run.reachable === false ? 'unreachable' : 'running')}`) : '';
      return `<tr${row.live ? ' class="live"' : ''}><td>${esc(row.group ?? '—')}</td><td>${esc(sceneName(row.scene))}</td><td>${row.run ? row.run.id : row.live.run_id}${row.segment ? `/${row.segment}` : ''}</td>` +
        `<td>${from}</td><td>${esc(shown.map(([k, v]) => `${label(row.scene, k)} ${paramValue(param(row.scene, k), v)}`).join(', ') + changed)}</td>` +
        `<td>${exp && y !== null ? `${esc(yLabel(this.catalogue, exp))}: ${fmt(y)}` : ''}</td><td>${esc(end)}</td></tr>`;
    }).join('');
    labelCells(this.$('.cr-rows').closest('table'));
    this.root.dataset.rows = rows.length;
    this.draw(rows);
  }

  draw(rows) {
    const scene = this.scene();
    if (!EXPERIMENTS[scene]) return;
    const xName = this.$('.cr-x').value || EXPERIMENTS[scene].x;
    const points = rows.filter((r) => r.scene === scene).map((r) => ({
      x: r.params[xName], y: this.figure(r), live: !!r.live, results: r.live ? r.live.measurements : r.results,
      ref: r.run ? (r.segment ? `${r.run.id}/${r.segment}` : `${r.run.id}`) : null,
    }));
    const plot = lawColumns(this.catalogue, scene, xName, points);
    if (!plot) return;
    this.$('.cr-title').textContent = plot.title;
    this.$('.cr-plot').setAttribute('aria-label', plot.title);
    describe(this.root, plot);
    this.plot.draw(plot);
  }

  // The class's CSV, with the token in a header (never in the address): fetched, then saved.
  async csv() {
    const headers = this.token ? { Authorization: 'Bearer ' + this.token } : {};
    const r = await fetch(`/api/runs?class=${encodeURIComponent(this.classId)}&format=csv&limit=${PAGE}`, { headers });
    if (!r.ok) {
      const j = await r.json().catch(() => null);
      showError(errorText(r.status, j && j.error));
      throw new Error('CSV refused');
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
