/* The cluster's results database (issue 20): PostgreSQL through libpq. A shipper thread connects,
 * applies schema/postgres (versioned, under an advisory lock), and ships the outbox
 * (store_outbox.c) in order: one PostgreSQL transaction per batch of entries, each row upserted
 * by (node, key) as it is now in SQLite, and the entries deleted only after PostgreSQL committed
 * (at least once; a repeat is an upsert of the same row). While PostgreSQL cannot be reached the
 * entries wait in SQLite, on disk, and the shipper retries with a growing pause, logging once
 * when it loses the database and once when it has it back. GET /api/runs reads the whole
 * cluster from here (store_pg_sql.c builds its SQL) on a few connections of its own.
 * The URI's password never reaches a log or a message: they name the database as
 * user@host:port/dbname. */
#define _GNU_SOURCE
#include "log.h"
#include "store_internal.h"
#include "store_pg_sql.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* from schema/postgres, generated at build time */
extern const char *const grainlab_pg_schema[];
extern const int grainlab_pg_schema_count;

#define SHIP_BATCH 256      /* outbox entries per PostgreSQL transaction */
#define IDLE_MS 1000        /* the shipper looks at the outbox at least this often */
#define RETRY_MIN_MS 250    /* the first pause after a failure, doubled each time */
#define RETRY_MAX_MS 5000   /* the longest: how long a recovery may wait to be noticed */
#define STOP_MS 5000        /* what shutting down may spend shipping what is left */
#define FRESH_MS 1000       /* a listing waits this long, at most, for its own node's changes */
#define PG_READERS 2        /* connections for listings */
#define SCHEMA_LOCK 2020042 /* pg_advisory_xact_lock's key while a node applies the schema */

typedef struct pg_reader {
  pthread_mutex_t lock;
  PGconn *conn;
} pg_reader;

typedef struct store_pg store_pg;
struct store_pg {
  store *st;
  char uri[4096]; /* never logged: it may hold the password */
  char name[256]; /* user@host:port/dbname, for logs and messages */
  char instance[17];
  pthread_t thread;
  pthread_mutex_t lock; /* everything below */
  pthread_cond_t wake, shipped;
  bool stop, kicked;
  bool up;        /* the shipper's last attempt reached the database */
  bool schema_ok; /* the schema was applied once: listings may read */
  char why[512];  /* the last failure */
  int64_t cursor; /* outbox entries up to here are committed in PostgreSQL */
  uint64_t shipped_total, batches, failures;
  double last_ship;
  double down_since; /* the shipper's own */
  pg_reader readers[PG_READERS];
  unsigned next_reader;
};

/* ---- connections ---------------------------------------------------------------------------- */

/* PostgreSQL's notices (IF NOT EXISTS finding what exists) are not grainlabd's to print. */
static void quiet(void *arg, const char *message) {
  (void)arg;
  (void)message;
}

/* A connection with grainlabd's settings: libpq's defaults before the URI (which may override
 * them), keepalives so that a database that vanishes is noticed in seconds, floats printed
 * exactly, and a bound on every statement. NULL with the reason in why. */
static PGconn *pg_connect(const store_pg *pg, char *why, size_t whylen) {
  const char *const keys[] = {"connect_timeout",     "application_name", "keepalives_idle",
                              "keepalives_interval", "keepalives_count", "tcp_user_timeout",
                              "client_encoding",     "dbname",           NULL};
  const char *const values[] = {"3", "grainlabd", "10", "5", "3", "15000", "UTF8", pg->uri, NULL};
  PGconn *c = PQconnectdbParams(keys, values, 1);
  if (!c || PQstatus(c) != CONNECTION_OK) {
    store__pg_one_line(c ? PQerrorMessage(c) : "out of memory", why, whylen);
    PQfinish(c);
    return NULL;
  }
  PQsetNoticeProcessor(c, quiet, NULL); /* "already exists, skipping" and the like */
  PGresult *r = PQexec(c, "SET extra_float_digits = 3; SET statement_timeout = 15000");
  const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  if (!ok) {
    store__pg_one_line(PQresultErrorMessage(r), why, whylen);
  }
  PQclear(r);
  if (!ok) {
    PQfinish(c);
    return NULL;
  }
  return c;
}

/* One statement; 0, or -1 with PostgreSQL's reason. `out` (may be NULL) takes the result. */
static int pg_run(PGconn *c, const char *sql, int n, const char *const *values, PGresult **out,
                  char *why, size_t whylen) {
  PGresult *r = n > 0 ? PQexecParams(c, sql, n, NULL, values, NULL, NULL, 0) : PQexec(c, sql);
  const ExecStatusType s = PQresultStatus(r);
  if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
    store__pg_one_line(r ? PQresultErrorMessage(r) : PQerrorMessage(c), why, whylen);
    PQclear(r);
    return -1;
  }
  if (out) {
    *out = r;
  } else {
    PQclear(r);
  }
  return 0;
}

/* Ends a failed transaction; what went wrong is already told. */
static void rollback(PGconn *c) {
  PQclear(PQexec(c, "ROLLBACK"));
}

/* Applies the schema files PostgreSQL lacks and claims this node id for this store: one
 * transaction, one node at a time. 0, or -1 with the reason. */
static int pg_prepare(store_pg *pg, PGconn *c, char *why, size_t whylen) {
  char lock[64], when[32];
  snprintf(lock, sizeof lock, "SELECT pg_advisory_xact_lock(%d)", SCHEMA_LOCK);
  PGresult *r = NULL;
  if (pg_run(c, "BEGIN", 0, NULL, NULL, why, whylen) != 0 ||
      pg_run(c, lock, 0, NULL, NULL, why, whylen) != 0 ||
      pg_run(c,
             "CREATE TABLE IF NOT EXISTS grainlab_schema (version integer PRIMARY KEY, "
             "applied_at timestamptz NOT NULL DEFAULT now())",
             0, NULL, NULL, why, whylen) != 0 ||
      pg_run(c, "SELECT coalesce(max(version), 0) FROM grainlab_schema", 0, NULL, &r, why,
             whylen) != 0) {
    rollback(c);
    return -1;
  }
  const int version = (int)strtol(PQgetvalue(r, 0, 0), NULL, 10);
  PQclear(r);
  if (version > grainlab_pg_schema_count) {
    snprintf(why, whylen,
             "the results database has schema version %d, newer than this grainlabd's (%d)",
             version, grainlab_pg_schema_count);
    rollback(c);
    return -1;
  }
  for (int v = version; v < grainlab_pg_schema_count; v++) {
    char number[16];
    snprintf(number, sizeof number, "%d", v + 1);
    const char *const values[] = {number};
    if (pg_run(c, grainlab_pg_schema[v], 0, NULL, NULL, why, whylen) != 0 ||
        pg_run(c, "INSERT INTO grainlab_schema (version) VALUES ($1::integer)", 1, values, NULL,
               why, whylen) != 0) {
      rollback(c);
      return -1;
    }
  }
  snprintf(when, sizeof when, "%.6f", store__now_unix());
  const char *const node[] = {pg->st->node, pg->instance, when};
  if (pg_run(c,
             "INSERT INTO nodes (node, instance, first_shipped_at, last_shipped_at) VALUES ($1, "
             "$2, $3::float8, $3::float8) ON CONFLICT (node) DO NOTHING",
             3, node, NULL, why, whylen) != 0 ||
      pg_run(c, "SELECT instance FROM nodes WHERE node = $1", 1, node, &r, why, whylen) != 0) {
    rollback(c);
    return -1;
  }
  const bool ours = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), pg->instance) == 0;
  if (!ours) {
    snprintf(why, whylen,
             "node '%s' is recorded there by another store (instance %.16s; this data dir's is "
             "%s): two nodes share one --node, or this data dir is new. Nothing ships; give this "
             "node another id, or delete that node's rows if they are to be replaced",
             pg->st->node, PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "?", pg->instance);
  }
  PQclear(r);
  if (!ours || pg_run(c, "COMMIT", 0, NULL, NULL, why, whylen) != 0) {
    rollback(c);
    return -1;
  }
  return 0;
}

/* ---- shipping ------------------------------------------------------------------------------- */

/* A JSON value of the record as a text parameter (booleans are 0/1 there and read as such by
 * PostgreSQL); NULL for null. Numbers go into space (32 bytes). */
static const char *text_of(const json_t *v, char *space) {
  if (json_is_string(v)) {
    return json_string_value(v);
  }
  if (json_is_integer(v)) {
    snprintf(space, 32, "%lld", (long long)json_integer_value(v));
    return space;
  }
  if (json_is_real(v)) {
    snprintf(space, 32, "%.17g", json_real_value(v));
    return space;
  }
  return NULL;
}

/* "INSERT INTO table (node, columns) VALUES ($1, ...) ON CONFLICT (node, keys) DO UPDATE SET
 * each other column" of one kind of row. */
static void upsert_sql(const store_shipped *k, char *sql, size_t size) {
  size_t len = (size_t)snprintf(sql, size, "INSERT INTO %s (node", k->table);
  int n = 0;
  for (; k->columns[n]; n++) {
    len += (size_t)snprintf(sql + len, size - len, ", %s", k->columns[n]);
  }
  len += (size_t)snprintf(sql + len, size - len, ") VALUES ($1");
  for (int c = 0; c < n; c++) {
    len += (size_t)snprintf(sql + len, size - len, ", $%d", c + 2);
  }
  len += (size_t)snprintf(sql + len, size - len, ") ON CONFLICT (node");
  for (int c = 0; k->keys[c]; c++) {
    len += (size_t)snprintf(sql + len, size - len, ", %s", k->keys[c]);
  }
  len += (size_t)snprintf(sql + len, size - len, ") DO UPDATE SET ");
  bool first = true;
  for (int c = 0; c < n; c++) {
    bool key = false;
    for (int j = 0; k->keys[j]; j++) {
      key = key || strcmp(k->keys[j], k->columns[c]) == 0;
    }
    if (!key) {
      len += (size_t)snprintf(sql + len, size - len, "%s%s = excluded.%s", first ? "" : ", ",
                              k->columns[c], k->columns[c]);
      first = false;
    }
  }
}

/* name → value as two array literals (text[] and float8[]); -1 without memory. */
static int value_arrays(const json_t *values, char **names, char **numbers) {
  json_t *keys = json_array();
  size_t size = 3;
  const char *name;
  json_t *v;
  json_object_foreach((json_t *)values, name, v) {
    json_array_append_new(keys, json_string(name));
    size += 2 * strlen(name) + 4;
  }
  *names = malloc(size);
  *numbers = malloc(json_object_size(values) * 32 + 3);
  int rc = *names && *numbers && store_pg_text_array(keys, *names, size) == 0 ? 0 : -1;
  json_decref(keys);
  if (rc == 0) {
    size_t len = 0;
    (*numbers)[len++] = '{';
    json_object_foreach((json_t *)values, name, v) {
      len +=
          (size_t)snprintf(*numbers + len, 32, "%s%.17g", len > 1 ? "," : "", json_number_value(v));
    }
    snprintf(*numbers + len, 2, "}");
  }
  return rc;
}

/* A run's start parameters or results, each upserted. */
static int ship_values(PGconn *c, const char *table, const char *node, const char *run,
                       const json_t *values, char *why, size_t whylen) {
  if (json_object_size(values) == 0) {
    return 0;
  }
  char *names = NULL, *numbers = NULL, sql[320];
  if (value_arrays(values, &names, &numbers) != 0) {
    free(names);
    free(numbers);
    snprintf(why, whylen, "out of memory");
    return -1;
  }
  snprintf(sql, sizeof sql,
           "INSERT INTO %s (node, run_id, name, value) SELECT $1, $2::bigint, n, v FROM "
           "unnest($3::text[], $4::float8[]) AS t (n, v) ON CONFLICT (node, run_id, name) DO "
           "UPDATE SET value = excluded.value",
           table);
  const char *const params[] = {node, run, names, numbers};
  const int rc = pg_run(c, sql, 4, params, NULL, why, whylen);
  free(names);
  free(numbers);
  return rc;
}

/* One batch (store__outbox_read's rows) in one transaction: 0, or -1 with nothing of it kept. */
static int ship(store_pg *pg, PGconn *c, const json_t *rows, char *why, size_t whylen) {
  if (pg_run(c, "BEGIN", 0, NULL, NULL, why, whylen) != 0) {
    return -1;
  }
  /* each kind's statement, written at its first row of the batch */
  char sqls[8][2048];
  bool written[8] = {false};
  size_t i;
  const json_t *item;
  int rc = 0;
  json_array_foreach(rows, i, item) {
    const char *kind = json_string_value(json_object_get(item, "kind"));
    const json_t *row = json_object_get(item, "row");
    int kj = -1;
    for (int j = 0; j < store__shipped_count && j < 8 && kj < 0; j++) {
      kj = strcmp(store__shipped[j].kind, kind) == 0 ? j : -1;
    }
    if (kj < 0) {
      continue;
    }
    const store_shipped *k = &store__shipped[kj];
    if (!written[kj]) {
      upsert_sql(k, sqls[kj], sizeof sqls[kj]);
      written[kj] = true;
    }
    const char *sql = sqls[kj];
    const char *params[32];
    char numbers[32][32];
    int n = 0;
    params[n++] = pg->st->node;
    for (int col = 0; k->columns[col] && n < 32; col++, n++) {
      params[n] = text_of(json_object_get(row, k->columns[col]), numbers[n]);
    }
    rc = pg_run(c, sql, n, params, NULL, why, whylen);
    if (rc == 0 && strcmp(kind, "run") == 0) {
      rc = ship_values(c, "run_params", pg->st->node, params[1],
                       json_object_get(item, "param_values"), why, whylen);
      if (rc == 0) {
        rc = ship_values(c, "run_results", pg->st->node, params[1],
                         json_object_get(item, "result_values"), why, whylen);
      }
    }
    if (rc != 0) {
      break;
    }
  }
  char when[32];
  snprintf(when, sizeof when, "%.6f", store__now_unix());
  const char *const node[] = {pg->st->node, when};
  if (rc != 0 ||
      pg_run(c, "UPDATE nodes SET last_shipped_at = $2::float8 WHERE node = $1", 2, node, NULL, why,
             whylen) != 0 ||
      pg_run(c, "COMMIT", 0, NULL, NULL, why, whylen) != 0) {
    rollback(c);
    return -1;
  }
  return 0;
}

static void *shipper(void *arg) {
  store_pg *pg = arg;
  char why[512] = "", err[256];
  sqlite3 *db = store__open_db(pg->st->path, SQLITE_OPEN_READONLY, err, sizeof err);
  PGconn *c = NULL;
  int pause_ms = RETRY_MIN_MS;
  double stop_by = 0.0;
  bool announced_down = false, ever_up = false;
  pthread_mutex_lock(&pg->lock);
  for (;;) {
    const bool stopping = pg->stop;
    const int64_t after = pg->cursor;
    pg->kicked = false;
    pthread_mutex_unlock(&pg->lock);
    if (stopping && stop_by == 0.0) {
      stop_by = store__now_unix() + STOP_MS / 1000.0;
    }
    bool failed = true, idle = false;
    json_t *rows = NULL;
    int64_t last = after;
    int entries = 0;
    if (!db) {
      snprintf(why, sizeof why, "%s", err);
    } else if (!c && (!(c = pg_connect(pg, why, sizeof why)) ||
                      pg_prepare(pg, c, why, sizeof why) != 0)) {
      /* each new connection applies the schema (it may be a new database) and claims the node */
      PQfinish(c);
      c = NULL;
    } else if (store__outbox_read(db, after, SHIP_BATCH, &rows, &last, &entries, why, sizeof why) ==
               0) {
      __atomic_store_n(&pg->schema_ok, true, __ATOMIC_RELEASE);
      idle = entries == 0;
      /* with nothing to ship a ping, so that an outage shows in /metrics within a second */
      failed = idle ? pg_run(c, "SELECT 1", 0, NULL, NULL, why, sizeof why) != 0
                    : ship(pg, c, rows, why, sizeof why) != 0;
    }
    json_decref(rows);
    if (failed && c && PQstatus(c) != CONNECTION_OK) {
      PQfinish(c);
      c = NULL;
    }
    const double now = store__now_unix();
    pthread_mutex_lock(&pg->lock);
    pg->up = !failed;
    if (failed) {
      pg->failures++;
      snprintf(pg->why, sizeof pg->why, "%s", why);
    } else if (!idle) {
      pg->cursor = last;
      pg->shipped_total += (uint64_t)entries;
      pg->batches++;
      pg->last_ship = now;
    }
    pthread_cond_broadcast(&pg->shipped);
    pthread_mutex_unlock(&pg->lock);
    /* one line when it is lost, one when it is back */
    if (failed && !announced_down) {
      announced_down = true;
      pg->down_since = now;
      log_msg(LOG_ERROR, "results_db_down",
              "cannot ship to the results database %s (%s): the outbox keeps every change and is "
              "retried; GET /api/runs answers 503 results_db_unavailable until it is back",
              pg->name, why);
    } else if (!failed && announced_down) {
      announced_down = false;
      ever_up = true;
      log_msg(LOG_INFO, "results_db_up", "shipping to the results database %s again after %.1f s",
              pg->name, now - pg->down_since);
    } else if (!failed && !ever_up) {
      ever_up = true;
      log_msg(LOG_INFO, "results_db_up", "shipping to the results database %s", pg->name);
    }
    if (!failed && !idle) {
      store__outbox_trim(pg->st, last); /* only now: PostgreSQL has committed them */
      pause_ms = RETRY_MIN_MS;
    }
    pthread_mutex_lock(&pg->lock);
    if (pg->stop && (idle || failed || store__now_unix() > stop_by)) {
      break;
    }
    if (failed) {
      const struct timespec until = store__deadline(pause_ms);
      while (!pg->stop && pthread_cond_timedwait(&pg->wake, &pg->lock, &until) == 0) {
      }
      pause_ms = pause_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : pause_ms * 2;
    } else if (idle) {
      const struct timespec until = store__deadline(IDLE_MS);
      while (!pg->stop && !pg->kicked &&
             pthread_cond_timedwait(&pg->wake, &pg->lock, &until) == 0) {
      }
    }
  }
  pthread_mutex_unlock(&pg->lock);
  PQfinish(c);
  sqlite3_close(db);
  return NULL;
}

store_pg *store__pg_start(store *st, const char *uri, char *err, size_t errlen) {
  if (store_results_db_check(uri, err, errlen) != 0) {
    return NULL;
  }
  store_pg *pg = calloc(1, sizeof *pg);
  if (!pg) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  pg->st = st;
  snprintf(pg->uri, sizeof pg->uri, "%s", uri);
  store_results_db_name(uri, pg->name, sizeof pg->name);
  if (store__outbox_instance(st->w, pg->instance) != 0) {
    snprintf(err, errlen, "cannot read the store's instance id: %s", sqlite3_errmsg(st->w));
    free(pg);
    return NULL;
  }
  pthread_mutex_init(&pg->lock, NULL);
  pthread_cond_init(&pg->wake, NULL);
  pthread_cond_init(&pg->shipped, NULL);
  for (int i = 0; i < PG_READERS; i++) {
    pthread_mutex_init(&pg->readers[i].lock, NULL);
  }
  if (pthread_create(&pg->thread, NULL, shipper, pg) != 0) {
    snprintf(err, errlen, "cannot start the results database's shipper thread");
    free(pg);
    return NULL;
  }
  return pg;
}

void store__pg_stop(store_pg *pg) {
  if (!pg) {
    return;
  }
  pthread_mutex_lock(&pg->lock);
  pg->stop = true;
  pthread_cond_broadcast(&pg->wake);
  pthread_mutex_unlock(&pg->lock);
  pthread_join(pg->thread, NULL);
  for (int i = 0; i < PG_READERS; i++) {
    PQfinish(pg->readers[i].conn);
    pthread_mutex_destroy(&pg->readers[i].lock);
  }
  pthread_mutex_destroy(&pg->lock);
  pthread_cond_destroy(&pg->wake);
  pthread_cond_destroy(&pg->shipped);
  free(pg);
}

void store__pg_kick(store_pg *pg) {
  pthread_mutex_lock(&pg->lock);
  pg->kicked = true;
  pthread_cond_broadcast(&pg->wake);
  pthread_mutex_unlock(&pg->lock);
}

/* ---- the cluster's runs --------------------------------------------------------------------- */

static store_status unavailable(store_pg *pg, store_error *err, const char *why) {
  store__fail(err, STORE_E_UNAVAILABLE, "results_db_unavailable", "",
              "the results database %.60s does not answer (%.80s); the nodes keep their runs and "
              "ship them when it is back: try again later",
              pg->name, why);
  return err->status;
}

/* Waits (at most FRESH_MS) until what this node recorded before the request has shipped, so
 * that a client sees its own node's changes; another node's arrive as fast as its shipper goes. */
static void wait_for_own(store *st) {
  store_pg *pg = st->pg;
  store_reader *rd = store__take_reader(st);
  const int64_t want = store__outbox_last_seq(rd->db);
  store__give_reader(rd);
  const struct timespec until = store__deadline(FRESH_MS);
  pthread_mutex_lock(&pg->lock);
  if (pg->cursor < want) {
    pg->kicked = true;
    pthread_cond_broadcast(&pg->wake);
  }
  while (pg->up && pg->cursor < want &&
         pthread_cond_timedwait(&pg->shipped, &pg->lock, &until) == 0) {
  }
  pthread_mutex_unlock(&pg->lock);
}

static pg_reader *take_reader(store_pg *pg) {
  const unsigned first = __atomic_fetch_add(&pg->next_reader, 1, __ATOMIC_RELAXED);
  for (unsigned k = 0; k < PG_READERS; k++) {
    pg_reader *r = &pg->readers[(first + k) % PG_READERS];
    if (pthread_mutex_trylock(&r->lock) == 0) {
      return r;
    }
  }
  pg_reader *r = &pg->readers[first % PG_READERS];
  pthread_mutex_lock(&r->lock);
  return r;
}

/* One row of the list query (store_run_fields, in order) as a run. */
static void read_run(const PGresult *r, int row, store_run *run) {
  for (int k = 0; k < STORE_RUN_FIELD_COUNT; k++) {
    store_value *v = &run->f[k];
    *v = (store_value){.null = true};
    if (PQgetisnull(r, row, k)) {
      continue;
    }
    const char *text = PQgetvalue(r, row, k);
    switch (store_run_fields[k].kind) {
    case STORE_INT:
      *v = (store_value){.i = strtoll(text, NULL, 10)};
      break;
    case STORE_REAL:
      *v = (store_value){.r = strtod(text, NULL)};
      break;
    default:
      v->text = strdup(text);
      v->null = !v->text;
      break;
    }
  }
}

/* The list and its count in one read-only snapshot, after the class check: STORE_OK, or a
 * status with err; *lost says the connection broke (worth one retry on a new one). */
static store_status read_list(store_pg *pg, PGconn *c, const store_runs_filter *f,
                              const store_pg_scope *scope, const store_pg_query *q,
                              store_run_page *out, store_error *err, bool *lost) {
  char why[512];
  PGresult *list = NULL, *count = NULL, *cls = NULL;
  *lost = false;
  if (pg_run(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, NULL, why,
             sizeof why) != 0) {
    goto failed;
  }
  if (f->has_class) {
    /* a private class's runs are its teacher's (store.h); a missing one and a hidden one alike
     * are "no class" */
    const char *const values[] = {f->class_id, scope->node, scope->classes};
    if (pg_run(c,
               "SELECT NOT private OR (node = $2 AND id = ANY ($3::text[])) FROM classes WHERE "
               "id = $1",
               3, values, &cls, why, sizeof why) != 0) {
      goto failed;
    }
    const bool visible =
        PQntuples(cls) > 0 && (scope->admin || strcmp(PQgetvalue(cls, 0, 0), "t") == 0);
    PQclear(cls);
    if (!visible) {
      rollback(c);
      store__fail(err, STORE_E_NOT_FOUND, "not_found", "class",
                  "no class '%.40s' (a private class's runs need its teacher token)", f->class_id);
      return err->status;
    }
  }
  if (pg_run(c, q->list, q->nlist, q->values, &list, why, sizeof why) != 0 ||
      pg_run(c, q->count, q->ncount, q->values, &count, why, sizeof why) != 0 ||
      pg_run(c, "COMMIT", 0, NULL, NULL, why, sizeof why) != 0) {
    PQclear(list);
    PQclear(count);
    goto failed;
  }
  const int n = PQntuples(list);
  *out = (store_run_page){.runs = n > 0 ? calloc((size_t)n, sizeof *out->runs) : NULL,
                          .total = strtoll(PQgetvalue(count, 0, 0), NULL, 10),
                          .limit = f->limit,
                          .offset = f->offset};
  for (int i = 0; i < n && out->runs; i++) {
    read_run(list, i, &out->runs[out->count++]);
  }
  PQclear(list);
  PQclear(count);
  if (n > 0 && !out->runs) {
    store__fail(err, STORE_E_IO, "store_error", "", "out of memory");
    return err->status;
  }
  return STORE_OK;
failed:
  *lost = PQstatus(c) != CONNECTION_OK;
  if (!*lost) {
    rollback(c);
  }
  return unavailable(pg, err, why);
}

store_status store__pg_list_runs(store *st, const store_runs_filter *f, const store_access *a,
                                 store_run_page *out, store_error *err) {
  store_pg *pg = st->pg;
  char why[512];
  pthread_mutex_lock(&pg->lock);
  const bool ready = pg->schema_ok;
  snprintf(why, sizeof why, "%s", pg->why[0] ? pg->why : "not reached yet");
  pthread_mutex_unlock(&pg->lock);
  if (!ready) {
    return unavailable(pg, err, why);
  }
  /* this node's records queued before the request: committed here (a refusing disk only delays
   * them: the cluster's list does not depend on this node's store), then shipped */
  const bool local_ok = store_sync(st, 2000) == STORE_OK;
  json_t *sessions = NULL, *classes = NULL;
  if (store__token_opens(st, a, &sessions, &classes, err) != STORE_OK) {
    return err->status;
  }
  char opened_sessions[2048], opened_classes[2048];
  const int fits = store_pg_text_array(sessions, opened_sessions, sizeof opened_sessions) |
                   store_pg_text_array(classes, opened_classes, sizeof opened_classes);
  json_decref(sessions);
  json_decref(classes);
  const store_pg_scope scope = {a->admin, st->node, opened_sessions, opened_classes};
  store_pg_query *q = malloc(sizeof *q);
  if (!q || fits != 0 || store_pg_runs_sql(f, &scope, q) != 0) {
    free(q);
    store__fail(err, STORE_E_BAD_FILTER, "too_complex", "", "the query is too long");
    return err->status;
  }
  if (local_ok) {
    wait_for_own(st);
  }
  pg_reader *r = take_reader(pg);
  store_status rc = STORE_E_UNAVAILABLE;
  bool lost = true;
  for (int attempt = 0; attempt < 2 && lost; attempt++) {
    if (!r->conn && !(r->conn = pg_connect(pg, why, sizeof why))) {
      rc = unavailable(pg, err, why);
      break;
    }
    rc = read_list(pg, r->conn, f, &scope, q, out, err, &lost);
    if (lost) { /* a restarted database broke it: once more on a new connection */
      PQfinish(r->conn);
      r->conn = NULL;
    }
  }
  pthread_mutex_unlock(&r->lock);
  free(q);
  return rc;
}

/* ---- /metrics ------------------------------------------------------------------------------- */

void store_results_db_metrics(store *st, FILE *f) {
  if (!st || !st->pg) {
    return;
  }
  store_pg *pg = st->pg;
  pthread_mutex_lock(&pg->lock);
  const bool up = pg->up;
  const int64_t cursor = pg->cursor;
  const double last = pg->last_ship;
  const unsigned long long shipped = pg->shipped_total, failures = pg->failures;
  pthread_mutex_unlock(&pg->lock);
  store_reader *rd = store__take_reader(st);
  const int64_t depth = store__outbox_depth(rd->db, cursor);
  store__give_reader(rd);
  fprintf(f,
          "# HELP grainlab_results_db_up 1 while the shipper reaches the results database, 0 "
          "while it retries.\n# TYPE grainlab_results_db_up gauge\ngrainlab_results_db_up %d\n"
          "# HELP grainlab_results_db_outbox_depth Changes of this node's record waiting to ship "
          "to the results database.\n# TYPE grainlab_results_db_outbox_depth gauge\n"
          "grainlab_results_db_outbox_depth %lld\n"
          "# HELP grainlab_results_db_last_ship_timestamp_seconds When a batch last committed "
          "there (Unix seconds; 0: not yet).\n"
          "# TYPE grainlab_results_db_last_ship_timestamp_seconds gauge\n"
          "grainlab_results_db_last_ship_timestamp_seconds %.3f\n"
          "# HELP grainlab_results_db_shipped_total Outbox entries shipped (at least once each).\n"
          "# TYPE grainlab_results_db_shipped_total counter\n"
          "grainlab_results_db_shipped_total %llu\n"
          "# HELP grainlab_results_db_failures_total Attempts to connect or ship that failed.\n"
          "# TYPE grainlab_results_db_failures_total counter\n"
          "grainlab_results_db_failures_total %llu\n",
          up ? 1 : 0, (long long)(depth < 0 ? 0 : depth), last, shipped, failures);
}
