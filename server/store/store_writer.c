/* The store's writer (see store.h): writes are queued by sessions and committed in batches by
 * one thread, so a session never waits for the disk; store_sync lets a reader wait for what was
 * queued before it. */
#define _GNU_SOURCE
#include "log.h"
#include "store_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH_MS 100 /* the writer commits at least this often while there is work */

enum { J_SESSION, J_SESSION_END, J_RUN_START, J_EVENT, J_SAMPLE, J_RUN_END, J_SYNC };

typedef struct store_job job;
struct store_job {
  job *next;
  int op;
  int64_t run;
  uint64_t steps;
  double t, at;
  char *a, *b, *c; /* strings by op */
  int i;
  double v[GRN_MEASURE_COUNT];
  json_t *j;
};

static char *dup_or_null(const char *s) {
  return s ? strdup(s) : NULL;
}

static void push(store *st, job *j) {
  j->at = store__now_unix();
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

/* A sample's measurements as the JSON object samples.measures holds (schema/migrations/004): the
 * engine's names, finite values only, 17 significant digits so every double reads back exactly,
 * and always a decimal point or an exponent so SQLite reads each one back as REAL. */
static void measures_json(const double *v, char *out, size_t size) {
  size_t len = (size_t)snprintf(out, size, "{");
  for (int k = 1; k < GRN_MEASURE_COUNT && len < size; k++) {
    if (!isfinite(v[k])) {
      continue;
    }
    char num[32];
    snprintf(num, sizeof num, "%.17g", v[k]);
    len +=
        (size_t)snprintf(out + len, size - len, "%s\"%s\":%s%s", len > 1 ? "," : "",
                         grn_measure_name((grn_measure_key)k), num, strpbrk(num, ".e") ? "" : ".0");
  }
  if (len < size) {
    snprintf(out + len, size - len, "}");
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
  case J_SAMPLE: {
    char measures[64 * GRN_MEASURE_COUNT];
    measures_json(j->v, measures, sizeof measures);
    sqlite3_bind_int64(w->sample, 1, j->run);
    sqlite3_bind_int64(w->sample, 2, (sqlite3_int64)j->steps);
    sqlite3_bind_double(w->sample, 3, j->t);
    bind_text(w->sample, 4, j->a);
    bind_text(w->sample, 5, measures);
    run_stmt(st, w->sample);
    break;
  }
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
      {&w.sample, "INSERT OR REPLACE INTO samples (run_id, steps, t, state, measures) "
                  "VALUES (?, ?, ?, ?, ?)"},
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
    const struct timespec until = store__deadline(BATCH_MS);
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
    const double committed = store__now_unix();
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
  const struct timespec until = store__deadline(timeout_ms);
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

int store__writer_start(store *st, char *err, size_t errlen) {
  pthread_mutex_init(&st->lock, NULL);
  pthread_cond_init(&st->work, NULL);
  pthread_cond_init(&st->done, NULL);
  if (pthread_create(&st->thread, NULL, writer, st) != 0) {
    snprintf(err, errlen, "cannot start the store's writer thread");
    return -1;
  }
  return 0;
}

void store__writer_stop(store *st) {
  pthread_mutex_lock(&st->lock);
  st->stop = true;
  pthread_cond_signal(&st->work);
  pthread_mutex_unlock(&st->lock);
  pthread_join(st->thread, NULL);
  pthread_mutex_destroy(&st->lock);
  pthread_cond_destroy(&st->work);
  pthread_cond_destroy(&st->done);
}
