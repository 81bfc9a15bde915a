/* The store's queries for the REST API (see store.h): the filtered, sorted, paged list of runs,
 * one run with its results and a page of its events, and a run's samples as JSON or CSV. Each
 * reads on one of the store's read connections after the writer has committed what was queued
 * before it, and only the runs the reader's access allows: a private session's runs need its
 * viewer or control token (their hashes, schema/migrations/005) or the admin's. */
#define _GNU_SOURCE
#include "store_internal.h"
#include "utc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *store__column_json(sqlite3_stmt *q, int c) {
  switch (sqlite3_column_type(q, c)) {
  case SQLITE_INTEGER:
    return json_integer(sqlite3_column_int64(q, c));
  case SQLITE_FLOAT:
    return json_real(sqlite3_column_double(q, c));
  case SQLITE_TEXT:
    return json_string((const char *)sqlite3_column_text(q, c));
  default:
    return json_null();
  }
}

void store__run_timeline(json_t *run) {
  json_t *seg = json_object_get(run, "segments");
  if (json_is_string(seg)) {
    json_t *parsed = json_loads(json_string_value(seg), 0, NULL);
    json_object_set_new(run, "segments", json_is_array(parsed) ? parsed : json_null());
    if (!json_is_array(parsed)) {
      json_decref(parsed);
    }
    seg = json_object_get(run, "segments");
  }
  const json_t *last = json_array_get(seg, json_array_size(seg) - 1);
  const json_t *end = last ? json_object_get(last, "params") : json_object_get(run, "params");
  json_object_set_new(run, "params_end", end ? json_deep_copy(end) : json_object());
}

typedef struct sql_buf {
  char text[4096];
  size_t len;
  bool overflow;
} sql_buf;

static void add(sql_buf *b, const char *fragment) {
  const size_t n = strlen(fragment);
  if (b->len + n + 1 > sizeof b->text) {
    b->overflow = true;
    return;
  }
  memcpy(b->text + b->len, fragment, n + 1);
  b->len += n;
}

/* Runs r the access may read: a public session's, a private one's with its viewer or control
 * token, a class's with its teacher token. Its three bindings are the token's hash (NULL without a
 * token, which matches nothing). The admin's access adds no condition. */
static const char visible_sql[] =
    " AND (EXISTS (SELECT 1 FROM sessions s WHERE s.id = r.session_id AND (s.private = 0 OR "
    "s.viewer_hash = ? OR s.control_hash = ?)) OR EXISTS (SELECT 1 FROM classes c WHERE "
    "c.id = r.class_id AND c.teacher_hash = ?))";

static const char *token_or_null(const store_access *a) {
  return a->token_sha256[0] ? a->token_sha256 : NULL;
}

static store_status unavailable(store *st, store_error *err) {
  char why[160];
  store_writable(st, why, sizeof why);
  store__fail(err, STORE_E_UNAVAILABLE, "store_unavailable", "",
              "the store cannot write now (%s); its records are kept and retried, try again later",
              why[0] ? why : "unknown");
  return err->status;
}

enum { B_TEXT, B_REAL };
typedef struct binding {
  int kind;
  const char *text; /* points into the filter, alive until the end */
  double real;
} binding;

/* Whether a class filter names a class the access may not list (a private class's runs are its
 * teacher's): true with err (STORE_E_NOT_FOUND, as for a class that does not exist, so class ids
 * cannot be probed) or with a read failure. */
static bool class_hidden(sqlite3 *db, const char *id, const store_access *a, store_error *err) {
  sqlite3_stmt *q = NULL;
  int rc = SQLITE_ERROR;
  bool visible = false;
  if (sqlite3_prepare_v2(db, "SELECT private = 0 OR teacher_hash = ? FROM classes WHERE id = ?", -1,
                         &q, NULL) == SQLITE_OK) {
    sqlite3_bind_text(q, 1, token_or_null(a), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, id, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(q);
    visible = rc == SQLITE_ROW && (a->admin || sqlite3_column_int(q, 0) == 1);
  }
  sqlite3_finalize(q);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    store__fail(err, STORE_E_IO, "store_error", "", "%s", sqlite3_errmsg(db));
    return true;
  }
  if (!visible) {
    store__fail(err, STORE_E_NOT_FOUND, "not_found", "class",
                "no class '%.40s' (a private class's runs need its teacher token)", id);
    return true;
  }
  return false;
}

store_status store_list_runs(store *st, const store_runs_filter *f, const store_access *a,
                             json_t **out, store_error *err) {
  if (st->pg) { /* the whole cluster's (store_pg.c) */
    return store__pg_list_runs(st, f, a, out, err);
  }
  sql_buf where = {.len = 0}, order = {.len = 0};
  binding bind[3 + 5 + 2 + 3 * STORE_FILTER_MAX_ARGS];
  int nb = 0;
  add(&where, " WHERE 1");
  if (!a->admin) {
    add(&where, visible_sql);
    for (int k = 0; k < 3; k++) {
      bind[nb++] = (binding){B_TEXT, token_or_null(a), 0};
    }
  }
  store_text_match texts[STORE_TEXT_MATCHES];
  store_filter_texts(f, texts);
  for (size_t k = 0; k < STORE_TEXT_MATCHES; k++) {
    if (texts[k].on) {
      add(&where, " AND ");
      add(&where, texts[k].column);
      add(&where, " = ?");
      bind[nb++] = (binding){B_TEXT, texts[k].value, 0};
    }
  }
  if (f->has_from) {
    add(&where, " AND r.started_at >= ?");
    bind[nb++] = (binding){B_REAL, NULL, f->from};
  }
  if (f->has_to) {
    add(&where, " AND r.started_at < ?");
    bind[nb++] = (binding){B_REAL, NULL, f->to};
  }
  /* a range is one index lookup in run_params / run_results (name, value) */
  for (int k = 0; k < f->nranges; k++) {
    const store_range *r = &f->range[k];
    add(&where, r->result ? " AND EXISTS (SELECT 1 FROM run_results p WHERE p.run_id = r.id "
                            "AND p.name = ?"
                          : " AND EXISTS (SELECT 1 FROM run_params p WHERE p.run_id = r.id "
                            "AND p.name = ?");
    bind[nb++] = (binding){B_TEXT, r->name, 0};
    if (r->has_min) {
      add(&where, " AND p.value >= ?");
      bind[nb++] = (binding){B_REAL, NULL, r->min};
    }
    if (r->has_max) {
      add(&where, " AND p.value <= ?");
      bind[nb++] = (binding){B_REAL, NULL, r->max};
    }
    add(&where, ")");
  }
  /* a fixed set of orders: the client picks one by name, never supplies SQL */
  switch (f->sort) {
  case STORE_SORT_ID:
    add(&order, " ORDER BY r.id");
    break;
  case STORE_SORT_PARAM:
    add(&order, " ORDER BY (SELECT value FROM run_params WHERE run_id = r.id AND name = ?)");
    break;
  case STORE_SORT_RESULT:
    add(&order, " ORDER BY (SELECT value FROM run_results WHERE run_id = r.id AND name = ?)");
    break;
  default:
    add(&order, " ORDER BY r.started_at");
    break;
  }
  add(&order, f->descending ? " DESC, r.id DESC" : " ASC, r.id ASC");
  const bool sort_by_name = f->sort == STORE_SORT_PARAM || f->sort == STORE_SORT_RESULT;
  sql_buf sql = {.len = 0};
  add(&sql, "SELECT r.id, r.session_id, r.label, r.scene, r.seed, r.grains, r.engine_version, "
            "r.params, r.started_at, r.ended_at, r.end_reason, r.end_steps, r.end_t, r.digest, "
            "(SELECT json_group_object(name, value) FROM run_results WHERE run_id = r.id), "
            "r.events_dropped, r.samples_dropped, r.class_id, r.group_name, r.sample_steps, "
            "r.reset_of, r.state_version, r.segments FROM runs r");
  add(&sql, where.text);
  add(&sql, order.text);
  add(&sql, " LIMIT ? OFFSET ?");
  sql_buf count = {.len = 0};
  add(&count, "SELECT count(*) FROM runs r");
  add(&count, where.text);
  if (sql.overflow || count.overflow) {
    store__fail(err, STORE_E_BAD_FILTER, "too_complex", "", "the query is too long");
    return err->status;
  }
  if (store_sync(st, 2000) != STORE_OK) {
    return unavailable(st, err);
  }
  store_reader *rd = store__take_reader(st);
  if (f->has_class && class_hidden(rd->db, f->class_id, a, err)) {
    store__give_reader(rd);
    return err->status;
  }
  sqlite3_stmt *q = NULL, *c = NULL;
  if (sqlite3_prepare_v2(rd->db, sql.text, -1, &q, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(rd->db, count.text, -1, &c, NULL) != SQLITE_OK) {
    store__fail(err, STORE_E_IO, "store_error", "", "%s", sqlite3_errmsg(rd->db));
    sqlite3_finalize(q);
    store__give_reader(rd);
    return err->status;
  }
  int i = 1;
  for (int b = 0; b < nb; b++, i++) {
    for (sqlite3_stmt *s = q; s; s = s == q ? c : NULL) {
      if (bind[b].kind == B_TEXT) {
        sqlite3_bind_text(s, i, bind[b].text, -1, SQLITE_TRANSIENT);
      } else {
        sqlite3_bind_double(s, i, bind[b].real);
      }
    }
  }
  if (sort_by_name) { /* the order's binding comes after the WHERE's */
    sqlite3_bind_text(q, i++, f->sort_name, -1, SQLITE_TRANSIENT);
  }
  sqlite3_bind_int64(q, i++, f->limit);
  sqlite3_bind_int64(q, i, f->offset);
  json_t *runs = json_array();
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    json_t *row = json_object();
    static const char *const cols[] = {"id",
                                       "session_id",
                                       "label",
                                       "scene",
                                       "seed",
                                       "grains",
                                       "engine_version",
                                       "params",
                                       "started_at",
                                       "ended_at",
                                       "end_reason",
                                       "end_steps",
                                       "end_t",
                                       "digest",
                                       "results",
                                       "events_dropped",
                                       "samples_dropped",
                                       "class",
                                       "group",
                                       "sample_steps",
                                       "reset_of",
                                       "state_version",
                                       "segments"};
    for (int k = 0; k < (int)(sizeof cols / sizeof cols[0]); k++) {
      if (k == 7 || k == 14) { /* JSON columns */
        const char *text = (const char *)sqlite3_column_text(q, k);
        json_t *parsed = text ? json_loads(text, 0, NULL) : NULL;
        json_object_set_new(row, cols[k], parsed ? parsed : json_object());
      } else {
        json_object_set_new(row, cols[k], store__column_json(q, k));
      }
    }
    store__run_timeline(row);
    if (st->node[0]) {
      json_object_set_new(row, "node", json_string(st->node));
    }
    json_array_append_new(runs, row);
  }
  int64_t total = 0;
  if (rc == SQLITE_DONE && sqlite3_step(c) == SQLITE_ROW) {
    total = sqlite3_column_int64(c, 0);
  }
  sqlite3_finalize(q);
  sqlite3_finalize(c);
  store__give_reader(rd);
  if (rc != SQLITE_DONE) {
    json_decref(runs);
    store__fail(err, STORE_E_IO, "store_error", "", "the query failed");
    return err->status;
  }
  *out = json_pack("{s:o, s:I, s:i, s:i}", "runs", runs, "total", (json_int_t)total, "limit",
                   (int)f->limit, "offset", (int)f->offset);
  return STORE_OK;
}

static json_t *row_object(sqlite3_stmt *q) {
  json_t *row = json_object();
  for (int k = 0; k < sqlite3_column_count(q); k++) {
    json_object_set_new(row, sqlite3_column_name(q, k), store__column_json(q, k));
  }
  return row;
}

/* Whether run id exists and the access may read it (and whether its session is private): both
 * a missing and a hidden run are "no run", so ids cannot be probed. */
static store_status run_visible(sqlite3 *db, int64_t id, const store_access *a, bool *private_,
                                store_error *err) {
  sqlite3_stmt *q = NULL;
  int rc = SQLITE_ERROR;
  bool found = false;
  if (sqlite3_prepare_v2(db,
                         "SELECT s.private, s.private = 0 OR s.viewer_hash = ? OR s.control_hash = "
                         "? OR EXISTS (SELECT 1 FROM classes c WHERE c.id = r.class_id AND "
                         "c.teacher_hash = ?) FROM runs r JOIN sessions s ON s.id = r.session_id "
                         "WHERE r.id = ?",
                         -1, &q, NULL) == SQLITE_OK) {
    for (int k = 1; k <= 3; k++) {
      sqlite3_bind_text(q, k, token_or_null(a), -1, SQLITE_TRANSIENT);
    }
    sqlite3_bind_int64(q, 4, id);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
      found = a->admin || sqlite3_column_int(q, 1) == 1;
      if (private_) {
        *private_ = sqlite3_column_int(q, 0) != 0;
      }
    }
  }
  sqlite3_finalize(q);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    store__fail(err, STORE_E_IO, "store_error", "", "%s", sqlite3_errmsg(db));
    return err->status;
  }
  if (!found) {
    store__fail(err, STORE_E_NOT_FOUND, "not_found", "id", "no run %lld", (long long)id);
    return err->status;
  }
  return STORE_OK;
}

store_status store_run_access(store *st, int64_t id, const store_access *a, bool *private_,
                              store_error *err) {
  if (store_sync(st, 2000) != STORE_OK) {
    return unavailable(st, err);
  }
  store_reader *rd = store__take_reader(st);
  const store_status rc = run_visible(rd->db, id, a, private_, err);
  store__give_reader(rd);
  return rc;
}

store_status store_get_run(store *st, int64_t id, const store_access *a,
                           const store_events_page *page, json_t **out, store_error *err) {
  if (store_sync(st, 2000) != STORE_OK) {
    return unavailable(st, err);
  }
  store_reader *rd = store__take_reader(st);
  if (run_visible(rd->db, id, a, NULL, err) != STORE_OK) {
    store__give_reader(rd);
    return err->status;
  }
  sqlite3_stmt *q = NULL;
  json_t *run = NULL;
  if (sqlite3_prepare_v2(rd->db,
                         "SELECT id, session_id, label, scene, seed, grains, engine_version, "
                         "params, started_at, ended_at, end_reason, end_steps, end_t, digest, "
                         "events_dropped, samples_dropped, class_id AS class, group_name AS "
                         "\"group\", sample_steps, reset_of, state_version, segments, "
                         "(SELECT count(*) FROM samples WHERE run_id = runs.id) AS samples, "
                         "(SELECT count(*) FROM events WHERE run_id = runs.id) AS events_total "
                         "FROM runs WHERE id = ?",
                         -1, &q, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(q, 1, id);
    if (sqlite3_step(q) == SQLITE_ROW) {
      run = row_object(q);
      json_t *params = json_loads(json_string_value(json_object_get(run, "params")), 0, NULL);
      json_object_set_new(run, "params", params ? params : json_object());
      store__run_timeline(run);
    }
  }
  sqlite3_finalize(q);
  if (!run) {
    store__give_reader(rd);
    store__fail(err, STORE_E_NOT_FOUND, "not_found", "id", "no run %lld", (long long)id);
    return err->status;
  }
  json_t *results = json_object(), *events = json_array();
  if (sqlite3_prepare_v2(rd->db, "SELECT name, value FROM run_results WHERE run_id = ?", -1, &q,
                         NULL) == SQLITE_OK) {
    sqlite3_bind_int64(q, 1, id);
    while (sqlite3_step(q) == SQLITE_ROW) {
      json_object_set_new(results, (const char *)sqlite3_column_text(q, 0),
                          json_real(sqlite3_column_double(q, 1)));
    }
  }
  sqlite3_finalize(q);
  /* one page: a run's events are bounded (STORE_RUN_EVENTS_MAX), a reply more tightly; one row
   * past the page tells whether another follows */
  json_int_t last = 0;
  bool more = false;
  if (sqlite3_prepare_v2(rd->db,
                         "SELECT id, steps, t, at, kind, detail FROM events WHERE run_id = ? AND "
                         "id > ? ORDER BY id LIMIT ?",
                         -1, &q, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, page->after);
    sqlite3_bind_int64(q, 3, (sqlite3_int64)page->limit + 1);
    long got = 0;
    while (sqlite3_step(q) == SQLITE_ROW) {
      if (got++ == page->limit) {
        more = true;
        break;
      }
      last = (json_int_t)sqlite3_column_int64(q, 0);
      json_t *e =
          json_pack("{s:I, s:I, s:f, s:f, s:s}", "id", last, "steps",
                    (json_int_t)sqlite3_column_int64(q, 1), "t", sqlite3_column_double(q, 2), "at",
                    sqlite3_column_double(q, 3), "kind", (const char *)sqlite3_column_text(q, 4));
      json_t *detail = json_loads((const char *)sqlite3_column_text(q, 5), 0, NULL);
      json_object_set_new(e, "detail", detail ? detail : json_object());
      json_array_append_new(events, e);
    }
  }
  sqlite3_finalize(q);
  store__give_reader(rd);
  if (st->node[0]) {
    json_object_set_new(run, "node", json_string(st->node));
  }
  json_object_set_new(run, "results", results);
  json_object_set_new(run, "events", events);
  json_object_set_new(run, "events_next", more ? json_integer(last) : json_null());
  *out = run;
  return STORE_OK;
}

store_status store_samples(store *st, int64_t id, const store_access *a, bool csv, char **out,
                           size_t *len, store_error *err) {
  if (store_sync(st, 2000) != STORE_OK) {
    return unavailable(st, err);
  }
  store_reader *rd = store__take_reader(st);
  if (run_visible(rd->db, id, a, NULL, err) != STORE_OK) {
    store__give_reader(rd);
    return err->status;
  }
  sqlite3_stmt *q = NULL;
  const grn_scene_info *scene = NULL;
  json_int_t every = GRN_SAMPLE_STEPS;
  json_t *segments = NULL; /* the run's stretches of parameters: each sample's are in one */
  if (sqlite3_prepare_v2(rd->db, "SELECT scene, sample_steps, segments FROM runs WHERE id = ?", -1,
                         &q, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(q, 1, id);
    if (sqlite3_step(q) == SQLITE_ROW) {
      scene = grn_scene_find((const char *)sqlite3_column_text(q, 0));
      every = sqlite3_column_int64(q, 1);
      if (sqlite3_column_type(q, 2) == SQLITE_TEXT) {
        segments = json_loads((const char *)sqlite3_column_text(q, 2), 0, NULL);
      }
    }
  }
  sqlite3_finalize(q);
  if (!json_is_array(segments) || json_array_size(segments) == 0) {
    json_decref(segments); /* a run recorded before version 10: no parameter columns */
    segments = NULL;
  }
  const int nparams = segments && scene ? scene->param_count : 0;
  if (!scene) {
    store__give_reader(rd);
    json_decref(segments);
    store__fail(err, STORE_E_NOT_FOUND, "not_found", "id", "no run %lld", (long long)id);
    return err->status;
  }
  /* the scene's own measurements only, in the engine's order */
  sql_buf sql = {.len = 0};
  add(&sql, "SELECT t, steps, state");
  int cols[GRN_MEASURE_MAX], nc = 0;
  char paths[GRN_MEASURE_MAX][48];
  for (int k = 0; k < scene->measure_count; k++) {
    if (k != GRN_MEASURE_T) { /* t is the sample's own column */
      /* one member of the sample's JSON object (schema/migrations/004), NULL where absent; the
       * path is bound, and CAST keeps a hand-written whole number a REAL as the column was */
      snprintf(paths[nc], sizeof paths[nc], "$.%s", scene->measures[k].name);
      cols[nc++] = k;
      add(&sql, ", CAST(json_extract(measures, ?) AS REAL)");
    }
  }
  add(&sql, " FROM samples WHERE run_id = ? ORDER BY steps");
  if (sql.overflow || sqlite3_prepare_v2(rd->db, sql.text, -1, &q, NULL) != SQLITE_OK) {
    store__give_reader(rd);
    json_decref(segments);
    store__fail(err, STORE_E_IO, "store_error", "", "%s", sqlite3_errmsg(rd->db));
    return err->status;
  }
  for (int c = 0; c < nc; c++) {
    sqlite3_bind_text(q, c + 1, paths[c], -1, SQLITE_STATIC);
  }
  sqlite3_bind_int64(q, nc + 1, id);
  char *buf = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&buf, &size);
  json_t *rows = csv ? NULL : json_array();
  if (csv) {
    fputs("t,steps,state", f);
    for (int c = 0; c < nc; c++) {
      fprintf(f, ",%s", scene->measures[cols[c]].name);
    }
    for (int k = 0; k < nparams; k++) {
      fprintf(f, ",param.%s", scene->params[k].name);
    }
    fputs("\r\n", f);
  }
  size_t seg = 0; /* samples come in step order, and so do the stretches */
  while (sqlite3_step(q) == SQLITE_ROW) {
    /* a sample at a change's step was taken before it: the stretch that ends there is its */
    const json_int_t steps = sqlite3_column_int64(q, 1);
    while (segments && seg + 1 < json_array_size(segments)) {
      const json_t *to = json_object_get(json_array_get(segments, seg), "to_steps");
      if (!json_is_integer(to) || steps <= json_integer_value(to)) {
        break;
      }
      seg++;
    }
    const json_t *in_force =
        segments ? json_object_get(json_array_get(segments, seg), "params") : NULL;
    if (csv) {
      fprintf(f, "%.17g,%lld,%s", sqlite3_column_double(q, 0), (long long)steps,
              (const char *)sqlite3_column_text(q, 2));
      for (int c = 0; c < nc; c++) {
        if (sqlite3_column_type(q, 3 + c) == SQLITE_NULL) {
          fputc(',', f);
        } else {
          fprintf(f, ",%.17g", sqlite3_column_double(q, 3 + c));
        }
      }
      for (int k = 0; k < nparams; k++) {
        fputc(',', f);
        store__csv_field(f, json_object_get(in_force, scene->params[k].name));
      }
      fputs("\r\n", f);
    } else {
      json_t *row = json_array();
      for (int c = 0; c < 3 + nc; c++) {
        json_array_append_new(row, store__column_json(q, c));
      }
      for (int k = 0; k < nparams; k++) {
        const json_t *v = json_object_get(in_force, scene->params[k].name);
        json_array_append_new(row, v ? json_deep_copy(v) : json_null());
      }
      json_array_append_new(rows, row);
    }
  }
  json_decref(segments);
  sqlite3_finalize(q);
  store__give_reader(rd);
  if (!csv) {
    json_t *names = json_pack("[s, s, s]", "t", "steps", "state");
    for (int c = 0; c < nc; c++) {
      json_array_append_new(names, json_string(scene->measures[cols[c]].name));
    }
    for (int k = 0; k < nparams; k++) {
      char pname[64];
      snprintf(pname, sizeof pname, "param.%s", scene->params[k].name);
      json_array_append_new(names, json_string(pname));
    }
    json_t *doc = json_pack("{s:I, s:I, s:f, s:o, s:o}", "run_id", (json_int_t)id, "sample_steps",
                            every, "sample_seconds", (double)every * GRN_STEP_SECONDS, "columns",
                            names, "rows", rows);
    char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(doc);
    fputs(text ? text : "{}", f);
    free(text);
  }
  fclose(f);
  *out = buf;
  *len = size;
  return STORE_OK;
}

store_status store_load_classes(store *st, store_class_pick pick, const char *key, double since,
                                json_t **out, store_error *err) {
  if (store_sync(st, 2000) != STORE_OK) {
    return unavailable(st, err);
  }
  static const char *const where[] = {
      [STORE_CLASSES_LIVE] = "ended_at IS NULL OR ended_at >= ?1",
      [STORE_CLASS_ID] = "id = ?1",
      [STORE_CLASS_CODE] = "code = ?1",
  };
  char sql[400];
  snprintf(sql, sizeof sql,
           "SELECT id, code, name, scenes, max_groups, grain_budget, defaults, private, "
           "second_join, locked, spotlight, teacher_hash, created_at, ends_at, ended_at, seeds "
           "FROM classes WHERE %s ORDER BY created_at, id",
           where[pick]);
  store_reader *rd = store__take_reader(st);
  sqlite3_stmt *q = NULL, *g = NULL;
  json_t *list = json_array();
  int rc = SQLITE_ERROR;
  if (sqlite3_prepare_v2(rd->db, sql, -1, &q, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(rd->db,
                         "SELECT name, created_at FROM groups WHERE class_id = ? "
                         "ORDER BY created_at, name",
                         -1, &g, NULL) == SQLITE_OK) {
    if (pick == STORE_CLASSES_LIVE) {
      sqlite3_bind_double(q, 1, since);
    } else {
      sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
    }
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
      json_t *row = row_object(q);
      for (const char *const *k = (const char *const[]){"scenes", "defaults", NULL}; *k; k++) {
        json_t *parsed = json_loads(json_string_value(json_object_get(row, *k)), 0, NULL);
        json_object_set_new(row, *k, parsed ? parsed : json_null());
      }
      for (const char *const *k = (const char *const[]){"private", "locked", NULL}; *k; k++) {
        json_object_set_new(row, *k, json_boolean(json_integer_value(json_object_get(row, *k))));
      }
      json_t *groups = json_array();
      sqlite3_bind_text(g, 1, (const char *)sqlite3_column_text(q, 0), -1, SQLITE_TRANSIENT);
      while (sqlite3_step(g) == SQLITE_ROW) {
        json_array_append_new(groups, json_pack("{s:s, s:f}", "name",
                                                (const char *)sqlite3_column_text(g, 0),
                                                "joined_at", sqlite3_column_double(g, 1)));
      }
      sqlite3_reset(g);
      json_object_set_new(row, "groups", groups);
      json_array_append_new(list, row);
    }
  }
  if (rc != SQLITE_DONE) {
    store__fail(err, STORE_E_IO, "store_error", "", "%s", sqlite3_errmsg(rd->db));
  }
  sqlite3_finalize(q);
  sqlite3_finalize(g);
  store__give_reader(rd);
  if (rc != SQLITE_DONE) {
    json_decref(list);
    return err->status;
  }
  *out = list;
  return STORE_OK;
}
