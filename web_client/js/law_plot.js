// One plot of a scene's runs against its law (js/theory.js), drawn the same way on the class
// dashboard and the results page: runs (and live sessions) as points, the law dashed over the
// parameter's whole catalogue range, our own sweep (where the law has one) as a second curve.
import uPlot from 'uplot';
import { fmt } from './api.js';
import { measureLabel, paramLabel, sceneName, t } from './i18n.js';
import { EXPERIMENTS, plotColumns } from './theory.js';

// The catalogue's entry (GET /api/scenes) for a scene's parameter, or undefined.
export function catalogueParam(catalogue, scene, name) {
  const s = catalogue.scenes.find((q) => q.name === scene);
  return s ? s.params.find((p) => p.name === name) : undefined;
}

// The scenes of `names` (catalogue order) that have a plot against a law.
export const plottedScenes = (names) => names.filter((s) => EXPERIMENTS[s]);

// The x parameters a scene's plot offers: the law's, then one plotted without a law (`alt`),
// each with its label from the catalogues.
export function xChoices(catalogue, scene) {
  const exp = EXPERIMENTS[scene];
  const names = exp ? [exp.x].concat(exp.alt ? [exp.alt.x] : []) : [];
  return names.map((name) => catalogueParam(catalogue, scene, name)).filter(Boolean).map((p) => ({ name: p.name, label: paramLabel(p) }));
}

// The figure a scene's plot and its table show, with its unit: its measurement's label, or its
// own where it is computed from one (a runout from the front).
export function yLabel(catalogue, exp) {
  if (exp.y) return t(`figure.${exp.y}`);
  const m = catalogue.measurements.find((q) => q.name === exp.measure);
  return measureLabel(exp.measure, m ? m.unit : '');
}

export const lawLabel = (exp) => t(`law.${exp.lawName}`);

// The plot's columns for points [{x, y, live}] of `scene` against `xName`, the range read from
// the catalogue; null when the scene has no plot or the catalogue lacks the parameter.
export function lawColumns(catalogue, scene, xName, points) {
  const exp = EXPERIMENTS[scene];
  const p = exp && catalogueParam(catalogue, scene, xName);
  if (!p) return null;
  const alt = xName !== exp.x;
  const cols = plotColumns(exp, points, { min: p.min, max: p.max }, !alt);
  const xLabel = paramLabel(p), y = yLabel(catalogue, exp);
  // a law with a measured constant says it (Beverloo at the silos' measured bulk density)
  const law = exp.fit && cols.c && exp.lawName === 'beverloo'
    ? t('law.with_fit', { law: lawLabel(exp), fit: t('law.beverloo.fit', { rho: fmt(Math.round(cols.c)) }) }) : lawLabel(exp);
  const curves = [cols.law && law, cols.ref && t(`law.${exp.ref.name}`)].filter(Boolean);
  const title = `${t('plot.title', { scene: sceneName(scene), y, x: xLabel })} ` +
    (curves.length ? t(curves.length > 1 ? 'plot.curves' : 'plot.curve', { curves: curves.join('; ') })
      : t(alt ? 'plot.no_law' : 'plot.needs_run'));
  return { exp, scene, xName, xLabel, yLabel: y, alt, cols, title, range: { min: p.min, max: p.max } };
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
    const series = [{ label: xLabel }, { label: t('plot.runs'), ...dots('#c0392b', 8) }, { label: t('plot.live'), ...dots('#2471a3', 9) },
      { label: lawLabel(exp), stroke: '#2c3e50', width: 2, dash: [8, 5], spanGaps: true, points: { show: false } }];
    if (cols.ref) series.push({ label: t(`law.${exp.ref.name}`), stroke: '#1e8449', width: 2, spanGaps: true, points: { show: true, size: 5, fill: '#1e8449' } });
    this.plot = new uPlot({
      width: Math.max(320, Math.min(760, this.div.clientWidth || 640)), height: 280,
      scales: { x: { time: false, distr: exp.log ? 3 : 1 }, y: { distr: exp.log ? 3 : 1 } },
      axes: [{ label: xLabel, values: tick }, { label: plot.yLabel, size: 64, values: tick }],
      series: series.filter(keep),
    }, data, this.div);
  }
}
