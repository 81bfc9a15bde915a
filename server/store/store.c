/* grainlabd's SQLite store (see store.h), the part its jobs share: opening a database file,
 * applying schema/migrations, closing the runs a crash left open, and the read connections. The
 * jobs live beside it: the writer thread (store_writer.c), the REST API's queries
 * (store_query.c), replays (store_replay.c) and online backups (store_backup.c). SQL is only ever
 * built from fixed fragments; every value is bound. */
#define _GNU_SOURCE
#include "store_internal.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* from schema/migrations, generated at build time */
extern const char *const grainlab_migrations[];
extern const int grainlab_migration_count;

#define BUSY_MS 5000 /* how long a reader waits for the writer's lock */

double store__now_unix(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CLOCK_REALTIME (what condition variables wait on by default) ms from now. */
struct timespec store__deadline(int ms) {
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

int store__exec(sqlite3 *db, const char *sql, char *err, size_t errlen) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    snprintf(err, errlen, "%s", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return -1;
  }
  return 0;
}

int store__int_query(sqlite3 *db, const char *sql, int64_t *out) {
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
  if (store__int_query(db, "PRAGMA user_version", &version) != 0) {
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
    if (store__exec(db, "BEGIN IMMEDIATE", err, errlen) != 0 ||
        store__exec(db, grainlab_migrations[m], err, errlen) != 0 ||
        store__int_query(db, "SELECT count(*) FROM pragma_foreign_key_check", &violations) != 0 ||
        (violations > 0 && (snprintf(err, errlen, "migration %d breaks %lld foreign keys", m + 1,
                                     (long long)violations) > 0)) ||
        store__exec(db, set, err, errlen) != 0 || store__exec(db, "COMMIT", err, errlen) != 0) {
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
      rc = -1;
    }
  }
  sqlite3_exec(db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
  return rc;
}

sqlite3 *store__open_db(const char *path, int flags, char *err, size_t errlen) {
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

/* Runs and sessions a crash left open end where their record ends, so that it says what happened:
 * at the daemon's last sign of life (the heartbeat of its last committed batch; now for a store
 * that has none), a run at its last sample, whose measurements are its results and close its last
 * stretch of parameters. A run with no sample keeps no end point. */
static int close_interrupted(store *st, char *err, size_t errlen) {
  static const char *const sql[] = {
      "INSERT OR REPLACE INTO run_results (run_id, name, value) "
      "SELECT r.id, m.key, m.value FROM runs r, json_each((SELECT measures FROM samples s "
      "WHERE s.run_id = r.id ORDER BY s.steps DESC LIMIT 1)) m "
      "WHERE r.ended_at IS NULL AND m.type IN ('integer', 'real')",
      "UPDATE runs SET ended_at = max(started_at, ?1), end_reason = 'interrupted', "
      "end_steps = (SELECT steps FROM samples WHERE run_id = runs.id ORDER BY steps DESC LIMIT 1), "
      "end_t = (SELECT t FROM samples WHERE run_id = runs.id ORDER BY steps DESC LIMIT 1), "
      "segments = coalesce((SELECT CASE WHEN json_array_length(runs.segments) > 0 THEN "
      "json_set(runs.segments, '$[#-1].to_steps', s.steps, '$[#-1].to_t', s.t, "
      "'$[#-1].results', json(s.measures)) END FROM samples s WHERE s.run_id = runs.id "
      "ORDER BY s.steps DESC LIMIT 1), runs.segments) WHERE ended_at IS NULL",
      "UPDATE sessions SET ended_at = ?1 WHERE ended_at IS NULL"};
  const double now = store__now_unix();
  int64_t beat_ms = -1; /* the heartbeat, in whole milliseconds (store__int_query's integers) */
  store__int_query(st->w, "SELECT coalesce((SELECT CAST(at * 1000 AS INTEGER) FROM heartbeat), -1)",
                   &beat_ms);
  const double at = beat_ms >= 0 && beat_ms / 1000.0 < now ? beat_ms / 1000.0 : now;
  if (store__exec(st->w, "BEGIN IMMEDIATE", err, errlen) != 0) {
    return -1;
  }
  int rc = SQLITE_OK;
  for (size_t i = 0; rc == SQLITE_OK && i < sizeof sql / sizeof sql[0]; i++) {
    sqlite3_stmt *q = NULL;
    rc = sqlite3_prepare_v2(st->w, sql[i], -1, &q, NULL);
    if (rc == SQLITE_OK && sqlite3_bind_parameter_count(q) > 0) {
      sqlite3_bind_double(q, 1, at);
    }
    rc = rc == SQLITE_OK ? sqlite3_step(q) : rc;
    rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    if (rc == SQLITE_OK && i == 1) {
      st->interrupted = sqlite3_changes(st->w);
    }
    sqlite3_finalize(q);
  }
  if (rc != SQLITE_OK) {
    snprintf(err, errlen, "cannot close the runs a crash left open: %s", sqlite3_errmsg(st->w));
    sqlite3_exec(st->w, "ROLLBACK", NULL, NULL, NULL);
    return -1;
  }
  return store__exec(st->w, "COMMIT", err, errlen);
}

store *store_open(const char *path, char *err, size_t errlen) {
  return store_open_with(path, NULL, err, errlen);
}

store *store_open_with(const char *path, const store_options *o, char *err, size_t errlen) {
  const char *node = o && o->node ? o->node : "";
  const bool results = o && o->results_db && *o->results_db;
  if (strlen(node) >= sizeof((store *)NULL)->node) {
    snprintf(err, errlen, "the node id '%.20s' is too long", node);
    return NULL;
  }
  if (results && !*node) {
    snprintf(err, errlen, "a results database needs a node id (--node): run ids are each node's");
    return NULL;
  }
  if (results && store_results_db_check(o->results_db, err, errlen) != 0) {
    return NULL;
  }
  store *st = calloc(1, sizeof *st);
  if (!st) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  snprintf(st->path, sizeof st->path, "%s", path);
  snprintf(st->node, sizeof st->node, "%s", node);
  st->w = store__open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err, errlen);
  /* WAL: readers never wait for the writer; NORMAL: a crash of the daemon (not of the machine)
   * loses nothing committed. The outbox is on exactly while there is a results database; set
   * before runs are closed below, so that their closing ships too. */
  if (!st->w || store__exec(st->w, "PRAGMA journal_mode = WAL", err, errlen) != 0 ||
      store__exec(st->w, "PRAGMA synchronous = NORMAL", err, errlen) != 0 ||
      migrate(st->w, err, errlen) != 0 || store__outbox_mode(st->w, results, err, errlen) != 0) {
    sqlite3_close(st->w);
    free(st);
    return NULL;
  }
  if (close_interrupted(st, err, errlen) != 0) {
    sqlite3_close(st->w);
    free(st);
    return NULL;
  }
  int64_t max_id = 0;
  store__int_query(st->w, "SELECT coalesce(max(id), 0) FROM runs", &max_id);
  st->next_run = max_id + 1;
  for (int i = 0; i < STORE_READERS; i++) {
    pthread_mutex_init(&st->readers[i].lock, NULL);
    st->readers[i].db = store__open_db(path, SQLITE_OPEN_READONLY, err, errlen);
    if (!st->readers[i].db) {
      for (int k = 0; k < i; k++) {
        sqlite3_close(st->readers[k].db);
      }
      sqlite3_close(st->w);
      free(st);
      return NULL;
    }
  }
  if (store__writer_start(st, err, errlen) != 0) {
    for (int k = 0; k < STORE_READERS; k++) {
      sqlite3_close(st->readers[k].db);
      pthread_mutex_destroy(&st->readers[k].lock);
    }
    sqlite3_close(st->w);
    free(st);
    return NULL;
  }
  if (results) {
    struct store_pg *pg = store__pg_start(st, o->results_db, err, errlen);
    if (!pg) {
      store_close(st);
      return NULL;
    }
    pthread_mutex_lock(&st->lock); /* the writer reads it to wake the shipper */
    st->pg = pg;
    pthread_mutex_unlock(&st->lock);
  }
  return st;
}

void store_close(store *st) {
  if (!st) {
    return;
  }
  if (st->pg) {
    /* what was recorded last (the runs a shutdown ends) ships before the writer stops, since it
     * deletes the shipped entries */
    store_sync(st, 5000);
    pthread_mutex_lock(&st->lock);
    struct store_pg *pg = st->pg;
    st->pg = NULL;
    pthread_mutex_unlock(&st->lock);
    store__pg_stop(pg);
  }
  store__writer_stop(st);
  for (int i = 0; i < STORE_READERS; i++) {
    sqlite3_close(st->readers[i].db);
    pthread_mutex_destroy(&st->readers[i].lock);
  }
  sqlite3_close(st->w);
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

/* Tokens are 256 random bits, so a plain SHA-256 cannot be reversed or guessed: no salt or slow
 * hash is needed, and comparing hashes in SQL (not in constant time) tells a timing attacker
 * nothing about the token. */
void store_token_hash(const char *token, char out[65]) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256((const unsigned char *)token, strlen(token), digest);
  for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) {
    snprintf(out + 2 * i, 3, "%02x", digest[i]);
  }
}

void store_access_init(store_access *a, const char *token, bool admin) {
  a->admin = admin;
  a->token_sha256[0] = '\0';
  if (token && *token && strlen(token) <= 256) { /* longer is no token of ours */
    store_token_hash(token, a->token_sha256);
  }
}

store_reader *store__take_reader(store *st) {
  const unsigned first = __atomic_fetch_add(&st->next_reader, 1, __ATOMIC_RELAXED);
  for (unsigned k = 0; k < STORE_READERS; k++) {
    store_reader *r = &st->readers[(first + k) % STORE_READERS];
    if (pthread_mutex_trylock(&r->lock) == 0) {
      return r;
    }
  }
  store_reader *r = &st->readers[first % STORE_READERS];
  pthread_mutex_lock(&r->lock);
  return r;
}

void store__give_reader(store_reader *r) {
  pthread_mutex_unlock(&r->lock);
}
