/* The store's queries for the REST API (see store.h): the filtered, sorted, paged list of runs,
 * one run with its results and a page of its events, and a run's samples, as typed values
 * (store_run.h) that the API turns into JSON or CSV. Each
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

/* The SQLite list's results: a JSON object of name → value (json_group_object). */
static const char results_sql[] =
    "(SELECT json_group_object(name, value) FROM run_results WHERE run_id = r.id)";

static char *copy_text(sqlite3_stmt *q, int c) {
  const char *text = (const char *)sqlite3_column_text(q, c);
  return text ? strdup(text) : NULL;
}

/* A row of a query that selected store_run_select's columns; the node is the store's own. */
static void read_run(sqlite3_stmt *q, const char *node, store_run *r) {
  for (int k = 0; k < STORE_RUN_FIELD_COUNT; k++) {
    store_value *v = &r->f[k];
    *v = (store_value){.null = true};
    if (k == STORE_RUN_NODE) {
      v->text = node[0] ? strdup(node) : NULL;
      v->null = !v->text;
      continue;
    }
    if (sqlite3_column_type(q, k) == SQLITE_NULL) {
      continue;
    }
    switch (store_run_fields[k].kind) {
    case STORE_INT:
      v->i = sqlite3_column_int64(q, k);
      v->null = false;
      break;
    case STORE_REAL:
      v->r = sqlite3_column_double(q, k);
      v->null = false;
      break;
    default:
      v->text = copy_text(q, k);
      v->null = !v->text;
      break;
    }
  }
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
                             store_run_page *out, store_error *err) {
  *out = (store_run_page){.limit = f->limit, .offset = f->offset};
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
  char select[1024];
  if (store_run_select("NULL", results_sql, select, sizeof select) == 0) {
    add(&sql, select);
  } else {
    sql.overflow = true;
  }
  add(&sql, " FROM runs r");
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
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    if (out->count == (size_t)f->limit) {
      break; /* LIMIT says so; the array is sized by it */
    }
    if (!out->runs && !(out->runs = calloc((size_t)f->limit, sizeof *out->runs))) {
      rc = SQLITE_NOMEM;
      break;
    }
    read_run(q, st->node, &out->runs[out->count++]);
  }
  if (rc == SQLITE_ROW) {
    rc = SQLITE_DONE;
  }
  int64_t total = 0;
  if (rc == SQLITE_DONE && sqlite3_step(c) == SQLITE_ROW) {
    total = sqlite3_column_int64(c, 0);
  }
  sqlite3_finalize(q);
  sqlite3_finalize(c);
  store__give_reader(rd);
  if (rc != SQLITE_DONE) {
    store_run_page_free(out);
    store__fail(err, STORE_E_IO, "store_error", "", "the query failed");
    return err->status;
  }
  out->total = total;
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
                           const store_events_page *page, store_run_detail *out, store_error *err) {
  *out = (store_run_detail){.samples = 0};
  if (store_sync(st, 2000) != STORE_OK) {
    return unavailable(st, err);
  }
  store_reader *rd = store__take_reader(st);
  if (run_visible(rd->db, id, a, NULL, err) != STORE_OK) {
    store__give_reader(rd);
    return err->status;
  }
  char sql[1536], select[1024];
  bool found = false;
  sqlite3_stmt *q = NULL;
  if (store_run_select("NULL", results_sql, select, sizeof select) == 0 &&
      snprintf(sql, sizeof sql,
               "%s, (SELECT count(*) FROM samples WHERE run_id = r.id), (SELECT count(*) FROM "
               "events WHERE run_id = r.id) FROM runs r WHERE r.id = ?",
               select) < (int)sizeof sql &&
      sqlite3_prepare_v2(rd->db, sql, -1, &q, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(q, 1, id);
    if (sqlite3_step(q) == SQLITE_ROW) {
      found = true;
      read_run(q, st->node, &out->run);
      out->samples = sqlite3_column_int64(q, STORE_RUN_FIELD_COUNT);
      out->events_total = sqlite3_column_int64(q, STORE_RUN_FIELD_COUNT + 1);
    }
  }
  sqlite3_finalize(q);
  if (!found) {
    store__give_reader(rd);
    store__fail(err, STORE_E_NOT_FOUND, "not_found", "id", "no run %lld", (long long)id);
    return err->status;
  }
  /* one page: a run's events are bounded (STORE_RUN_EVENTS_MAX), a reply more tightly; one row
   * past the page tells whether another follows */
  out->events = calloc((size_t)page->limit, sizeof *out->events);
  if (out->events &&
      sqlite3_prepare_v2(rd->db,
                         "SELECT id, steps, t, at, kind, detail FROM events WHERE run_id = ? AND "
                         "id > ? ORDER BY id LIMIT ?",
                         -1, &q, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, page->after);
    sqlite3_bind_int64(q, 3, (sqlite3_int64)page->limit + 1);
    while (sqlite3_step(q) == SQLITE_ROW) {
      if (out->nevents == (size_t)page->limit) {
        out->more = true;
        break;
      }
      store_event_row *e = &out->events[out->nevents++];
      *e = (store_event_row){sqlite3_column_int64(q, 0),
                             sqlite3_column_int64(q, 1),
                             sqlite3_column_double(q, 2),
                             sqlite3_column_double(q, 3),
                             copy_text(q, 4),
                             copy_text(q, 5)};
    }
    sqlite3_finalize(q);
  }
  store__give_reader(rd);
  if (!out->events) {
    store_run_detail_free(out);
    store__fail(err, STORE_E_IO, "store_error", "", "out of memory");
    return err->status;
  }
  return STORE_OK;
}

/* A stretch's parameters (its "params" object) as the scene's values, null where it has none. */
static void params_in_force(const json_t *segment, const grn_scene_info *scene, store_value *out) {
  const json_t *in_force = json_object_get(segment, "params");
  for (int k = 0; k < scene->param_count; k++) {
    const json_t *v = json_object_get(in_force, scene->params[k].name);
    out[k] = (store_value){.null = !json_is_number(v), .r = json_number_value(v)};
  }
}

store_status store_read_samples(store *st, int64_t id, const store_access *a,
                                const store_samples_sink *sink, store_error *err) {
  if (store_sync(st, 2000) != STORE_OK) {
    return unavailable(st, err);
  }
  store_reader *rd = store__take_reader(st);
  if (run_visible(rd->db, id, a, NULL, err) != STORE_OK) {
    store__give_reader(rd);
    return err->status;
  }
  sqlite3_stmt *q = NULL;
  store_samples_head head = {.run_id = id, .sample_steps = GRN_SAMPLE_STEPS};
  json_t *segments = NULL; /* the run's stretches of parameters: each sample's are in one */
  if (sqlite3_prepare_v2(rd->db, "SELECT scene, sample_steps, segments FROM runs WHERE id = ?", -1,
                         &q, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(q, 1, id);
    if (sqlite3_step(q) == SQLITE_ROW) {
      head.scene = grn_scene_find((const char *)sqlite3_column_text(q, 0));
      head.sample_steps = sqlite3_column_int64(q, 1);
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
  const grn_scene_info *scene = head.scene;
  if (!scene) {
    store__give_reader(rd);
    json_decref(segments);
    store__fail(err, STORE_E_NOT_FOUND, "not_found", "id", "no run %lld", (long long)id);
    return err->status;
  }
  head.params = segments != NULL;
  /* the scene's own measurements only, in the engine's order */
  sql_buf sql = {.len = 0};
  add(&sql, "SELECT t, steps, state");
  char paths[GRN_MEASURE_MAX][48];
  for (int k = 0; k < scene->measure_count; k++) {
    if (k != GRN_MEASURE_T) { /* t is the sample's own column */
      /* one member of the sample's JSON object (schema/migrations/004), NULL where absent; the
       * path is bound, and CAST keeps a hand-written whole number a REAL as the column was */
      snprintf(paths[head.nmeasures], sizeof paths[0], "$.%s", scene->measures[k].name);
      head.measures[head.nmeasures++] = k;
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
  for (int c = 0; c < head.nmeasures; c++) {
    sqlite3_bind_text(q, c + 1, paths[c], -1, SQLITE_STATIC);
  }
  sqlite3_bind_int64(q, head.nmeasures + 1, id);
  sink->head(sink->ctx, &head);
  store_value values[GRN_MEASURE_MAX], params[GRN_PARAM_MAX];
  size_t seg = 0; /* samples come in step order, and so do the stretches */
  if (segments) {
    params_in_force(json_array_get(segments, 0), scene, params);
  }
  while (sqlite3_step(q) == SQLITE_ROW) {
    /* a sample at a change's step was taken before it: the stretch that ends there is its */
    const int64_t steps = sqlite3_column_int64(q, 1);
    while (segments && seg + 1 < json_array_size(segments)) {
      const json_t *to = json_object_get(json_array_get(segments, seg), "to_steps");
      if (!json_is_integer(to) || steps <= json_integer_value(to)) {
        break;
      }
      params_in_force(json_array_get(segments, ++seg), scene, params);
    }
    for (int c = 0; c < head.nmeasures; c++) {
      values[c] = (store_value){.null = sqlite3_column_type(q, 3 + c) == SQLITE_NULL,
                                .r = sqlite3_column_double(q, 3 + c)};
    }
    const store_sample_row row = {sqlite3_column_double(q, 0), steps,
                                  (const char *)sqlite3_column_text(q, 2), values,
                                  segments ? params : NULL};
    sink->row(sink->ctx, &row);
  }
  json_decref(segments);
  sqlite3_finalize(q);
  store__give_reader(rd);
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
