/* The record's REST documents: GET /api/runs as JSON or CSV, one run with a page of its events,
 * and a run's samples as JSON or CSV. Built only here, from the store's typed runs (store_run.h),
 * alike for the SQLite store and the cluster's results database. */
#ifndef GRAINLAB_API_RUNS_H
#define GRAINLAB_API_RUNS_H

#include "store.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* In a cluster's list: the answering node and the peers it has heard from lately. A run another
 * node left open is running only while that node answers: one it has not heard from has
 * "reachable": false (issue 32). NULL: no cluster. */
typedef struct api_reach {
  const char *self;
  const char *const *heard;
  int nheard;
} api_reach;

/* {"runs": [...], "total", "limit", "offset"}. Each run has the keys of store_run_fields (without
 * "node" where the store has none; a run's params and results are objects of numbers, its
 * segments an array or null) and "params_end": the last stretch's parameters, or the start's for a
 * run that kept none (recorded before the state version 10). A new reference. */
json_t *api_runs_json(const store_run_page *p, const api_reach *reach);
/* One run as in the list, with "samples", "events_total", "events" ({id, steps, t, at, kind,
 * detail} each) and "events_next" (the events_after of the next page; null at the end). */
json_t *api_run_detail_json(const store_run_detail *d);

/* Such a list (api_runs_json) as CSV text (malloc'd, *len bytes), a row per stretch of constant
 * parameters of each run (its segments; one row of start parameters and final results for a run
 * recorded before them): run, (node, when the runs have one), class, group, scene, label,
 * started_at, ended_at, end_reason, reset_of, segment (1, 2, ...), from_t, to_t (simulated
 * seconds), changed (what changed at its start, "name=value ..."), then a param.NAME column per
 * parameter in force and a result.NAME column per result measured in it, found in the list (each
 * set sorted by name); empty where a row has none. Numbers in their shortest exact form. 0, or -1
 * when memory runs out. */
int api_runs_csv(const json_t *list, char **out, size_t *len);

/* Run `id`'s samples as JSON ({"run_id", "sample_steps", "sample_seconds", "columns": [t, steps,
 * state, the scene's measurements, param.NAME of each parameter in force], "rows": [[...]]}) or
 * CSV text with the same columns; malloc'd, *len bytes. The store's status with err. */
store_status api_samples_text(store *st, int64_t id, const store_access *a, bool csv, char **out,
                              size_t *len, store_error *err);

/* One CSV cell (RFC 4180): a number as the shortest text that reads back as the same double, text
 * quoted where it must be and never read as a formula, null empty (api_csv.c). */
void api_csv_field(FILE *f, const json_t *v);
void api_csv_number(FILE *f, double x);

#endif
