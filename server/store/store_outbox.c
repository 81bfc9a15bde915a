/* The SQLite side of the outbox (issue 20, schema/migrations/009): turning it on and off, reading
 * a batch of entries with the rows they name, and which of this store's sessions and classes a
 * token opens (what the cluster's listing may show it, decided here since tokens and their hashes
 * never leave the node). The shipper (store_pg.c) reads with a connection of its own; deleting
 * shipped entries is the writer's (store__outbox_trim), so there stays one writer. */
#define _GNU_SOURCE
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const id_key[] = {"id", NULL};
static const char *const session_columns[] = {"id", "private", "created_at", "ended_at", NULL};
static const char *const run_columns[] = {"id",
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
                                          "events_dropped",
                                          "samples_dropped",
                                          "class_id",
                                          "group_name",
                                          "sample_steps",
                                          "reset_of",
                                          "state_version",
                                          "segments",
                                          NULL};
/* no code (it admits students) and no teacher_hash */
static const char *const class_columns[] = {"id",      "name",     "private", "created_at",
                                            "ends_at", "ended_at", NULL};
static const char *const group_key[] = {"class_id", "name", NULL};
static const char *const group_columns[] = {"class_id", "name", "created_at", NULL};

/* in the order a backfill queues them, which PostgreSQL does not depend on (no foreign keys
 * there) but a reader of the outbox may find natural: classes, groups, sessions, runs */
const store_shipped store__shipped[] = {
    {"class", "classes", id_key, class_columns},
    {"group", "groups", group_key, group_columns},
    {"session", "sessions", id_key, session_columns},
    {"run", "runs", id_key, run_columns},
};
const int store__shipped_count = (int)(sizeof store__shipped / sizeof store__shipped[0]);

int store__outbox_mode(sqlite3 *db, bool on, char *err, size_t errlen) {
  int64_t enabled = 0, queued = 0;
  if (store__int_query(db, "SELECT enabled FROM outbox_state", &enabled) != 0 ||
      store__int_query(db, "SELECT count(*) FROM outbox", &queued) != 0) {
    snprintf(err, errlen, "cannot read the outbox: %s", sqlite3_errmsg(db));
    return -1;
  }
  if ((enabled != 0) == on && (on || queued == 0)) {
    return 0;
  }
  /* on: every row once, numbered after the counter; off: nothing kept (turning it on again
   * queues everything anew) */
  static const char on_sql[] =
      "UPDATE outbox_state SET enabled = 1;"
      "DELETE FROM outbox;"
      "INSERT INTO outbox (seq, kind, ref, name) SELECT (SELECT last_seq FROM outbox_state) + "
      "row_number() OVER (ORDER BY o, t, ref, name), kind, ref, name FROM ("
      "SELECT 0 AS o, created_at AS t, 'class' AS kind, id AS ref, '' AS name FROM classes "
      "UNION ALL SELECT 1, created_at, 'group', class_id, name FROM groups "
      "UNION ALL SELECT 2, created_at, 'session', id, '' FROM sessions "
      "UNION ALL SELECT 3, id, 'run', CAST(id AS TEXT), '' FROM runs);"
      "UPDATE outbox_state SET last_seq = last_seq + (SELECT count(*) FROM outbox);";
  static const char off_sql[] = "UPDATE outbox_state SET enabled = 0; DELETE FROM outbox;";
  if (store__exec(db, "BEGIN IMMEDIATE", err, errlen) != 0) {
    return -1;
  }
  if (store__exec(db, on ? on_sql : off_sql, err, errlen) != 0 ||
      store__exec(db, "COMMIT", err, errlen) != 0) {
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
  }
  return 0;
}

int store__outbox_instance(sqlite3 *db, char out[17]) {
  sqlite3_stmt *q = NULL;
  int rc = -1;
  if (sqlite3_prepare_v2(db, "SELECT instance FROM outbox_state", -1, &q, NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW && sqlite3_column_bytes(q, 0) == 16) {
    memcpy(out, sqlite3_column_text(q, 0), 16);
    out[16] = '\0';
    rc = 0;
  }
  sqlite3_finalize(q);
  return rc;
}

int64_t store__outbox_last_seq(sqlite3 *db) {
  int64_t v = 0;
  return store__int_query(db, "SELECT last_seq FROM outbox_state", &v) == 0 ? v : -1;
}

int64_t store__outbox_depth(sqlite3 *db, int64_t after) {
  sqlite3_stmt *q = NULL;
  int64_t n = -1;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM outbox WHERE seq > ?", -1, &q, NULL) ==
      SQLITE_OK) {
    sqlite3_bind_int64(q, 1, after);
    if (sqlite3_step(q) == SQLITE_ROW) {
      n = sqlite3_column_int64(q, 0);
    }
  }
  sqlite3_finalize(q);
  return n;
}

/* "SELECT columns FROM table WHERE key = ? AND ..." of one kind; the reason in err. */
static sqlite3_stmt *prepare_row(sqlite3 *db, const store_shipped *k, char *err, size_t errlen) {
  char sql[1024];
  size_t len = (size_t)snprintf(sql, sizeof sql, "SELECT ");
  for (int c = 0; k->columns[c]; c++) {
    len += (size_t)snprintf(sql + len, sizeof sql - len, "%s%s", c ? ", " : "", k->columns[c]);
  }
  len += (size_t)snprintf(sql + len, sizeof sql - len, " FROM %s WHERE ", k->table);
  for (int c = 0; k->keys[c]; c++) {
    len += (size_t)snprintf(sql + len, sizeof sql - len, "%s%s = ?", c ? " AND " : "", k->keys[c]);
  }
  sqlite3_stmt *q = NULL;
  if (len >= sizeof sql || sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
    snprintf(err, errlen, "cannot read %s: %s", k->table, sqlite3_errmsg(db));
    sqlite3_finalize(q);
    return NULL;
  }
  return q;
}

/* name → value of a run's run_params or run_results, from a prepared "SELECT name, value ...
 * WHERE run_id = ?". */
static json_t *values_of(sqlite3_stmt *q, int64_t run) {
  json_t *o = json_object();
  sqlite3_bind_int64(q, 1, run);
  while (sqlite3_step(q) == SQLITE_ROW) {
    json_object_set_new(o, (const char *)sqlite3_column_text(q, 0),
                        json_real(sqlite3_column_double(q, 1)));
  }
  sqlite3_reset(q);
  return o;
}

int store__outbox_read(sqlite3 *db, int64_t after, int max, json_t **rows, int64_t *last,
                       int *entries, char *err, size_t errlen) {
  *rows = json_array();
  *last = after;
  *entries = 0;
  sqlite3_stmt *row_q[8] = {NULL}, *entries_q = NULL, *params_q = NULL, *results_q = NULL;
  int rc = -1;
  /* one read transaction: the entries and the rows they name as of one moment (a change
   * committed after it has an entry of its own, after these) */
  if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
    snprintf(err, errlen, "cannot read the outbox: %s", sqlite3_errmsg(db));
    return -1;
  }
  for (int k = 0; k < store__shipped_count; k++) {
    if (!(row_q[k] = prepare_row(db, &store__shipped[k], err, errlen))) {
      goto done;
    }
  }
  if (sqlite3_prepare_v2(db,
                         "SELECT seq, kind, ref, name FROM outbox WHERE seq > ? ORDER BY seq "
                         "LIMIT ?",
                         -1, &entries_q, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "SELECT name, value FROM run_params WHERE run_id = ?", -1, &params_q,
                         NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "SELECT name, value FROM run_results WHERE run_id = ?", -1, &results_q,
                         NULL) != SQLITE_OK) {
    snprintf(err, errlen, "cannot read the outbox: %s", sqlite3_errmsg(db));
    goto done;
  }
  sqlite3_bind_int64(entries_q, 1, after);
  sqlite3_bind_int(entries_q, 2, max);
  int step;
  while ((step = sqlite3_step(entries_q)) == SQLITE_ROW) {
    *last = sqlite3_column_int64(entries_q, 0);
    (*entries)++;
    const char *kind = (const char *)sqlite3_column_text(entries_q, 1);
    const char *ref = (const char *)sqlite3_column_text(entries_q, 2);
    const char *name = (const char *)sqlite3_column_text(entries_q, 3);
    int k = 0;
    while (k < store__shipped_count && strcmp(store__shipped[k].kind, kind) != 0) {
      k++;
    }
    if (k == store__shipped_count) {
      continue; /* the table's CHECK allows none other */
    }
    const bool run = strcmp(kind, "run") == 0;
    sqlite3_stmt *q = row_q[k];
    if (run) {
      sqlite3_bind_int64(q, 1, strtoll(ref, NULL, 10));
    } else {
      sqlite3_bind_text(q, 1, ref, -1, SQLITE_TRANSIENT);
      if (store__shipped[k].keys[1]) {
        sqlite3_bind_text(q, 2, name, -1, SQLITE_TRANSIENT);
      }
    }
    if (sqlite3_step(q) == SQLITE_ROW) {
      json_t *row = json_object();
      for (int c = 0; store__shipped[k].columns[c]; c++) {
        json_object_set_new(row, store__shipped[k].columns[c], store__column_json(q, c));
      }
      json_t *item = json_pack("{s:s, s:o}", "kind", kind, "row", row);
      if (run) {
        const int64_t id = sqlite3_column_int64(q, 0);
        json_object_set_new(item, "param_values", values_of(params_q, id));
        json_object_set_new(item, "result_values", values_of(results_q, id));
      }
      json_array_append_new(*rows, item);
    }
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
  }
  if (step != SQLITE_DONE) {
    snprintf(err, errlen, "cannot read the outbox: %s", sqlite3_errmsg(db));
    goto done;
  }
  rc = 0;
done:
  for (int k = 0; k < store__shipped_count; k++) {
    sqlite3_finalize(row_q[k]);
  }
  sqlite3_finalize(entries_q);
  sqlite3_finalize(params_q);
  sqlite3_finalize(results_q);
  sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  if (rc != 0) {
    json_decref(*rows);
    *rows = NULL;
    *last = after;
    *entries = 0;
  }
  return rc;
}

store_status store__token_opens(store *st, const store_access *a, json_t **sessions,
                                json_t **classes, store_error *err) {
  *sessions = json_array();
  *classes = json_array();
  if (!a->token_sha256[0]) {
    return STORE_OK;
  }
  store_reader *rd = store__take_reader(st);
  static const char *const sql[2] = {
      "SELECT id FROM sessions WHERE private = 1 AND (viewer_hash = ?1 OR control_hash = ?1)",
      "SELECT id FROM classes WHERE teacher_hash = ?1"};
  json_t *into[2] = {*sessions, *classes};
  int rc = SQLITE_DONE;
  for (int k = 0; k < 2 && rc == SQLITE_DONE; k++) {
    sqlite3_stmt *q = NULL;
    rc = sqlite3_prepare_v2(rd->db, sql[k], -1, &q, NULL) == SQLITE_OK ? SQLITE_ROW : SQLITE_ERROR;
    if (rc == SQLITE_ROW) {
      sqlite3_bind_text(q, 1, a->token_sha256, -1, SQLITE_TRANSIENT);
      while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        json_array_append_new(into[k], json_string((const char *)sqlite3_column_text(q, 0)));
      }
    }
    sqlite3_finalize(q);
  }
  if (rc != SQLITE_DONE) {
    store__fail(err, STORE_E_IO, "store_error", "", "%s", sqlite3_errmsg(rd->db));
  }
  store__give_reader(rd);
  return rc == SQLITE_DONE ? STORE_OK : err->status;
}
