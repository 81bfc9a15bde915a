/* What the store's parts share (store.c opens and migrates; store_writer.c, store_query.c,
 * store_replay.c, store_backup.c, store_outbox.c and store_pg.c each do one job): the store
 * object, its read connections and a few SQLite helpers. Not for code outside server/store. */
#ifndef GRAINLAB_STORE_INTERNAL_H
#define GRAINLAB_STORE_INTERNAL_H

#include "store.h"

#include <pthread.h>
#include <sqlite3.h>
#include <time.h>

#define STORE_READERS 4 /* read connections shared by request threads */

struct store_job; /* one queued write (store_writer.c) */
struct store_pg;  /* the results database and its shipper (store_pg.c) */

/* An open run's count of recorded events and of what it lost (the bounds in store.h), kept
 * from its start to its end, when the counts go into its record. */
typedef struct store_track {
  int64_t run;
  uint64_t events, events_dropped, samples_dropped;
} store_track;

typedef struct store_reader {
  pthread_mutex_t lock;
  sqlite3 *db;
} store_reader;

struct store {
  char path[4096];
  sqlite3 *w; /* the writer's connection */
  pthread_t thread;
  pthread_mutex_t lock; /* the queue */
  pthread_cond_t work, done;
  struct store_job *head, *tail;
  bool stop;
  uint64_t queued, written; /* jobs, for store_sync */
  uint64_t batches;
  double latency_sum, latency_max;
  bool urgent;         /* a reader waits: commit now */
  store_track *tracks; /* the open runs, under lock */
  int ntracks, cap_tracks;
  uint64_t dropped;    /* samples and events dropped, under lock */
  bool dropping;       /* dropping since the queue last had room (logged once) */
  bool fault;          /* the last transaction was refused; its records wait for a retry */
  char fault_why[160]; /* the disk's reason */
  uint64_t write_failures;
  int64_t next_run;
  int interrupted;
  store_reader readers[STORE_READERS];
  unsigned next_reader;
  char node[16];       /* this node's id; "" for a lone daemon */
  struct store_pg *pg; /* the results database; NULL without one */
};

/* store.c */
double store__now_unix(void);
/* CLOCK_REALTIME (what condition variables wait on by default) ms from now. */
struct timespec store__deadline(int ms);
/* One statement without results; the reason in err. */
int store__exec(sqlite3 *db, const char *sql, char *err, size_t errlen);
/* The first column of the first row (0 when there is none). */
int store__int_query(sqlite3 *db, const char *sql, int64_t *out);
/* Column c of a row as JSON: integer, real, text or null (blobs are none of the record's). */
json_t *store__column_json(sqlite3_stmt *q, int c);
/* A connection with the store's settings (busy timeout, foreign keys); the reason in err. */
sqlite3 *store__open_db(const char *path, int flags, char *err, size_t errlen);
/* A read connection, held until store__give_reader. */
store_reader *store__take_reader(store *st);
void store__give_reader(store_reader *r);

/* store_filter.c: fills err. */
void store__fail(store_error *err, store_status status, const char *code, const char *field,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* store_writer.c: the writer thread, started once the database is migrated. */
int store__writer_start(store *st, char *err, size_t errlen);
/* Writes everything queued, then stops the thread. */
void store__writer_stop(store *st);
/* Queues the deletion of the outbox's entries up to seq (shipped and committed in PostgreSQL). */
void store__outbox_trim(store *st, int64_t seq);

/* store_outbox.c: the SQLite side of the outbox (schema/migrations/009). */
/* What ships, described once: each kind of outbox entry, the table its row is read from here and
 * upserted into there (the same name and columns on both sides, schema/postgres), and the
 * columns of its key. A run also ships its start parameters and results (run_params,
 * run_results), which have no entries of their own. */
typedef struct store_shipped {
  const char *kind, *table;
  const char *const *keys;    /* NULL-terminated */
  const char *const *columns; /* NULL-terminated; the keys among them */
} store_shipped;
extern const store_shipped store__shipped[];
extern const int store__shipped_count;
/* Turns the outbox on (queueing every row of the record once if it was off, so a node that
 * joins a cluster ships its history) or off (emptying it: a node without a results database
 * keeps no backlog). On the writer's connection, before the writer starts and before the runs a
 * crash left open are closed, so that their closing ships too. */
int store__outbox_mode(sqlite3 *db, bool on, char *err, size_t errlen);
/* outbox_state.instance (16 hex digits) into out. */
int store__outbox_instance(sqlite3 *db, char out[17]);
/* The entries after `after` (at most max, in order) with the rows they name as they are now: an
 * array of objects {"kind", "row": {column: value}, and for a run "param_values" and
 * "result_values": {name: value}}; an entry whose row is gone is left out. *last: the last
 * entry's seq (`after` when none). -1 with err on a read failure. */
int store__outbox_read(sqlite3 *db, int64_t after, int max, json_t **rows, int64_t *last,
                       int *entries, char *err, size_t errlen);
/* The outbox's counter (the seq of the newest entry ever made), and how many entries come after
 * `after`; -1 on a read failure. */
int64_t store__outbox_last_seq(sqlite3 *db);
int64_t store__outbox_depth(sqlite3 *db, int64_t after);
/* The ids of this store's sessions and classes a token opens (its hash against the ones kept
 * here): two JSON arrays of strings, empty without a token. */
store_status store__token_opens(store *st, const store_access *a, json_t **sessions,
                                json_t **classes, store_error *err);

/* store_pg.c: the results database. */
/* Connects nothing yet: starts the shipper thread, which connects, applies schema/postgres and
 * ships the outbox; NULL with err. */
struct store_pg *store__pg_start(store *st, const char *uri, char *err, size_t errlen);
/* Ships what is left while PostgreSQL answers (bounded), then stops the thread and closes. */
void store__pg_stop(struct store_pg *pg);
/* The writer committed: the outbox may hold new entries. */
void store__pg_kick(struct store_pg *pg);
store_status store__pg_list_runs(store *st, const store_runs_filter *f, const store_access *a,
                                 store_run_page *out, store_error *err);

/* libpq's message (several lines, a trailing newline) as one line into out (store_pg_uri.c). */
void store__pg_one_line(const char *msg, char *out, size_t size);

#endif
