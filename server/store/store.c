/* grainlabd's SQLite store (see store.h): migrations, the writer thread and its queue, the run
 * queries of the REST API, and what a replay reads. SQL is only ever built from fixed fragments;
 * every value is bound. */
#define _GNU_SOURCE
#include "store.h"
#include "log.h"

#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* from schema/migrations, generated at build time */
extern const char *const grainlab_migrations[];
extern const int grainlab_migration_count;

/* The samples table has a column for each measurement up to virial (schema 3); later keys (the
 * drum's froude) are not stored until samples keep their measurements as one JSON object. */
#define STORE_COLUMNS (GRN_M_VIRIAL + 1)
_Static_assert(STORE_COLUMNS == 20, "a new column needs a migration");

#define BATCH_MS 100 /* the writer commits at least this often while there is work */
#define READERS 4    /* read connections shared by request threads */
#define PAGE_MAX 500 /* rows a list request may ask for */
#define BUSY_MS 5000 /* how long a reader waits for the writer's lock */

enum { J_SESSION, J_SESSION_END, J_RUN_START, J_EVENT, J_SAMPLE, J_RUN_END, J_SYNC };

typedef struct job {
  struct job *next;
  int op;
  int64_t run;
  uint64_t steps;
  double t, at;
  char *a, *b, *c; /* strings by op */
  int i;
  double v[GRN_MEASURE_COUNT];
  json_t *j;
} job;

typedef struct reader {
  pthread_mutex_t lock;
  sqlite3 *db;
} reader;

struct store {
  char path[4096];
  sqlite3 *w;
  pthread_t thread;
  pthread_mutex_t lock; /* the queue */
  pthread_cond_t work, done;
  job *head, *tail;
  bool stop;
  uint64_t queued, written; /* jobs, for store_sync */
  uint64_t batches;
  double latency_sum, latency_max;
  bool urgent; /* a reader waits: commit now */
  int64_t next_run;
  int interrupted;
  reader readers[READERS];
  unsigned next_reader;
};

static double now_unix(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CLOCK_REALTIME (what condition variables wait on by default) ms from now. */
static struct timespec deadline(int ms) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_sec += ms / 1000;
  t.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000L;
  }
  return t;
}

static char *dup_or_null(const char *s) {
  return s ? strdup(s) : NULL;
}

static int exec(sqlite3 *db, const char *sql, char *err, size_t errlen) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    snprintf(err, errlen, "%s", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return -1;
  }
  return 0;
}

static int int_query(sqlite3 *db, const char *sql, int64_t *out) {
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
    return -1;
  }
  const int rc = sqlite3_step(q);
  *out = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
  sqlite3_finalize(q);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

static int migrate(sqlite3 *db, char *err, size_t errlen) {
  int64_t version = 0;
  if (int_query(db, "PRAGMA user_version", &version) != 0) {
    snprintf(err, errlen, "cannot read the schema version: %s", sqlite3_errmsg(db));
    return -1;
  }
  if (version > grainlab_migration_count) {
    snprintf(err, errlen, "the database has schema version %lld, newer than this grainlabd (%d)",
             (long long)version, grainlab_migration_count);
    return -1;
  }
  /* foreign keys off while tables are rebuilt (they cannot be switched inside a transaction);
   * each migration checks them itself before it commits */
  sqlite3_exec(db, "PRAGMA foreign_keys = OFF", NULL, NULL, NULL);
  int rc = 0;
  for (int m = (int)version; m < grainlab_migration_count && rc == 0; m++) {
    char set[64];
    snprintf(set, sizeof set, "PRAGMA user_version = %d", m + 1);
    /* each migration and its version number in one transaction: all or nothing */
    int64_t violations = 0;
    if (exec(db, "BEGIN IMMEDIATE", err, errlen) != 0 ||
        exec(db, grainlab_migrations[m], err, errlen) != 0 ||
        int_query(db, "SELECT count(*) FROM pragma_foreign_key_check", &violations) != 0 ||
        (violations > 0 && (snprintf(err, errlen, "migration %d breaks %lld foreign keys", m + 1,
                                     (long long)violations) > 0)) ||
        exec(db, set, err, errlen) != 0 || exec(db, "COMMIT", err, errlen) != 0) {
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
      rc = -1;
    }
  }
  sqlite3_exec(db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
  return rc;
}

/* ---- the writer ------------------------------------------------------------------------------ */

static void push(store *st, job *j) {
  j->at = now_unix();
  pthread_mutex_lock(&st->lock);
  if (st->tail) {
    st->tail->next = j;
  } else {
    st->head = j;
  }
  st->tail = j;
  st->queued++;
  pthread_cond_signal(&st->work);
  pthread_mutex_unlock(&st->lock);
}

static job *new_job(int op, int64_t run) {
  job *j = calloc(1, sizeof *j);
  if (j) {
    j->op = op;
    j->run = run;
  }
  return j; /* NULL: out of memory, the record is lost but the session goes on */
}

static void free_job(job *j) {
  free(j->a);
  free(j->b);
  free(j->c);
  json_decref(j->j);
  free(j);
}

static void bind_text(sqlite3_stmt *q, int i, const char *s) {
  sqlite3_bind_text(q, i, s ? s : "", -1, SQLITE_TRANSIENT);
}

static void bind_number(sqlite3_stmt *q, int i, double v) {
  if (isfinite(v)) {
    sqlite3_bind_double(q, i, v);
  } else {
    sqlite3_bind_null(q, i);
  }
}

static void run_stmt(store *st, sqlite3_stmt *q) {
  if (sqlite3_step(q) != SQLITE_DONE) {
    log_msg(LOG_ERROR, "store_write", "%s", sqlite3_errmsg(st->w));
  }
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
}

typedef struct writer_stmts {
  sqlite3_stmt *session, *session_end, *run, *param, *event, *sample, *run_end, *result;
} writer_stmts;

static void write_job(store *st, writer_stmts *w, job *j) {
  switch (j->op) {
  case J_SESSION:
    bind_text(w->session, 1, j->a);
    bind_text(w->session, 2, j->b);
    bind_text(w->session, 3, j->c);
    sqlite3_bind_int(w->session, 4, j->i);
    sqlite3_bind_double(w->session, 5, j->at);
    run_stmt(st, w->session);
    break;
  case J_SESSION_END:
    sqlite3_bind_double(w->session_end, 1, j->at);
    bind_text(w->session_end, 2, j->a);
    run_stmt(st, w->session_end);
    break;
  case J_RUN_START: {
    sqlite3_bind_int64(w->run, 1, j->run);
    bind_text(w->run, 2, j->a);
    bind_text(w->run, 3, j->b);
    bind_text(w->run, 4, json_string_value(json_object_get(j->j, "scene")));
    sqlite3_bind_int64(w->run, 5, json_integer_value(json_object_get(j->j, "seed")));
    sqlite3_bind_int(w->run, 6, j->i);
    bind_text(w->run, 7, GRN_ENGINE_VERSION);
    bind_text(w->run, 8, j->c);
    sqlite3_bind_double(w->run, 9, j->at);
    run_stmt(st, w->run);
    const char *name;
    json_t *v;
    json_object_foreach(json_object_get(j->j, "params"), name, v) {
      sqlite3_bind_int64(w->param, 1, j->run);
      bind_text(w->param, 2, name);
      sqlite3_bind_double(w->param, 3, json_number_value(v));
      run_stmt(st, w->param);
    }
    break;
  }
  case J_EVENT:
    sqlite3_bind_int64(w->event, 1, j->run);
    sqlite3_bind_int64(w->event, 2, (sqlite3_int64)j->steps);
    sqlite3_bind_double(w->event, 3, j->t);
    sqlite3_bind_double(w->event, 4, j->at);
    bind_text(w->event, 5, j->a);
    bind_text(w->event, 6, j->b);
    run_stmt(st, w->event);
    break;
  case J_SAMPLE:
    sqlite3_bind_int64(w->sample, 1, j->run);
    sqlite3_bind_int64(w->sample, 2, (sqlite3_int64)j->steps);
    sqlite3_bind_double(w->sample, 3, j->t);
    bind_text(w->sample, 4, j->a);
    for (int k = 1; k < STORE_COLUMNS; k++) {
      bind_number(w->sample, 4 + k, j->v[k]);
    }
    run_stmt(st, w->sample);
    break;
  case J_RUN_END: {
    sqlite3_bind_double(w->run_end, 1, j->at);
    bind_text(w->run_end, 2, j->a);
    sqlite3_bind_int64(w->run_end, 3, (sqlite3_int64)j->steps);
    sqlite3_bind_double(w->run_end, 4, j->t);
    bind_text(w->run_end, 5, j->b);
    sqlite3_bind_int64(w->run_end, 6, j->run);
    run_stmt(st, w->run_end);
    const char *name;
    json_t *v;
    json_object_foreach(j->j, name, v) {
      if (json_is_number(v) && isfinite(json_number_value(v))) {
        sqlite3_bind_int64(w->result, 1, j->run);
        bind_text(w->result, 2, name);
        sqlite3_bind_double(w->result, 3, json_number_value(v));
        run_stmt(st, w->result);
      }
    }
    break;
  }
  default:
    break;
  }
}

static void *writer(void *arg) {
  store *st = arg;
  writer_stmts w;
  memset(&w, 0, sizeof w);
  const struct {
    sqlite3_stmt **q;
    const char *sql;
  } stmts[] = {
      {&w.session, "INSERT OR IGNORE INTO sessions (id, join_code, label, private, created_at) "
                   "VALUES (?, ?, ?, ?, ?)"},
      {&w.session_end, "UPDATE sessions SET ended_at = ? WHERE id = ?"},
      {&w.run, "INSERT INTO runs (id, session_id, label, scene, seed, grains, engine_version, "
               "params, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"},
      {&w.param, "INSERT OR REPLACE INTO run_params (run_id, name, value) VALUES (?, ?, ?)"},
      {&w.event,
       "INSERT INTO events (run_id, steps, t, at, kind, detail) VALUES (?, ?, ?, ?, ?, ?)"},
      {&w.sample, "INSERT OR REPLACE INTO samples (run_id, steps, t, state, angle, top, cx, cz, "
                  "over_max, flowing, alive, front, flow, mass_above, fill, beverloo, height, "
                  "kinetic, potential, energy, energy_drift, angular_momentum, virial) "
                  "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"},
      {&w.run_end, "UPDATE runs SET ended_at = ?, end_reason = ?, end_steps = ?, end_t = ?, "
                   "digest = ? WHERE id = ? AND ended_at IS NULL"},
      {&w.result, "INSERT OR REPLACE INTO run_results (run_id, name, value) VALUES (?, ?, ?)"},
  };
  for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
    if (sqlite3_prepare_v2(st->w, stmts[i].sql, -1, stmts[i].q, NULL) != SQLITE_OK) {
      log_msg(LOG_ERROR, "store_prepare", "%s", sqlite3_errmsg(st->w));
    }
  }
  pthread_mutex_lock(&st->lock);
  for (;;) {
    while (!st->head && !st->stop) {
      pthread_cond_wait(&st->work, &st->lock);
    }
    if (!st->head && st->stop) {
      break;
    }
    /* gather for up to BATCH_MS, then write the whole batch in one transaction; a reader that
     * waits for what was queued (store_sync) cuts the gathering short */
    const struct timespec until = deadline(BATCH_MS);
    while (!st->urgent && !st->stop && pthread_cond_timedwait(&st->work, &st->lock, &until) == 0) {
    }
    st->urgent = false;
    job *batch = st->head;
    uint64_t n = 0;
    for (job *j = batch; j; j = j->next) {
      n++;
    }
    st->head = st->tail = NULL;
    pthread_mutex_unlock(&st->lock);
    sqlite3_exec(st->w, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    for (job *j = batch; j; j = j->next) {
      write_job(st, &w, j);
    }
    if (sqlite3_exec(st->w, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
      log_msg(LOG_ERROR, "store_commit", "commit failed: %s", sqlite3_errmsg(st->w));
      sqlite3_exec(st->w, "ROLLBACK", NULL, NULL, NULL);
    }
    const double committed = now_unix();
    double sum = 0.0, max = 0.0;
    while (batch) {
      job *next = batch->next;
      sum += committed - batch->at;
      max = committed - batch->at > max ? committed - batch->at : max;
      free_job(batch);
      batch = next;
    }
    pthread_mutex_lock(&st->lock);
    st->written += n;
    st->batches++;
    st->latency_sum += sum;
    st->latency_max = max;
    pthread_cond_broadcast(&st->done);
  }
  pthread_mutex_unlock(&st->lock);
  for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
    sqlite3_finalize(*stmts[i].q);
  }
  return NULL;
}

static sqlite3 *open_db(const char *path, int flags, char *err, size_t errlen) {
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
    snprintf(err, errlen, "cannot open '%s': %s", path, db ? sqlite3_errmsg(db) : "no memory");
    sqlite3_close(db);
    return NULL;
  }
  sqlite3_busy_timeout(db, BUSY_MS);
  sqlite3_exec(db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
  return db;
}

store *store_open(const char *path, char *err, size_t errlen) {
  store *st = calloc(1, sizeof *st);
  if (!st) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  snprintf(st->path, sizeof st->path, "%s", path);
  st->w = open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err, errlen);
  /* WAL: readers never wait for the writer; NORMAL: a crash of the daemon (not of the machine)
   * loses nothing committed */
  if (!st->w || exec(st->w, "PRAGMA journal_mode = WAL", err, errlen) != 0 ||
      exec(st->w, "PRAGMA synchronous = NORMAL", err, errlen) != 0 ||
      migrate(st->w, err, errlen) != 0) {
    sqlite3_close(st->w);
    free(st);
    return NULL;
  }
  /* runs a crash left open: closed now, so the record says what happened */
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(st->w,
                         "UPDATE runs SET ended_at = ?, end_reason = 'interrupted' "
                         "WHERE ended_at IS NULL",
                         -1, &q, NULL) == SQLITE_OK) {
    sqlite3_bind_double(q, 1, now_unix());
    sqlite3_step(q);
    st->interrupted = sqlite3_changes(st->w);
    sqlite3_finalize(q);
  }
  exec(st->w, "UPDATE sessions SET ended_at = unixepoch('subsec') WHERE ended_at IS NULL", err,
       errlen);
  int64_t max_id = 0;
  int_query(st->w, "SELECT coalesce(max(id), 0) FROM runs", &max_id);
  st->next_run = max_id + 1;
  for (int i = 0; i < READERS; i++) {
    pthread_mutex_init(&st->readers[i].lock, NULL);
    st->readers[i].db = open_db(path, SQLITE_OPEN_READONLY, err, errlen);
    if (!st->readers[i].db) {
      for (int k = 0; k < i; k++) {
        sqlite3_close(st->readers[k].db);
      }
      sqlite3_close(st->w);
      free(st);
      return NULL;
    }
  }
  pthread_mutex_init(&st->lock, NULL);
  pthread_cond_init(&st->work, NULL);
  pthread_cond_init(&st->done, NULL);
  if (pthread_create(&st->thread, NULL, writer, st) != 0) {
    snprintf(err, errlen, "cannot start the store's writer thread");
    for (int k = 0; k < READERS; k++) {
      sqlite3_close(st->readers[k].db);
    }
    sqlite3_close(st->w);
    free(st);
    return NULL;
  }
  return st;
}

void store_close(store *st) {
  if (!st) {
    return;
  }
  pthread_mutex_lock(&st->lock);
  st->stop = true;
  pthread_cond_signal(&st->work);
  pthread_mutex_unlock(&st->lock);
  pthread_join(st->thread, NULL);
  for (int i = 0; i < READERS; i++) {
    sqlite3_close(st->readers[i].db);
    pthread_mutex_destroy(&st->readers[i].lock);
  }
  sqlite3_close(st->w);
  pthread_mutex_destroy(&st->lock);
  pthread_cond_destroy(&st->work);
  pthread_cond_destroy(&st->done);
  free(st);
}

int64_t store_next_run_id(store *st) {
  return st->next_run;
}

const char *store_path(const store *st) {
  return st->path;
}

int store_interrupted(const store *st) {
  return st->interrupted;
}

void store_session(store *st, const char *id, const char *join, const char *label, bool private_) {
  job *j = new_job(J_SESSION, 0);
  if (j) {
    j->a = dup_or_null(id);
    j->b = dup_or_null(join);
    j->c = dup_or_null(label);
    j->i = private_;
    push(st, j);
  }
}

void store_session_end(store *st, const char *id) {
  job *j = new_job(J_SESSION_END, 0);
  if (j) {
    j->a = dup_or_null(id);
    push(st, j);
  }
}

void store_run_start(store *st, int64_t run, const char *session_id, const char *label,
                     const grn_world_def *def, int grains) {
  job *j = new_job(J_RUN_START, run);
  if (!j) {
    return;
  }
  json_t *params = json_object();
  for (int i = 0; i < def->scene->param_count; i++) {
    json_object_set_new(params, def->scene->param_info[i].name,
                        json_real(def->param[def->scene->params[i]]));
  }
  j->j = json_pack("{s:s, s:I, s:o}", "scene", def->scene->name, "seed", (json_int_t)def->seed,
                   "params", params);
  j->a = dup_or_null(session_id);
  j->b = dup_or_null(label);
  j->c = json_dumps(params, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
  j->i = grains;
  push(st, j);
}

void store_event(store *st, int64_t run, uint64_t steps, double t, const char *kind,
                 const char *detail_json) {
  job *j = new_job(J_EVENT, run);
  if (j) {
    j->steps = steps;
    j->t = t;
    j->a = dup_or_null(kind);
    j->b = dup_or_null(detail_json ? detail_json : "{}");
    push(st, j);
  }
}

void store_sample(store *st, int64_t run, uint64_t steps, double t, const grn_measurements *m) {
  job *j = new_job(J_SAMPLE, run);
  if (!j) {
    return;
  }
  j->steps = steps;
  j->t = t;
  j->a = dup_or_null(grn_state_name(m->state));
  for (int k = 0; k < GRN_MEASURE_COUNT; k++) {
    j->v[k] = m->present & (1u << k) ? m->value[k] : NAN;
  }
  push(st, j);
}

void store_run_end(store *st, int64_t run, const char *reason, uint64_t steps, double t,
                   uint64_t digest, json_t *results) {
  job *j = new_job(J_RUN_END, run);
  if (!j) {
    json_decref(results);
    return;
  }
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)digest);
  j->steps = steps;
  j->t = t;
  j->a = dup_or_null(reason);
  j->b = dup_or_null(hex);
  j->j = results;
  push(st, j);
}

void store_get_stats(store *st, store_stats *out) {
  pthread_mutex_lock(&st->lock);
  out->queue_length = st->queued - st->written;
  out->written = st->written;
  out->batches = st->batches;
  out->latency_sum = st->latency_sum;
  out->latency_max = st->latency_max;
  pthread_mutex_unlock(&st->lock);
}

void store_sync(store *st, int timeout_ms) {
  const struct timespec until = deadline(timeout_ms);
  pthread_mutex_lock(&st->lock);
  const uint64_t want = st->queued;
  if (st->written < want) {
    st->urgent = true;
    pthread_cond_signal(&st->work);
  }
  while (st->written < want) {
    if (pthread_cond_timedwait(&st->done, &st->lock, &until) != 0) {
      break;
    }
  }
  pthread_mutex_unlock(&st->lock);
}

/* ---- reads ----------------------------------------------------------------------------------- */

static reader *take_reader(store *st) {
  const unsigned first = __atomic_fetch_add(&st->next_reader, 1, __ATOMIC_RELAXED);
  for (unsigned k = 0; k < READERS; k++) {
    reader *r = &st->readers[(first + k) % READERS];
    if (pthread_mutex_trylock(&r->lock) == 0) {
      return r;
    }
  }
  reader *r = &st->readers[first % READERS];
  pthread_mutex_lock(&r->lock);
  return r;
}

static void give_reader(reader *r) {
  pthread_mutex_unlock(&r->lock);
}

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
  reader *rd = take_reader(st);
  sqlite3_stmt *q = NULL, *c = NULL;
  if (sqlite3_prepare_v2(rd->db, sql.text, -1, &q, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(rd->db, count.text, -1, &c, NULL) != SQLITE_OK) {
    api_fail(err, 500, "store_error", "", "%s", sqlite3_errmsg(rd->db));
    sqlite3_finalize(q);
    give_reader(rd);
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
  give_reader(rd);
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
  reader *rd = take_reader(st);
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
    give_reader(rd);
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
  give_reader(rd);
  json_object_set_new(run, "results", results);
  json_object_set_new(run, "events", events);
  *out = run;
  return 0;
}

int store_samples(store *st, int64_t id, bool csv, char **out, size_t *len, store_error *err) {
  store_sync(st, 2000);
  reader *rd = take_reader(st);
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
    give_reader(rd);
    api_fail(err, 404, "not_found", "id", "no run %lld", (long long)id);
    return -1;
  }
  /* the scene's own measurements only, in the engine's order */
  sql_buf sql = {.len = 0};
  add(&sql, "SELECT t, steps, state");
  int cols[GRN_MEASURE_COUNT], nc = 0;
  for (int k = 1; k < STORE_COLUMNS; k++) {
    if (scene->measures & (1u << k)) {
      cols[nc++] = k;
      add(&sql, ", ");
      add(&sql, grn_measure_name((grn_measure_key)k)); /* fixed names from the engine */
    }
  }
  add(&sql, " FROM samples WHERE run_id = ? ORDER BY steps");
  if (sql.overflow || sqlite3_prepare_v2(rd->db, sql.text, -1, &q, NULL) != SQLITE_OK) {
    give_reader(rd);
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
  give_reader(rd);
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

/* ---- replay ---------------------------------------------------------------------------------- */

void store_replay_free(store_replay *r) {
  free(r->events);
  memset(r, 0, sizeof *r);
}

static int replay_fail(sqlite3 *db, sqlite3_stmt *q, store_replay *r, char *err, size_t errlen,
                       const char *msg) {
  snprintf(err, errlen, "%s", msg);
  sqlite3_finalize(q);
  sqlite3_close(db);
  store_replay_free(r);
  return -1;
}

int store_load_replay(const char *db_path, int64_t run, store_replay *out, char *err,
                      size_t errlen) {
  memset(out, 0, sizeof *out);
  sqlite3 *db = open_db(db_path, SQLITE_OPEN_READONLY, err, errlen);
  if (!db) {
    return -1;
  }
  sqlite3_stmt *q = NULL;
  if (sqlite3_prepare_v2(db,
                         "SELECT scene, seed, grains, params, end_steps, digest, end_reason "
                         "FROM runs WHERE id = ?",
                         -1, &q, NULL) != SQLITE_OK) {
    return replay_fail(db, q, out, err, errlen, "not a grainlab database");
  }
  sqlite3_bind_int64(q, 1, run);
  if (sqlite3_step(q) != SQLITE_ROW) {
    return replay_fail(db, q, out, err, errlen, "no such run");
  }
  grn_error e;
  if (grn_world_def_default(&out->def, (const char *)sqlite3_column_text(q, 0), &e) != GRN_OK) {
    return replay_fail(db, q, out, err, errlen, "the run's scene is unknown to this engine");
  }
  out->def.seed = (uint64_t)sqlite3_column_int64(q, 1);
  json_t *params = json_loads((const char *)sqlite3_column_text(q, 3), 0, NULL);
  const char *name;
  json_t *v;
  bool bad = !params;
  json_object_foreach(params, name, v) {
    bad = bad || grn_world_def_set(&out->def, name, json_number_value(v), &e) != GRN_OK;
  }
  json_decref(params);
  if (bad) {
    return replay_fail(db, q, out, err, errlen, "the run's parameters do not fit this engine");
  }
  out->ended = sqlite3_column_type(q, 4) != SQLITE_NULL;
  out->end_steps = (uint64_t)sqlite3_column_int64(q, 4);
  snprintf(out->digest, sizeof out->digest, "%s",
           sqlite3_column_text(q, 5) ? (const char *)sqlite3_column_text(q, 5) : "");
  snprintf(out->end_reason, sizeof out->end_reason, "%s",
           sqlite3_column_text(q, 6) ? (const char *)sqlite3_column_text(q, 6) : "");
  sqlite3_finalize(q);
  q = NULL;
  if (sqlite3_prepare_v2(db,
                         "SELECT steps, kind, detail FROM events WHERE run_id = ? AND kind IN "
                         "('parameter_changed', 'action') ORDER BY id",
                         -1, &q, NULL) != SQLITE_OK) {
    return replay_fail(db, q, out, err, errlen, "not a grainlab database");
  }
  sqlite3_bind_int64(q, 1, run);
  int cap = 0;
  while (sqlite3_step(q) == SQLITE_ROW) {
    json_t *detail = json_loads((const char *)sqlite3_column_text(q, 2), 0, NULL);
    const bool action = strcmp((const char *)sqlite3_column_text(q, 1), "action") == 0;
    const uint64_t steps = (uint64_t)sqlite3_column_int64(q, 0);
    /* actions carry the engine's own form; daemon-only ones (pause, step, ...) have none */
    json_t *items = action ? json_object_get(detail, "engine") : json_object_get(detail, "params");
    const char *pname;
    json_t *pv;
    json_t *one = action && json_is_string(items) ? json_pack("{s:O}", "a", items) : NULL;
    json_object_foreach(action ? one : items, pname, pv) {
      if (out->nevents == cap) {
        cap = cap ? 2 * cap : 64;
        store_replay_event *grown = realloc(out->events, sizeof *grown * (size_t)cap);
        if (!grown) {
          json_decref(one);
          json_decref(detail);
          return replay_fail(db, q, out, err, errlen, "out of memory");
        }
        out->events = grown;
      }
      store_replay_event *ev = &out->events[out->nevents];
      memset(ev, 0, sizeof *ev);
      ev->steps = steps;
      ev->is_action = action;
      if (action ? grn_action_parse(json_string_value(pv), &ev->action, &e) != GRN_OK
                 : !json_is_number(pv)) {
        json_decref(one);
        json_decref(detail);
        return replay_fail(db, q, out, err, errlen, "a recorded event cannot be replayed");
      }
      snprintf(ev->param, sizeof ev->param, "%s", action ? "" : pname);
      ev->value = action ? 0.0 : json_number_value(pv);
      out->nevents++;
    }
    json_decref(one);
    json_decref(detail);
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
  return 0;
}

long store_backup(const char *db_path, const char *out_path, char *err, size_t errlen) {
  FILE *exists = fopen(out_path, "rb");
  if (exists) {
    fclose(exists);
    snprintf(err, errlen, "'%s' exists already", out_path);
    return -1;
  }
  sqlite3 *src = open_db(db_path, SQLITE_OPEN_READONLY, err, errlen);
  if (!src) {
    return -1;
  }
  sqlite3 *dst = open_db(out_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err, errlen);
  if (!dst) {
    sqlite3_close(src);
    return -1;
  }
  /* all pages in one step: one read transaction, so the copy is one moment of the database */
  sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
  int rc = b ? sqlite3_backup_step(b, -1) : SQLITE_ERROR;
  if (b) {
    sqlite3_backup_finish(b);
  }
  long runs = -1;
  if (rc == SQLITE_DONE) {
    int64_t n = 0;
    runs = int_query(dst, "SELECT count(*) FROM runs", &n) == 0 ? (long)n : -1;
  }
  if (runs < 0) {
    snprintf(err, errlen, "backup failed: %s", sqlite3_errmsg(dst));
  }
  sqlite3_close(dst);
  sqlite3_close(src);
  if (runs < 0) {
    remove(out_path);
  }
  return runs;
}
