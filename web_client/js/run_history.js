// What a stored run's figure belongs to, read from its record (GET /api/runs/{id}, its events
// and samples), for the class dashboard and the results page alike. No DOM: `get(path)` fetches
// JSON, so tests/unit/test_theory.mjs checks it in node against a made-up record.
import { EXPERIMENTS } from './theory.js';
import { runRef } from './node.js';

// A run records the parameters it started with; a change while it ran (a slider, a teacher's
// push) is a parameter_changed event, and its results belong to the parameters it ended with.
// A slump's column is built at the start or a reset, and its runout counts from L0, the front
// just before the dam was pulled (EXPERIMENTS.slump.l0 names the action and the measurement).
export function newHistory(run) {
  return { after: 0, params: { ...run.params }, built: { ...run.params }, start: null, l0: undefined, complete: false };
}

// Reads the events after h.after into h, and once the experiment's start action is found, L0
// from the samples: the measurement at the last sample no later than that action (null when no
// sample came before it, as when the dam was pulled within the first sample interval). A run
// that is still going is read again next time; `complete` says when nothing more can change.
export async function readHistory(get, run, h) {
  if (h.complete) return h;
  const exp = EXPERIMENTS[run.scene];
  const l0 = exp && exp.l0;
  for (let more = true; more;) {
    const page = await get(`/api/runs/${runRef(run)}?events_after=${h.after}&events_limit=1000`);
    for (const e of page.events) {
      const type = e.kind === 'action' && e.detail && e.detail.action ? e.detail.action.type : null;
      if (e.kind === 'parameter_changed' && e.detail && e.detail.params) Object.assign(h.params, e.detail.params);
      if (type === 'reset') h.built = { ...h.params };
      if (l0 && type === l0.action && !h.start) h.start = { t: e.t, params: { ...h.built } };
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

// The parameters a run's figure belongs to: a built scene's as its column stood when the start
// action came; any other's as they were at its end (h: its history, or none read).
export function figureParams(run, h) {
  const exp = EXPERIMENTS[run.scene];
  if (!h) return run.params;
  return exp && exp.built && h.start ? h.start.params : h.params;
}

// A finished run's figure for its scene's plot, or null (not there, or L0 unknown).
export function runFigure(run, h) {
  const exp = EXPERIMENTS[run.scene];
  return exp ? exp.runY(run, h ? h.l0 : undefined) : null;
}
