// One plot of a scene's runs against its law (js/theory.js), drawn the same way on the class
// dashboard and the results page: runs (and live sessions) as points, the law dashed over the
// parameter's whole catalogue range, our own sweep (where the law has one) as a second curve.
import uPlot from 'uplot';
import { EXPERIMENTS, plotColumns } from './theory.js';

// The catalogue's entry (GET /api/scenes) for a scene's parameter, or undefined.
export function catalogueParam(catalogue, scene, name) {
  const s = catalogue.scenes.find((q) => q.name === scene);
  return s ? s.params.find((p) => p.name === name) : undefined;
}

// The scenes of `names` (catalogue order) that have a plot against a law.
export const plottedScenes = (names) => names.filter((s) => EXPERIMENTS[s]);

// The x parameters a scene's plot offers: the law's, then one plotted without a law (`alt`).
export function xChoices(exp) {
  return exp ? [{ name: exp.x, label: exp.xLabel }].concat(exp.alt ? [{ name: exp.alt.x, label: exp.alt.xLabel }] : []) : [];
}

// The plot's columns for points [{x, y, live}] of `scene` against `xName`, the range read from
// the catalogue; null when the scene has no plot or the catalogue lacks the parameter.
export function lawColumns(catalogue, scene, xName, points) {
  const exp = EXPERIMENTS[scene];
  const p = exp && catalogueParam(catalogue, scene, xName);
  if (!p) return null;
  const alt = xName !== exp.x;
  const cols = plotColumns(exp, points, { min: p.min, max: p.max }, !alt);
  const xLabel = alt ? exp.alt.xLabel : exp.xLabel;
  const lawLabel = exp.fitLabel && cols.c ? `${exp.lawLabel} (${exp.fitLabel(cols.c)})` : exp.lawLabel;
  const curves = [cols.law && lawLabel, cols.ref && exp.ref.label].filter(Boolean);
  const title = `${scene}: ${exp.yLabel} against ${xLabel}` +
    (curves.length ? ` (${curves.length > 1 ? 'curves' : 'curve'}: ${curves.join('; ')})`
      : alt ? ' (no closed-form law: points only)' : ' (the curve needs a finished run)');
  return { exp, scene, xName, xLabel, alt, cols, title, range: { min: p.min, max: p.max } };
}

// What a test reads off the page: points plotted (and each one's x, y and its row: "run" or
// "run/segment", as the CSV's columns say), curve x positions (the law's samples and the sweep's
// rows), the sweep's rows drawn, and the x span of the law's curve.
export function describe(el, plot) {
  const { cols } = plot;
  const lawXs = cols.law ? cols.data[0].filter((x, i) => cols.data[3][i] !== null) : [];
  Object.assign(el.dataset, {
    scene: plot.scene, x: plot.xName, points: cols.points,
    plotted: JSON.stringify(cols.plotted.map((r) => [r.x, r.y, r.ref || null])),
    curve: cols.law ? cols.data[0].length - cols.points : 0,
    ref: cols.ref ? cols.data[4].filter((y) => y !== null).length : 0,
    lawFrom: lawXs.length ? lawXs[0] : '', lawTo: lawXs.length ? lawXs[lawXs.length - 1] : '',
  });
}

const tick = (u, splits) => splits.map((v) => (v === null ? '' : Math.abs(v) < 1e-3 && v !== 0 ? v.toExponential(0) : String(Number(v.toPrecision(3)))));
const dots = (stroke, size) => ({ stroke, fill: stroke, width: 0, points: { show: true, size, fill: stroke }, paths: () => null });

// A uPlot in `div`, kept across redraws of the same scene and axis (setData only). `live`: a
// series for live sessions (the class dashboard); the results page has stored runs only.
export class LawPlot {
  constructor(div, { live = true } = {}) {
    this.div = div;
    this.live = live;
    this.plot = null;
    this.key = '';
  }

  draw(plot) {
    const { exp, cols, xName, xLabel } = plot;
    const keep = (col, i) => this.live || i !== 2;
    const data = cols.data.filter(keep);
    const key = `${plot.scene}/${xName}/${cols.law}/${cols.ref}`;
    if (this.plot && key === this.key) { this.plot.setData(data); return; }
    if (this.plot) this.plot.destroy();
    this.key = key;
    const series = [{ label: xName }, { label: 'runs', ...dots('#c0392b', 8) }, { label: 'live', ...dots('#2471a3', 9) },
      { label: exp.lawLabel, stroke: '#2c3e50', width: 2, dash: [8, 5], spanGaps: true, points: { show: false } }];
    if (cols.ref) series.push({ label: exp.ref.label, stroke: '#1e8449', width: 2, spanGaps: true, points: { show: true, size: 5, fill: '#1e8449' } });
    this.plot = new uPlot({
      width: Math.max(320, Math.min(760, this.div.clientWidth || 640)), height: 280,
      scales: { x: { time: false, distr: exp.log ? 3 : 1 }, y: { distr: exp.log ? 3 : 1 } },
      axes: [{ label: xLabel, values: tick }, { label: exp.yLabel, size: 64, values: tick }],
      series: series.filter(keep),
    }, data, this.div);
  }
}
