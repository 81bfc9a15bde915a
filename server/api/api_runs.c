/* The record's REST documents (api_runs.h): the store's typed runs, events and samples as the JSON
 * and CSV that GET /api/runs and its sub-resources answer. */
#define _GNU_SOURCE
#include "api_runs.h"

#include <stdlib.h>
#include <string.h>

/* A parameters' or results' object: {} where there is none; numbers are REAL in the store, and
 * PostgreSQL prints a whole one without its ".0", so every number reads back as a real. */
static json_t *numbers(const store_value *v) {
  json_t *j = v->null ? NULL : json_loads(v->text, 0, NULL);
  if (!json_is_object(j)) {
    json_decref(j);
    return json_object();
  }
  const char *name;
  json_t *x;
  json_object_foreach(j, name, x) {
    if (json_is_integer(x)) {
      json_object_set_new(j, name, json_real((double)json_integer_value(x)));
    }
  }
  return j;
}

static json_t *value_json(const store_value *v, store_kind kind) {
  if (kind == STORE_NUMBERS) {
    return numbers(v);
  }
  if (v->null) {
    return json_null();
  }
  switch (kind) {
  case STORE_INT:
    return json_integer(v->i);
  case STORE_REAL:
    return json_real(v->r);
  case STORE_SEGMENTS: {
    json_t *j = json_loads(v->text, 0, NULL);
    if (json_is_array(j)) {
      return j;
    }
    json_decref(j);
    return json_null();
  }
  default:
    return json_string(v->text);
  }
}

static json_t *run_json(const store_run *r, const api_reach *reach) {
  json_t *run = json_object();
  for (int k = 0; k < STORE_RUN_FIELD_COUNT; k++) {
    if (k == STORE_RUN_NODE && r->f[k].null) {
      continue; /* a lone daemon's runs name no node */
    }
    json_object_set_new(run, store_run_fields[k].key,
                        value_json(&r->f[k], store_run_fields[k].kind));
  }
  const json_t *seg = json_object_get(run, "segments");
  const json_t *last = json_array_get(seg, json_array_size(seg) - 1);
  const json_t *end = last ? json_object_get(last, "params") : json_object_get(run, "params");
  json_object_set_new(run, "params_end", end ? json_deep_copy(end) : json_object());
  const store_value *node = &r->f[STORE_RUN_NODE];
  if (reach && !node->null && strcmp(node->text, reach->self) != 0 &&
      r->f[STORE_RUN_END_REASON].null) {
    bool heard = false;
    for (int p = 0; p < reach->nheard && !heard; p++) {
      heard = strcmp(reach->heard[p], node->text) == 0;
    }
    json_object_set_new(run, "reachable", json_boolean(heard));
  }
  return run;
}

json_t *api_runs_json(const store_run_page *p, const api_reach *reach) {
  json_t *runs = json_array();
  for (size_t k = 0; k < p->count; k++) {
    json_array_append_new(runs, run_json(&p->runs[k], reach));
  }
  return json_pack("{s:o, s:I, s:I, s:I}", "runs", runs, "total", (json_int_t)p->total, "limit",
                   (json_int_t)p->limit, "offset", (json_int_t)p->offset);
}

json_t *api_run_detail_json(const store_run_detail *d) {
  json_t *run = run_json(&d->run, NULL);
  json_t *events = json_array();
  for (size_t k = 0; k < d->nevents; k++) {
    const store_event_row *e = &d->events[k];
    json_t *detail = e->detail ? json_loads(e->detail, 0, NULL) : NULL;
    json_array_append_new(events, json_pack("{s:I, s:I, s:f, s:f, s:s?, s:o}", "id",
                                            (json_int_t)e->id, "steps", (json_int_t)e->steps, "t",
                                            e->t, "at", e->at, "kind", e->kind, "detail",
                                            json_is_object(detail) ? detail : json_object()));
    if (!json_is_object(detail)) {
      json_decref(detail);
    }
  }
  json_object_set_new(run, "samples", json_integer(d->samples));
  json_object_set_new(run, "events_total", json_integer(d->events_total));
  json_object_set_new(run, "events", events);
  json_object_set_new(run, "events_next",
                      d->more && d->nevents ? json_integer(d->events[d->nevents - 1].id)
                                            : json_null());
  return run;
}

/* ---- samples ------------------------------------------------------------------------------ */

typedef struct samples_out {
  bool csv;
  FILE *f;
  store_samples_head head;
  json_t *rows; /* JSON: the rows, dumped at the end */
} samples_out;

static void sample_head(void *ctx, const store_samples_head *h) {
  samples_out *o = ctx;
  o->head = *h;
  if (!o->csv) {
    return;
  }
  fputs("t,steps,state", o->f);
  for (int c = 0; c < h->nmeasures; c++) {
    fprintf(o->f, ",%s", h->scene->measures[h->measures[c]].name);
  }
  for (int k = 0; h->params && k < h->scene->param_count; k++) {
    fprintf(o->f, ",param.%s", h->scene->params[k].name);
  }
  fputs("\r\n", o->f);
}

static void sample_row(void *ctx, const store_sample_row *r) {
  samples_out *o = ctx;
  const int nparams = r->param ? o->head.scene->param_count : 0;
  if (o->csv) {
    fprintf(o->f, "%.17g,%lld,%s", r->t, (long long)r->steps, r->state ? r->state : "");
    for (int c = 0; c < o->head.nmeasures; c++) {
      if (r->value[c].null) {
        fputc(',', o->f);
      } else {
        fprintf(o->f, ",%.17g", r->value[c].r);
      }
    }
    for (int k = 0; k < nparams; k++) {
      fputc(',', o->f);
      if (!r->param[k].null) {
        api_csv_number(o->f, r->param[k].r);
      }
    }
    fputs("\r\n", o->f);
    return;
  }
  json_t *row = json_pack("[f, I, s?]", r->t, (json_int_t)r->steps, r->state);
  for (int c = 0; c < o->head.nmeasures; c++) {
    json_array_append_new(row, r->value[c].null ? json_null() : json_real(r->value[c].r));
  }
  for (int k = 0; k < nparams; k++) {
    json_array_append_new(row, r->param[k].null ? json_null() : json_real(r->param[k].r));
  }
  json_array_append_new(o->rows, row);
}

store_status api_samples_text(store *st, int64_t id, const store_access *a, bool csv, char **out,
                              size_t *len, store_error *err) {
  *out = NULL;
  *len = 0;
  samples_out o = {.csv = csv, .f = open_memstream(out, len), .rows = csv ? NULL : json_array()};
  if (!o.f) {
    json_decref(o.rows);
    *err = (store_error){STORE_E_IO, "store_error", "", "out of memory"};
    return err->status;
  }
  const store_samples_sink sink = {sample_head, sample_row, &o};
  const store_status rc = store_read_samples(st, id, a, &sink, err);
  if (rc == STORE_OK && !csv) {
    const store_samples_head *h = &o.head;
    json_t *names = json_pack("[s, s, s]", "t", "steps", "state");
    for (int c = 0; c < h->nmeasures; c++) {
      json_array_append_new(names, json_string(h->scene->measures[h->measures[c]].name));
    }
    for (int k = 0; h->params && k < h->scene->param_count; k++) {
      char pname[64];
      snprintf(pname, sizeof pname, "param.%s", h->scene->params[k].name);
      json_array_append_new(names, json_string(pname));
    }
    json_t *doc =
        json_pack("{s:I, s:I, s:f, s:o, s:O}", "run_id", (json_int_t)id, "sample_steps",
                  (json_int_t)h->sample_steps, "sample_seconds",
                  (double)h->sample_steps * GRN_STEP_SECONDS, "columns", names, "rows", o.rows);
    char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(doc);
    fputs(text ? text : "{}", o.f);
    free(text);
  }
  json_decref(o.rows);
  fclose(o.f);
  if (rc != STORE_OK) {
    free(*out);
    *out = NULL;
    *len = 0;
  }
  return rc;
}
