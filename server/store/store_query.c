/* The store's queries for the REST API (see store.h): the filtered, sorted, paged list of runs,
 * one run with its results and events, and a run's samples as JSON or CSV. Each reads on one of
 * the store's read connections after the writer has committed what was queued before it. */
#define _GNU_SOURCE
#include "store_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_MAX 500 /* rows a list request may ask for */

static json_t *column_json(sqlite3_stmt *q, int c) {
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

/* A strict decimal number (as the engine parses them), the whole string. */
static bool number_arg(const char *s, double *out) {
  return grn_parse_number(s, out) == GRN_OK;
}

/* A time bound: Unix seconds or an ISO 8601 UTC time "YYYY-MM-DDTHH:MM:SS[Z]". */
static bool time_arg(const char *s, double *out) {
  if (number_arg(s, out)) {
    return true;
  }
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end || (*end && strcmp(end, "Z") != 0)) {
    return false;
  }
  *out = (double)timegm(&tm);
  return true;
}

/* A name that may follow "param." or "result.": letters, digits and '_' only. */
static bool name_ok(const char *s) {
  const size_t n = strlen(s);
  return n > 0 && n < 32 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
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

enum { B_TEXT, B_REAL };
typedef struct binding {
  int kind;
  const char *text; /* points into the query or names[] below, both alive until the end */
  double real;
} binding;

#define MAX_FILTERS 24

int store_list_runs(store *st, json_t *query, json_t **out, store_error *err) {
  sql_buf where = {.len = 0}, order = {.len = 0};
  binding bind[MAX_FILTERS * 2];
  char names[MAX_FILTERS][40], sort_name[40] = "";
  int nb = 0, filters = 0;
  long limit = 50, offset = 0;
  add(&where, " WHERE 1");
  add(&order, " ORDER BY r.started_at DESC, r.id DESC");
  const char *key;
  json_t *v;
  json_object_foreach(query, key, v) {
    const char *val = json_string_value(v);
    double x = 0;
    if (++filters > MAX_FILTERS) {
      api_fail(err, 400, "too_many_filters", key, "at most %d query arguments", MAX_FILTERS);
      return -1;
    }
    if (strcmp(key, "scene") == 0 || strcmp(key, "label") == 0 || strcmp(key, "end_reason") == 0 ||
        strcmp(key, "session") == 0) {
      if (strlen(val) > 63) {
        api_fail(err, 400, "too_long", key, "'%s' is limited to 63 characters", key);
        return -1;
      }
      if (strcmp(key, "scene") == 0 && !grn_scene_find(val)) {
        api_fail(err, 400, "unknown_scene", key, "no scene '%.40s' (GET /api/scenes lists them)",
                 val);
        return -1;
      }
      if (strcmp(key, "end_reason") == 0 && strcmp(val, "finished") != 0 &&
          strcmp(val, "stopped") != 0 && strcmp(val, "switched") != 0 &&
          strcmp(val, "deleted") != 0 && strcmp(val, "failed") != 0 &&
          strcmp(val, "interrupted") != 0) {
        api_fail(err, 400, "out_of_range", key,
                 "end_reason is finished, stopped, switched, deleted, failed or interrupted");
        return -1;
      }
      add(&where, strcmp(key, "scene") == 0     ? " AND r.scene = ?"
                  : strcmp(key, "label") == 0   ? " AND r.label = ?"
                  : strcmp(key, "session") == 0 ? " AND r.session_id = ?"
                                                : " AND r.end_reason = ?");
      bind[nb++] = (binding){B_TEXT, val, 0};
    } else if (strcmp(key, "from") == 0 || strcmp(key, "to") == 0) {
      if (!time_arg(val, &x)) {
        api_fail(err, 400, "bad_time", key,
                 "'%s' must be Unix seconds or an ISO 8601 UTC time (2026-12-02T10:00:00Z)", key);
        return -1;
      }
      add(&where, strcmp(key, "from") == 0 ? " AND r.started_at >= ?" : " AND r.started_at < ?");
      bind[nb++] = (binding){B_REAL, NULL, x};
    } else if (strcmp(key, "limit") == 0 || strcmp(key, "offset") == 0) {
      if (!number_arg(val, &x) || x != floor(x) || x < (strcmp(key, "limit") == 0 ? 1 : 0) ||
          x > (strcmp(key, "limit") == 0 ? PAGE_MAX : 1e9)) {
        api_fail(err, 400, "out_of_range", key, "'%s' must be a whole number in %s", key,
                 strcmp(key, "limit") == 0 ? "1..500" : "0..1000000000");
        return -1;
      }
      *(strcmp(key, "limit") == 0 ? &limit : &offset) = (long)x;
    } else if (strcmp(key, "sort") == 0) {
      /* a fixed set of orders: the client picks one by name, never supplies SQL */
      const bool desc = val[0] == '-';
      const char *by = desc ? val + 1 : val;
      order.len = 0;
      if (strcmp(by, "started_at") == 0 || strcmp(by, "id") == 0) {
        add(&order, strcmp(by, "id") == 0 ? " ORDER BY r.id" : " ORDER BY r.started_at");
      } else if ((strncmp(by, "param.", 6) == 0 && name_ok(by + 6)) ||
                 (strncmp(by, "result.", 7) == 0 && name_ok(by + 7))) {
        const bool param = by[0] == 'p';
        add(&order,
            param ? " ORDER BY (SELECT value FROM run_params WHERE run_id = r.id AND name = ?)"
                  : " ORDER BY (SELECT value FROM run_results WHERE run_id = r.id AND name = ?)");
        /* the order's binding comes after the WHERE's */
        snprintf(sort_name, sizeof sort_name, "%s", param ? by + 6 : by + 7);
      } else {
        api_fail(err, 400, "bad_sort", "sort",
                 "sort by started_at, id, param.NAME or result.NAME, with '-' for descending");
        return -1;
      }
      add(&order, desc ? " DESC, r.id DESC" : " ASC, r.id ASC");
    } else if ((strncmp(key, "param.", 6) == 0 || strncmp(key, "result.", 7) == 0)) {
      /* param.NAME.min / .max, result.NAME.min / .max */
      const bool param = key[0] == 'p';
      char name[40];
      const char *rest = key + (param ? 6 : 7), *dot = strrchr(rest, '.');
      const size_t n = dot ? (size_t)(dot - rest) : 0;
      if (!dot || n >= sizeof name || (strcmp(dot, ".min") != 0 && strcmp(dot, ".max") != 0)) {
        api_fail(err, 400, "unknown_field", key, "use %s.NAME.min or %s.NAME.max",
                 param ? "param" : "result", param ? "param" : "result");
        return -1;
      }
      memcpy(name, rest, n);
      name[n] = '\0';
      if (!name_ok(name)) {
        api_fail(err, 400, "unknown_field", key, "'%s' is not a %s name", name,
                 param ? "parameter" : "result");
        return -1;
      }
      if (!number_arg(val, &x)) {
        api_fail(err, 400, "not_a_number", key, "'%s' must be a finite decimal number", key);
        return -1;
      }
      const bool min = strcmp(dot, ".min") == 0;
      add(&where, param ? (min ? " AND EXISTS (SELECT 1 FROM run_params p WHERE p.run_id = r.id "
                                 "AND p.name = ? AND p.value >= ?)"
                               : " AND EXISTS (SELECT 1 FROM run_params p WHERE p.run_id = r.id "
                                 "AND p.name = ? AND p.value <= ?)")
                        : (min ? " AND EXISTS (SELECT 1 FROM run_results p WHERE p.run_id = r.id "
                                 "AND p.name = ? AND p.value >= ?)"
                               : " AND EXISTS (SELECT 1 FROM run_results p WHERE p.run_id = r.id "
                                 "AND p.name = ? AND p.value <= ?)"));
      snprintf(names[filters - 1], sizeof names[0], "%s", name);
      bind[nb++] = (binding){B_TEXT, names[filters - 1], 0};
      bind[nb++] = (binding){B_REAL, NULL, x};
    } else {
      api_fail(err, 400, "unknown_field", key,
               "unknown query argument '%.60s' (scene, label, session, end_reason, from, to, "
               "param.NAME.min/max, result.NAME.min/max, sort, limit, offset)",
               key);
      return -1;
    }
  }
  sql_buf sql = {.len = 0};
  add(&sql, "SELECT r.id, r.session_id, r.label, r.scene, r.seed, r.grains, r.engine_version, "
            "r.params, r.started_at, r.ended_at, r.end_reason, r.end_steps, r.end_t, r.digest, "
            "(SELECT json_group_object(name, value) FROM run_results WHERE run_id = r.id) "
            "FROM runs r");
  add(&sql, where.text);
  add(&sql, order.text);
  add(&sql, " LIMIT ? OFFSET ?");
  sql_buf count = {.len = 0};
  add(&count, "SELECT count(*) FROM runs r");
  add(&count, where.text);
  if (sql.overflow || count.overflow) {
    api_fail(err, 400, "too_complex", "", "the query is too long");
    return -1;
  }
  store_sync(st, 2000);
  store_reader *rd = store__take_reader(st);
  sqlite3_stmt *q = NULL, *c = NULL;
  if (sqlite3_prepare_v2(rd->db, sql.text, -1, &q, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(rd->db, count.text, -1, &c, NULL) != SQLITE_OK) {
    api_fail(err, 500, "store_error", "", "%s", sqlite3_errmsg(rd->db));
    sqlite3_finalize(q);
    store__give_reader(rd);
    return -1;
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
  if (sort_name[0]) {
    sqlite3_bind_text(q, i++, sort_name, -1, SQLITE_TRANSIENT);
  }
  sqlite3_bind_int64(q, i++, limit);
  sqlite3_bind_int64(q, i, offset);
  json_t *runs = json_array();
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    json_t *row = json_object();
    static const char *const cols[] = {"id",         "session_id", "label",          "scene",
                                       "seed",       "grains",     "engine_version", "params",
                                       "started_at", "ended_at",   "end_reason",     "end_steps",
                                       "end_t",      "digest",     "results"};
    for (int k = 0; k < 15; k++) {
      if (k == 7 || k == 14) { /* JSON columns */
        const char *text = (const char *)sqlite3_column_text(q, k);
        json_t *parsed = text ? json_loads(text, 0, NULL) : NULL;
        json_object_set_new(row, cols[k], parsed ? parsed : json_object());
      } else {
        json_object_set_new(row, cols[k], column_json(q, k));
      }
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
    api_fail(err, 500, "store_error", "", "the query failed");
    return -1;
  }
  *out = json_pack("{s:o, s:I, s:i, s:i}", "runs", runs, "total", (json_int_t)total, "limit",
                   (int)limit, "offset", (int)offset);
  return 0;
}

static json_t *row_object(sqlite3_stmt *q) {
  json_t *row = json_object();
  for (int k = 0; k < sqlite3_column_count(q); k++) {
    json_object_set_new(row, sqlite3_column_name(q, k), column_json(q, k));
  }
  return row;
}

int store_get_run(store *st, int64_t id, json_t **out, store_error *err) {
  store_sync(st, 2000);
  store_reader *rd = store__take_reader(st);
  sqlite3_stmt *q = NULL;
  json_t *run = NULL;
  if (sqlite3_prepare_v2(rd->db,
                         "SELECT id, session_id, label, scene, seed, grains, engine_version, "
                         "params, started_at, ended_at, end_reason, end_steps, end_t, digest, "
                         "(SELECT count(*) FROM samples WHERE run_id = runs.id) AS samples "
                         "FROM runs WHERE id = ?",
                         -1, &q, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(q, 1, id);
    if (sqlite3_step(q) == SQLITE_ROW) {
      run = row_object(q);
      json_t *params = json_loads(json_string_value(json_object_get(run, "params")), 0, NULL);
      json_object_set_new(run, "params", params ? params : json_object());
    }
  }
  sqlite3_finalize(q);
  if (!run) {
    store__give_reader(rd);
    api_fail(err, 404, "not_found", "id", "no run %lld", (long long)id);
    return -1;
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
  if (sqlite3_prepare_v2(
          rd->db, "SELECT steps, t, at, kind, detail FROM events WHERE run_id = ? ORDER BY id", -1,
          &q, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(q, 1, id);
    while (sqlite3_step(q) == SQLITE_ROW) {
      json_t *e = json_pack("{s:I, s:f, s:f, s:s}", "steps", (json_int_t)sqlite3_column_int64(q, 0),
                            "t", sqlite3_column_double(q, 1), "at", sqlite3_column_double(q, 2),
                            "kind", (const char *)sqlite3_column_text(q, 3));
      json_t *detail = json_loads((const char *)sqlite3_column_text(q, 4), 0, NULL);
      json_object_set_new(e, "detail", detail ? detail : json_object());
      json_array_append_new(events, e);
    }
  }
  sqlite3_finalize(q);
  store__give_reader(rd);
  json_object_set_new(run, "results", results);
  json_object_set_new(run, "events", events);
  *out = run;
  return 0;
}

int store_samples(store *st, int64_t id, bool csv, char **out, size_t *len, store_error *err) {
  store_sync(st, 2000);
  store_reader *rd = store__take_reader(st);
  sqlite3_stmt *q = NULL;
  const grn_scene_info *scene = NULL;
  if (sqlite3_prepare_v2(rd->db, "SELECT scene FROM runs WHERE id = ?", -1, &q, NULL) ==
      SQLITE_OK) {
    sqlite3_bind_int64(q, 1, id);
    if (sqlite3_step(q) == SQLITE_ROW) {
      scene = grn_scene_find((const char *)sqlite3_column_text(q, 0));
    }
  }
  sqlite3_finalize(q);
  if (!scene) {
    store__give_reader(rd);
    api_fail(err, 404, "not_found", "id", "no run %lld", (long long)id);
    return -1;
  }
  /* the scene's own measurements only, in the engine's order */
  sql_buf sql = {.len = 0};
  add(&sql, "SELECT t, steps, state");
  int cols[GRN_MEASURE_COUNT], nc = 0;
  for (int k = 1; k < GRN_MEASURE_COUNT; k++) {
    if (scene->measures & (1u << k)) {
      cols[nc++] = k;
      add(&sql, ", ");
      add(&sql, grn_measure_name((grn_measure_key)k)); /* fixed names from the engine */
    }
  }
  add(&sql, " FROM samples WHERE run_id = ? ORDER BY steps");
  if (sql.overflow || sqlite3_prepare_v2(rd->db, sql.text, -1, &q, NULL) != SQLITE_OK) {
    store__give_reader(rd);
    api_fail(err, 500, "store_error", "", "%s", sqlite3_errmsg(rd->db));
    return -1;
  }
  sqlite3_bind_int64(q, 1, id);
  char *buf = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&buf, &size);
  json_t *rows = csv ? NULL : json_array();
  if (csv) {
    fputs("t,steps,state", f);
    for (int c = 0; c < nc; c++) {
      fprintf(f, ",%s", grn_measure_name((grn_measure_key)cols[c]));
    }
    fputs("\r\n", f);
  }
  while (sqlite3_step(q) == SQLITE_ROW) {
    if (csv) {
      fprintf(f, "%.17g,%lld,%s", sqlite3_column_double(q, 0),
              (long long)sqlite3_column_int64(q, 1), (const char *)sqlite3_column_text(q, 2));
      for (int c = 0; c < nc; c++) {
        if (sqlite3_column_type(q, 3 + c) == SQLITE_NULL) {
          fputc(',', f);
        } else {
          fprintf(f, ",%.17g", sqlite3_column_double(q, 3 + c));
        }
      }
      fputs("\r\n", f);
    } else {
      json_t *row = json_array();
      for (int c = 0; c < 3 + nc; c++) {
        json_array_append_new(row, column_json(q, c));
      }
      json_array_append_new(rows, row);
    }
  }
  sqlite3_finalize(q);
  store__give_reader(rd);
  if (!csv) {
    json_t *names = json_pack("[s, s, s]", "t", "steps", "state");
    for (int c = 0; c < nc; c++) {
      json_array_append_new(names, json_string(grn_measure_name((grn_measure_key)cols[c])));
    }
    json_t *doc =
        json_pack("{s:I, s:o, s:o}", "run_id", (json_int_t)id, "columns", names, "rows", rows);
    char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(doc);
    fputs(text ? text : "{}", f);
    free(text);
  }
  fclose(f);
  *out = buf;
  *len = size;
  return 0;
}
