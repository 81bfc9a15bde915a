/* The store's writer (see store.h): writes are queued by sessions and committed in batches by
 * one thread, so a session never waits for the disk; store_sync lets a reader wait for what was
 * queued before it. A transaction the disk refuses (full, read-only, I/O error) is rolled back
 * and its records go back to the head of the queue, retried with a growing pause until one
 * commits; the queue's bound (STORE_QUEUE_MAX) and each run's event bound (STORE_RUN_EVENTS_MAX)
 * are kept at queueing time, where each run's losses are counted for its record. */
#define _GNU_SOURCE
#include "log.h"
#include "store_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH_MS 100      /* the writer commits at least this often while there is work */
#define RETRY_MIN_MS 100  /* the first pause after a refused transaction, doubled each time */
#define RETRY_MAX_MS 2000 /* the longest pause: how long recovery may lag the disk's */

enum {
  J_SESSION,
  J_SESSION_END,
  J_RUN_START,
  J_EVENT,
  J_SAMPLE,
  J_RUN_END,
  J_RUN_SEGMENTS,
  J_CLASS,
  J_GROUP,
  J_OUTBOX_TRIM
};

typedef struct store_job job;
struct store_job {
  job *next;
  int op;
  int64_t run;
  uint64_t steps;
  double t, at;
  char *a, *b, *c; /* strings by op */
  int i;
  uint64_t events_dropped, samples_dropped; /* J_RUN_END: what the run lost */
  const grn_scene_info *scene;              /* J_SAMPLE: whose measurements v holds, in its order */
  double v[GRN_MEASURE_MAX];
  json_t *j;
};

static char *dup_or_null(const char *s) {
  return s ? strdup(s) : NULL;
}

static store_track *track_of(store *st, int64_t run) {
  for (int i = 0; i < st->ntracks; i++) {
    if (st->tracks[i].run == run) {
      return &st->tracks[i];
    }
  }
  return NULL;
}

static void free_job(job *j);

/* Whether a sample or an event may join the queue (under lock): the bounds of store.h, each loss
 * counted for its run. An event that takes a run's last place becomes the truncation marker. */
static bool admit(store *st, job *j, bool *log_truncated, bool *log_dropping) {
  if (j->op != J_EVENT && j->op != J_SAMPLE) {
    return true; /* sessions and run starts and ends: bounded by the requests that make them */
  }
  store_track *t = track_of(st, j->run);
  const bool full = st->queued - st->written >= STORE_QUEUE_MAX;
  bool keep = !full;
  if (j->op == J_EVENT && t && t->events >= STORE_RUN_EVENTS_MAX) {
    keep = false;
  } else if (j->op == J_EVENT && t && keep && t->events == STORE_RUN_EVENTS_MAX - 1) {
    char *kind = strdup("events_truncated"), *detail = NULL;
    if (kind && asprintf(&detail, "{\"limit\":%d}", STORE_RUN_EVENTS_MAX) > 0) {
      free(j->a);
      free(j->b);
      j->a = kind;
      j->b = detail;
      t->events_dropped++; /* the event whose place the marker took */
      *log_truncated = true;
    } else {
      free(kind);
      keep = false;
    }
  }
  if (keep) {
    st->dropping = false;
    if (j->op == J_EVENT && t) {
      t->events++;
    }
    return true;
  }
  if (t) {
    *(j->op == J_EVENT ? &t->events_dropped : &t->samples_dropped) += 1;
  }
  st->dropped++;
  *log_dropping = full && !st->dropping;
  st->dropping = st->dropping || full;
  return false;
}

static void push(store *st, job *j) {
  j->at = store__now_unix();
  bool log_truncated = false, log_dropping = false;
  pthread_mutex_lock(&st->lock);
  const bool keep = admit(st, j, &log_truncated, &log_dropping);
  if (keep) {
    if (st->tail) {
      st->tail->next = j;
    } else {
      st->head = j;
    }
    st->tail = j;
    st->queued++;
    pthread_cond_signal(&st->work);
  }
  pthread_mutex_unlock(&st->lock);
  if (log_truncated) {
    log_msg(LOG_WARN, "store_events_truncated",
            "run=%lld reached %d events: later ones are not recorded, and it cannot be replayed",
            (long long)j->run, STORE_RUN_EVENTS_MAX);
  }
  if (log_dropping) {
    log_msg(LOG_WARN, "store_dropping",
            "%d records wait for the store: new samples and events are dropped (counted in "
            "their runs' samples_dropped and events_dropped) until there is room",
            STORE_QUEUE_MAX);
  }
  if (!keep) {
    free_job(j);
  }
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
static void measures_json(const grn_scene_info *scene, const double *v, char *out, size_t size) {
  size_t len = (size_t)snprintf(out, size, "{");
  for (int k = 0; k < scene->measure_count && len < size; k++) {
    if (k == GRN_MEASURE_T) {
      continue; /* the sample's own column */
    }
    if (!isfinite(v[k])) {
      continue;
    }
    char num[32];
    snprintf(num, sizeof num, "%.17g", v[k]);
    len += (size_t)snprintf(out + len, size - len, "%s\"%s\":%s%s", len > 1 ? "," : "",
                            scene->measures[k].name, num, strpbrk(num, ".e") ? "" : ".0");
  }
  if (len < size) {
    snprintf(out + len, size - len, "}");
  }
}

/* Whether a failure is the disk's or the system's (retried later, nothing dropped) rather than
 * one record's (a constraint: that record is logged and skipped, the rest committed). */
static bool transient(int rc) {
  switch (rc & 0xff) {
  case SQLITE_FULL:
  case SQLITE_IOERR:
  case SQLITE_READONLY:
  case SQLITE_CANTOPEN:
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
  case SQLITE_NOMEM:
  case SQLITE_PERM:
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB:
  case SQLITE_PROTOCOL:
    return true;
  default:
    return false;
  }
}

/* SQLITE_OK, or the transient failure that aborts the transaction. */
static int run_stmt(store *st, sqlite3_stmt *q) {
  int rc = sqlite3_step(q);
  if (rc != SQLITE_DONE) {
    log_msg(LOG_ERROR, "store_write", "%s", sqlite3_errmsg(st->w));
  }
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
  return rc == SQLITE_DONE || !transient(rc) ? SQLITE_OK : rc;
}

typedef struct writer_stmts {
  sqlite3_stmt *session, *session_end, *run, *param, *event, *sample, *run_end, *result, *segments,
      *class_, *group, *trim, *heartbeat;
} writer_stmts;

/* A JSON value as the column it fills: text, integer (booleans too), real or NULL. */
static void bind_json(sqlite3_stmt *q, int i, const json_t *v) {
  if (json_is_string(v)) {
    sqlite3_bind_text(q, i, json_string_value(v), -1, SQLITE_TRANSIENT);
  } else if (json_is_boolean(v)) {
    sqlite3_bind_int(q, i, json_is_true(v));
  } else if (json_is_integer(v)) {
    sqlite3_bind_int64(q, i, json_integer_value(v));
  } else if (json_is_real(v)) {
    sqlite3_bind_double(q, i, json_real_value(v));
  } else if (json_is_array(v) || json_is_object(v)) {
    char *text = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(17));
    sqlite3_bind_text(q, i, text ? text : "null", -1, SQLITE_TRANSIENT);
    free(text);
  } else {
    sqlite3_bind_null(q, i);
  }
}

/* One record; SQLITE_OK or the transient failure that aborts its transaction. */
static int write_job(store *st, writer_stmts *w, job *j) {
  int rc = SQLITE_OK;
  switch (j->op) {
  case J_SESSION:
    bind_text(w->session, 1, j->a);
    bind_text(w->session, 2, j->b);
    bind_text(w->session, 3, j->c);
    sqlite3_bind_int(w->session, 4, j->i);
    sqlite3_bind_double(w->session, 5, j->at);
    /* the tokens' hashes; NULL (no token) matches nothing */
    sqlite3_bind_text(w->session, 6,
                      j->j ? json_string_value(json_object_get(j->j, "control")) : NULL, -1,
                      SQLITE_TRANSIENT);
    sqlite3_bind_text(w->session, 7,
                      j->j ? json_string_value(json_object_get(j->j, "viewer")) : NULL, -1,
                      SQLITE_TRANSIENT);
    return run_stmt(st, w->session);
  case J_SESSION_END:
    sqlite3_bind_double(w->session_end, 1, j->at);
    bind_text(w->session_end, 2, j->a);
    return run_stmt(st, w->session_end);
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
    bind_json(w->run, 10, json_object_get(j->j, "class"));
    bind_json(w->run, 11, json_object_get(j->j, "group"));
    sqlite3_bind_int64(w->run, 12, json_integer_value(json_object_get(j->j, "sample_steps")));
    bind_json(w->run, 13, json_object_get(j->j, "reset_of")); /* absent: NULL */
    sqlite3_bind_int(w->run, 14, (int)GRN_ENGINE_STATE_VERSION);
    rc = run_stmt(st, w->run);
    const char *name;
    json_t *v;
    json_object_foreach(json_object_get(j->j, "params"), name, v) {
      if (rc == SQLITE_OK) { /* after a transient failure the transaction is abandoned */
        sqlite3_bind_int64(w->param, 1, j->run);
        bind_text(w->param, 2, name);
        sqlite3_bind_double(w->param, 3, json_number_value(v));
        rc = run_stmt(st, w->param);
      }
    }
    return rc;
  }
  case J_EVENT:
    sqlite3_bind_int64(w->event, 1, j->run);
    sqlite3_bind_int64(w->event, 2, (sqlite3_int64)j->steps);
    sqlite3_bind_double(w->event, 3, j->t);
    sqlite3_bind_double(w->event, 4, j->at);
    bind_text(w->event, 5, j->a);
    bind_text(w->event, 6, j->b);
    return run_stmt(st, w->event);
  case J_SAMPLE: {
    char measures[64 * GRN_MEASURE_MAX];
    measures_json(j->scene, j->v, measures, sizeof measures);
    sqlite3_bind_int64(w->sample, 1, j->run);
    sqlite3_bind_int64(w->sample, 2, (sqlite3_int64)j->steps);
    sqlite3_bind_double(w->sample, 3, j->t);
    bind_text(w->sample, 4, j->a);
    bind_text(w->sample, 5, measures);
    return run_stmt(st, w->sample);
  }
  case J_RUN_END: {
    sqlite3_bind_double(w->run_end, 1, j->at);
    bind_text(w->run_end, 2, j->a);
    sqlite3_bind_int64(w->run_end, 3, (sqlite3_int64)j->steps);
    sqlite3_bind_double(w->run_end, 4, j->t);
    if (j->b) {
      bind_text(w->run_end, 5, j->b);
    } else {
      sqlite3_bind_null(w->run_end, 5); /* no digest known at the end */
    }
    sqlite3_bind_int64(w->run_end, 6, (sqlite3_int64)j->events_dropped);
    sqlite3_bind_int64(w->run_end, 7, (sqlite3_int64)j->samples_dropped);
    sqlite3_bind_int64(w->run_end, 8, j->run);
    rc = run_stmt(st, w->run_end);
    const char *name;
    json_t *v;
    json_object_foreach(j->j, name, v) {
      if (rc == SQLITE_OK && json_is_number(v) && isfinite(json_number_value(v))) {
        sqlite3_bind_int64(w->result, 1, j->run);
        bind_text(w->result, 2, name);
        sqlite3_bind_double(w->result, 3, json_number_value(v));
        rc = run_stmt(st, w->result);
      }
    }
    return rc;
  }
  case J_RUN_SEGMENTS: /* a: the closed stretch's JSON text, b: the opened one's; NULL: none */
    sqlite3_bind_text(w->segments, 1, j->a, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(w->segments, 2, j->b, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(w->segments, 3, j->run);
    return run_stmt(st, w->segments);
  case J_CLASS:
    for (int k = 0; store_class_columns[k]; k++) {
      bind_json(w->class_, k + 1, json_object_get(j->j, store_class_columns[k]));
    }
    return run_stmt(st, w->class_);
  case J_GROUP:
    bind_text(w->group, 1, j->a);
    bind_text(w->group, 2, j->b);
    sqlite3_bind_double(w->group, 3, j->at);
    return run_stmt(st, w->group);
  case J_OUTBOX_TRIM:
    sqlite3_bind_int64(w->trim, 1, j->run);
    return run_stmt(st, w->trim);
  default:
    return SQLITE_OK;
  }
}

/* One transaction for the whole batch: 0, or -1 with nothing of it committed and the disk's
 * reason in why. */
static int write_batch(store *st, writer_stmts *w, job *batch, char *why, size_t whylen) {
  int rc = sqlite3_exec(st->w, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  for (job *j = batch; rc == SQLITE_OK && j; j = j->next) {
    rc = write_job(st, w, j);
  }
  if (rc == SQLITE_OK) { /* the daemon was alive now: a crash's open runs end here (store.c) */
    sqlite3_bind_double(w->heartbeat, 1, store__now_unix());
    rc = run_stmt(st, w->heartbeat);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_exec(st->w, "COMMIT", NULL, NULL, NULL);
  }
  if (rc == SQLITE_OK) {
    return 0;
  }
  snprintf(why, whylen, "%s", sqlite3_errmsg(st->w));
  if (!*why || strcmp(why, "not an error") == 0) {
    snprintf(why, whylen, "%s", sqlite3_errstr(rc));
  }
  sqlite3_exec(st->w, "ROLLBACK", NULL, NULL, NULL); /* SQLite may have rolled back already */
  if ((rc & 0xff) == SQLITE_FULL) {
    /* a full disk may be the WAL's own doing: moving it into the database and truncating it can
     * give the space back (best effort; SQLite keeps the file consistent if it fails) */
    sqlite3_wal_checkpoint_v2(st->w, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
  }
  return -1;
}

static void *writer(void *arg) {
  store *st = arg;
  writer_stmts w;
  memset(&w, 0, sizeof w);
  const struct {
    sqlite3_stmt **q;
    const char *sql;
  } stmts[] = {
      {&w.session, "INSERT OR IGNORE INTO sessions (id, join_code, label, private, created_at, "
                   "control_hash, viewer_hash) VALUES (?, ?, ?, ?, ?, ?, ?)"},
      {&w.session_end, "UPDATE sessions SET ended_at = ? WHERE id = ?"},
      {&w.run,
       "INSERT INTO runs (id, session_id, label, scene, seed, grains, engine_version, "
       "params, started_at, class_id, group_name, sample_steps, reset_of, state_version) VALUES "
       "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"},
      {&w.param, "INSERT OR REPLACE INTO run_params (run_id, name, value) VALUES (?, ?, ?)"},
      {&w.event,
       "INSERT INTO events (run_id, steps, t, at, kind, detail) VALUES (?, ?, ?, ?, ?, ?)"},
      {&w.sample, "INSERT OR REPLACE INTO samples (run_id, steps, t, state, measures) "
                  "VALUES (?, ?, ?, ?, ?)"},
      {&w.run_end, "UPDATE runs SET ended_at = ?, end_reason = ?, end_steps = ?, end_t = ?, "
                   "digest = ?, events_dropped = ?, samples_dropped = ? "
                   "WHERE id = ? AND ended_at IS NULL"},
      {&w.result, "INSERT OR REPLACE INTO run_results (run_id, name, value) VALUES (?, ?, ?)"},
      /* a stretch closed (the last element replaced) and one opened (appended); the first alone */
      {&w.segments, "UPDATE runs SET segments = CASE WHEN ?1 IS NULL THEN json_array(json(?2)) "
                    "WHEN ?2 IS NULL THEN json_set(segments, '$[#-1]', json(?1)) ELSE "
                    "json_insert(json_set(segments, '$[#-1]', json(?1)), '$[#]', json(?2)) END "
                    "WHERE id = ?3"},
      /* a class row whole, its columns in store_class_columns' order; an update keeps the row
       * (runs refer to it) */
      {&w.class_,
       "INSERT INTO classes (id, code, name, scenes, max_groups, grain_budget, defaults, private, "
       "second_join, locked, spotlight, teacher_hash, created_at, ends_at, ended_at, seeds) VALUES "
       "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
       "second_join = excluded.second_join, locked = excluded.locked, "
       "spotlight = excluded.spotlight, ended_at = excluded.ended_at"},
      {&w.group, "INSERT OR IGNORE INTO groups (class_id, name, created_at) VALUES (?, ?, ?)"},
      /* outbox entries the results database has committed (store_pg.c) */
      {&w.trim, "DELETE FROM outbox WHERE seq <= ?"},
      {&w.heartbeat, "INSERT INTO heartbeat (id, at) VALUES (1, ?) "
                     "ON CONFLICT (id) DO UPDATE SET at = excluded.at"},
  };
  for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
    if (sqlite3_prepare_v2(st->w, stmts[i].sql, -1, stmts[i].q, NULL) != SQLITE_OK) {
      log_msg(LOG_ERROR, "store_prepare", "%s", sqlite3_errmsg(st->w));
    }
  }
  int retry_ms = RETRY_MIN_MS;
  double fault_since = 0.0;
  pthread_mutex_lock(&st->lock);
  for (;;) {
    while (!st->head && !st->stop) {
      pthread_cond_wait(&st->work, &st->lock);
    }
    if (!st->head && st->stop) {
      break;
    }
    /* gather for up to BATCH_MS, then write the whole batch in one transaction; a reader that
     * waits for what was queued (store_sync) cuts the gathering short; a retry has waited */
    const struct timespec until = store__deadline(BATCH_MS);
    while (!st->fault && !st->urgent && !st->stop &&
           pthread_cond_timedwait(&st->work, &st->lock, &until) == 0) {
    }
    st->urgent = false;
    job *batch = st->head, *last = NULL;
    uint64_t n = 0;
    for (job *j = batch; j; j = j->next) {
      n++;
      last = j;
    }
    st->head = st->tail = NULL;
    pthread_mutex_unlock(&st->lock);
    char why[sizeof st->fault_why];
    if (write_batch(st, &w, batch, why, sizeof why) != 0) {
      pthread_mutex_lock(&st->lock);
      /* nothing of the batch is lost: back to the head of the queue, before what came since */
      last->next = st->head;
      st->head = batch;
      if (!st->tail) {
        st->tail = last;
      }
      const bool first = !st->fault;
      st->fault = true;
      snprintf(st->fault_why, sizeof st->fault_why, "%s", why);
      st->write_failures++;
      pthread_cond_broadcast(&st->done); /* waiting readers learn of it now */
      const uint64_t waiting = st->queued - st->written;
      if (st->stop) {
        /* shutting down and the disk still refuses: the queue cannot outlive the process */
        for (job *j = st->head; j;) {
          job *next = j->next;
          free_job(j);
          j = next;
        }
        st->head = st->tail = NULL;
        st->written = st->queued;
        pthread_cond_broadcast(&st->done);
        pthread_mutex_unlock(&st->lock);
        log_msg(LOG_ERROR, "store_lost",
                "stopping while the store cannot write (%s): %llu queued records are lost", why,
                (unsigned long long)waiting);
        pthread_mutex_lock(&st->lock);
        break;
      }
      pthread_mutex_unlock(&st->lock);
      if (first) {
        fault_since = store__now_unix();
        log_msg(LOG_ERROR, "store_unavailable",
                "the store cannot write (%s): %llu records kept queued and retried; new sessions "
                "are refused until a write commits",
                why, (unsigned long long)waiting);
      }
      pthread_mutex_lock(&st->lock);
      const struct timespec pause = store__deadline(retry_ms);
      while (!st->stop && pthread_cond_timedwait(&st->work, &st->lock, &pause) == 0) {
      }
      retry_ms = retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : retry_ms * 2;
      continue;
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
    if (st->pg) {             /* under the lock: store_close takes it away under it too */
      store__pg_kick(st->pg); /* the outbox may hold new entries */
    }
    const bool recovered = st->fault;
    st->fault = false;
    st->fault_why[0] = '\0';
    st->written += n;
    st->batches++;
    st->latency_sum += sum;
    st->latency_max = max;
    pthread_cond_broadcast(&st->done);
    if (recovered) {
      pthread_mutex_unlock(&st->lock);
      log_msg(LOG_INFO, "store_recovered",
              "the store writes again after %.1f s; %llu records "
              "committed",
              committed - fault_since, (unsigned long long)n);
      pthread_mutex_lock(&st->lock);
      retry_ms = RETRY_MIN_MS;
    }
  }
  pthread_mutex_unlock(&st->lock);
  for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
    sqlite3_finalize(*stmts[i].q);
  }
  return NULL;
}

void store_session(store *st, const char *id, const char *join, const char *label, bool private_,
                   const char *control_token, const char *viewer_token) {
  job *j = new_job(J_SESSION, 0);
  if (j) {
    j->a = dup_or_null(id);
    j->b = dup_or_null(join);
    j->c = dup_or_null(label);
    j->i = private_;
    /* only the hashes ever reach the queue and the disk */
    char control[65] = "", viewer[65] = "";
    if (control_token && *control_token) {
      store_token_hash(control_token, control);
    }
    if (viewer_token && *viewer_token) {
      store_token_hash(viewer_token, viewer);
    }
    j->j = json_object();
    if (*control) {
      json_object_set_new(j->j, "control", json_string(control));
    }
    if (*viewer) {
      json_object_set_new(j->j, "viewer", json_string(viewer));
    }
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
                     const grn_world_def *def, int grains, const char *class_id, const char *group,
                     int64_t reset_of) {
  job *j = new_job(J_RUN_START, run);
  if (!j) {
    return;
  }
  json_t *params = json_object();
  for (int i = 0; i < def->scene->param_count; i++) {
    json_object_set_new(params, def->scene->params[i].name, json_real(def->param[i]));
  }
  j->j = json_pack("{s:s, s:I, s:o, s:i}", "scene", def->scene->name, "seed", (json_int_t)def->seed,
                   "params", params, "sample_steps", grn_scene_sample_steps(def->scene));
  if (class_id && group) {
    json_object_set_new(j->j, "class", json_string(class_id));
    json_object_set_new(j->j, "group", json_string(group));
  }
  if (reset_of > 0) {
    json_object_set_new(j->j, "reset_of", json_integer(reset_of));
  }
  j->a = dup_or_null(session_id);
  j->b = dup_or_null(label);
  j->c = json_dumps(params, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
  j->i = grains;
  pthread_mutex_lock(&st->lock);
  if (!track_of(st, run)) {
    if (st->ntracks == st->cap_tracks) {
      const int cap = st->cap_tracks ? 2 * st->cap_tracks : 16;
      store_track *grown = realloc(st->tracks, sizeof *grown * (size_t)cap);
      if (grown) {
        st->tracks = grown;
        st->cap_tracks = cap;
      }
    }
    if (st->ntracks < st->cap_tracks) { /* without memory the run goes uncounted, not unrecorded */
      st->tracks[st->ntracks++] = (store_track){run, 0, 0, 0};
    }
  }
  pthread_mutex_unlock(&st->lock);
  push(st, j);
}

void store_run_segment(store *st, int64_t run, const json_t *closed, const json_t *opened) {
  job *j = new_job(J_RUN_SEGMENTS, run);
  if (j) {
    /* as text now: the session goes on changing its open stretch */
    const size_t flags = JSON_COMPACT | JSON_REAL_PRECISION(17);
    j->a = closed ? json_dumps(closed, flags) : NULL;
    j->b = opened ? json_dumps(opened, flags) : NULL;
    push(st, j);
  }
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

void store_sample(store *st, int64_t run, uint64_t steps, double t, const grn_scene_info *scene,
                  const grn_measurements *m) {
  job *j = new_job(J_SAMPLE, run);
  if (!j) {
    return;
  }
  j->steps = steps;
  j->t = t;
  j->a = dup_or_null(grn_state_name(m->state));
  j->scene = scene;
  for (int k = 0; k < GRN_MEASURE_MAX; k++) {
    j->v[k] = k < scene->measure_count && k < m->count ? m->value[k] : NAN;
  }
  push(st, j);
}

void store_run_end(store *st, int64_t run, const char *reason, uint64_t steps, double t,
                   const uint64_t *digest, json_t *results) {
  job *j = new_job(J_RUN_END, run);
  /* the run's losses go into its record, and its count is done with */
  store_track lost = {run, 0, 0, 0};
  pthread_mutex_lock(&st->lock);
  store_track *tr = track_of(st, run);
  if (tr) {
    lost = *tr;
    *tr = st->tracks[--st->ntracks];
  }
  pthread_mutex_unlock(&st->lock);
  if (lost.events_dropped || lost.samples_dropped) {
    log_msg(LOG_WARN, "store_run_incomplete",
            "run=%lld ended with %llu events and %llu samples not recorded%s", (long long)run,
            (unsigned long long)lost.events_dropped, (unsigned long long)lost.samples_dropped,
            lost.events_dropped ? "; it cannot be replayed" : "");
  }
  if (!j) {
    json_decref(results);
    return;
  }
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", digest ? (unsigned long long)*digest : 0ull);
  j->steps = steps;
  j->t = t;
  j->a = dup_or_null(reason);
  j->b = digest ? dup_or_null(hex) : NULL;
  j->j = results;
  j->events_dropped = lost.events_dropped;
  j->samples_dropped = lost.samples_dropped;
  push(st, j);
}

const char *const store_class_columns[] = {
    "id",         "code",    "name",        "scenes", "max_groups", "grain_budget",
    "defaults",   "private", "second_join", "locked", "spotlight",  "teacher_hash",
    "created_at", "ends_at", "ended_at",    "seeds",  NULL};

void store_class(store *st, const json_t *row) {
  job *j = new_job(J_CLASS, 0);
  if (j) {
    j->j = json_deep_copy(row);
    push(st, j);
  }
}

void store_group(store *st, const char *class_id, const char *name) {
  job *j = new_job(J_GROUP, 0);
  if (j) {
    j->a = dup_or_null(class_id);
    j->b = dup_or_null(name);
    push(st, j);
  }
}

void store__outbox_trim(store *st, int64_t seq) {
  job *j = new_job(J_OUTBOX_TRIM, seq);
  if (j) { /* without memory the entries stay and ship again: harmless */
    push(st, j);
  }
}

void store_get_stats(store *st, store_stats *out) {
  pthread_mutex_lock(&st->lock);
  out->queue_length = st->queued - st->written;
  out->written = st->written;
  out->batches = st->batches;
  out->latency_sum = st->latency_sum;
  out->latency_max = st->latency_max;
  out->writable = !st->fault;
  out->write_failures = st->write_failures;
  out->dropped = st->dropped;
  pthread_mutex_unlock(&st->lock);
  sqlite3_int64 now = 0, peak = 0;
  sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &now, &peak, 0);
  out->memory = (uint64_t)now;
  out->memory_peak = (uint64_t)peak;
}

bool store_writable(store *st, char *why, size_t whylen) {
  pthread_mutex_lock(&st->lock);
  const bool ok = !st->fault;
  if (why && whylen) {
    snprintf(why, whylen, "%s", st->fault_why);
  }
  pthread_mutex_unlock(&st->lock);
  return ok;
}

store_status store_sync(store *st, int timeout_ms) {
  const struct timespec until = store__deadline(timeout_ms);
  pthread_mutex_lock(&st->lock);
  const uint64_t want = st->queued;
  if (st->written < want && !st->fault) {
    st->urgent = true;
    pthread_cond_signal(&st->work);
  }
  /* a refused write ends the wait: what is asked for will not be there until a retry commits */
  while (st->written < want && !st->fault) {
    if (pthread_cond_timedwait(&st->done, &st->lock, &until) != 0) {
      break;
    }
  }
  const bool fault = st->fault;
  pthread_mutex_unlock(&st->lock);
  return fault ? STORE_E_UNAVAILABLE : STORE_OK;
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
  free(st->tracks);
}
