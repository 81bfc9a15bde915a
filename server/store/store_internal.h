/* What the store's parts share (store.c opens and migrates; store_writer.c, store_query.c,
 * store_replay.c and store_backup.c each do one job): the store object, its read connections and
 * a few SQLite helpers. Not for code outside server/store. */
#ifndef GRAINLAB_STORE_INTERNAL_H
#define GRAINLAB_STORE_INTERNAL_H

#include "store.h"

#include <pthread.h>
#include <sqlite3.h>
#include <time.h>

#define STORE_READERS 4 /* read connections shared by request threads */

struct store_job; /* one queued write (store_writer.c) */

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
};

/* store.c */
double store__now_unix(void);
/* CLOCK_REALTIME (what condition variables wait on by default) ms from now. */
struct timespec store__deadline(int ms);
/* One statement without results; the reason in err. */
int store__exec(sqlite3 *db, const char *sql, char *err, size_t errlen);
/* The first column of the first row (0 when there is none). */
int store__int_query(sqlite3 *db, const char *sql, int64_t *out);
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

#endif
