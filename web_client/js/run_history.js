// What a stored run's figures belong to, read from its record, for the class dashboard and the
// results page alike. No DOM: `get(path)` fetches JSON, so tests/unit/test_theory.mjs checks it in
// node against a made-up record.
//
// A run is kept as stretches of constant parameters (its `segments`: a new one at every change,
// each with the parameters in force and the results measured in it). A figure over a window (the
// catalogue's `window`, such as a silo's mean flow) belongs to each stretch alone; any other tells
// the state, which a run shows as its outcome in its last stretch only. Rows are what the CSV of
// GET /api/runs gives, one per stretch, so a plot point, a table row and a CSV row agree.
import { EXPERIMENTS } from './theory.js';
import { runRef } from './node.js';

// The run's rows: {run, segment (1, 2, ... or null for a run recorded before stretches were kept),
// from_t, to_t, changed, params, results, last}.
export function runRows(run) {
  const segs = Array.isArray(run.segments) && run.segments.length ? run.segments : null;
  if (!segs) {
    return [{ run, segment: null, from_t: 0, to_t: run.end_t, changed: {}, params: run.params, results: run.results || {}, last: true }];
  }
  return segs.map((s, k) => ({ run, segment: k + 1, from_t: s.from_t, to_t: s.to_t, changed: s.changed || {},
                               params: s.params, results: s.results || {}, last: k === segs.length - 1 }));
}

// Whether the scene's plotted figure is one over a window (catalogue: GET /api/scenes).
export function windowed(catalogue, scene) {
  const exp = EXPERIMENTS[scene];
  const m = exp && catalogue.measurements.find((q) => q.name === exp.measure);
  return !!(m && m.window);
}

// A slump's runout counts from L0, the front just before the dam was pulled (EXPERIMENTS.slump.l0
// names the action and the measurement): read from the run's events and samples, once. Other
// scenes need nothing: `complete` at once.
export function newHistory() {
  return { after: 0, start: null, l0: undefined, complete: false };
}

// Reads the events after h.after into h, and once the experiment's start action is found, L0
// from the samples: the measurement at the last sample no later than that action (null when no
// sample came before it, as when the dam was pulled within the first sample interval). A run that
// is still going is read again next time; `complete` says when nothing more can change.
export async function readHistory(get, run, h) {
  if (h.complete) return h;
  const exp = EXPERIMENTS[run.scene];
  const l0 = exp && exp.l0;
  if (!l0) {
    h.complete = !!run.end_reason;
    return h;
  }
  for (let more = true; more;) {
    const page = await get(`/api/runs/${runRef(run)}?events_after=${h.after}&events_limit=1000`);
    for (const e of page.events) {
      const type = e.kind === 'action' && e.detail && e.detail.action ? e.detail.action.type : null;
      if (type === l0.action && !h.start) h.start = { t: e.t };
      h.after = e.id;
    }
    more = page.events_next !== null && page.events_next !== undefined && page.events.length > 0;
  }
  if (h.start && h.l0 === undefined) {
    const { columns, rows } = await get(`/api/runs/${runRef(run)}/samples`);
    const kt = columns.indexOf('t'), km = columns.indexOf(l0.measure);
    const before = km < 0 ? [] : rows.filter((row) => row[kt] <= h.start.t && Number.isFinite(row[km]));
    h.l0 = before.length ? before[before.length - 1][km] : null;
  }
  h.complete = !!run.end_reason && (!h.start || h.l0 !== undefined);
  return h;
}

// A row's figure for its scene's plot, or null: its own where the figure is over a window, the
// run's outcome in its last row otherwise (h: the run's history; L0 for a slump).
export function rowFigure(row, h, isWindowed) {
  const exp = EXPERIMENTS[row.run.scene];
  if (!exp || (!isWindowed && !row.last)) return null;
  return exp.runY(row, h ? h.l0 : undefined);
}
