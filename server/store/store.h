/* grainlabd's SQLite store (schema/migrations): sessions, runs, events, samples and results.
 * Writes are queued and committed in batches by one writer thread, so a session never waits for
 * the disk; reads use their own connections and see every write queued before them. */
#ifndef GRAINLAB_STORE_H
#define GRAINLAB_STORE_H

#include "grainlab/grainlab.h"
#include "store_error.h"
#include "store_filter.h"
#include "store_run.h"
#include "timeline.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct store store;

/* Open (creating it and its folder's file) and migrate; runs left open by a crash are closed as
 * "interrupted". NULL with the reason in err. */
store *store_open(const char *path, char *err, size_t errlen);
/* A cluster node's store (issue 20). `node`: this node's id ("" or NULL: a lone daemon); it is
 * in every run the store lists ("node"). `results_db`: NULL or "" for none, else a postgresql://
 * URI (store_results_db_check; needs a node): every change of what GET /api/runs reads goes
 * through an outbox (schema/migrations/009) to that PostgreSQL database, and store_list_runs
 * answers from it for the whole cluster. The store opens without waiting for PostgreSQL. */
typedef struct store_options {
  const char *node;
  const char *results_db;
} store_options;
store *store_open_with(const char *path, const store_options *o, char *err, size_t errlen);
/* Write everything queued, ship what the outbox holds while the results database answers (a
 * few seconds at most), stop the writer, close. */
void store_close(store *st);
/* The id the next run gets (ids are never reused, across restarts too). */
int64_t store_next_run_id(store *st);
/* The database file. */
const char *store_path(const store *st);
/* Runs closed as interrupted at this start. */
int store_interrupted(const store *st);

/* Bounds on what the record holds and what waits in memory for it (issue 16):
 * - a run records at most STORE_RUN_EVENTS_MAX events: the last one kept is "events_truncated"
 *   ({"limit": n}), later ones are dropped and counted in the run's events_dropped, and a run
 *   with dropped events cannot be replayed (its record no longer says everything that happened);
 * - at most STORE_QUEUE_MAX records wait for the writer (a slow, full or read-only disk): past
 *   it, new samples and events are dropped and counted in their run's samples_dropped and
 *   events_dropped (logged as store_dropping); sessions, run starts and run ends are always
 *   kept, and nothing already queued is ever dropped while grainlabd runs. */
#define STORE_RUN_EVENTS_MAX 100000
#define STORE_QUEUE_MAX 50000

/* Writes (queued; never block on the disk). A write the disk refuses (full, read-only, I/O
 * error) is kept queued and retried until it commits; meanwhile the store reports itself
 * unavailable (store_writable, store_sync). */
/* A session; of its tokens (64 characters each; viewer_token "" for a public session) only their
 * SHA-256 is kept, so a private session's runs stay readable with them after it ends. */
void store_session(store *st, const char *id, const char *join, const char *label, bool private_,
                   const char *control_token, const char *viewer_token);
void store_session_end(store *st, const char *id);
/* class_id and group: the class and group whose session the run is (both NULL: none). */
/* A run's start: its definition, class and group (or NULL), and `reset_of`, the run a Reset
 * ended to start this one (0: none); it records the engine's state version with it. */
void store_run_start(store *st, int64_t run, const char *session_id, const char *label,
                     const grn_world_def *def, int grains, const char *class_id, const char *group,
                     int64_t reset_of);
/* The run's stretches of constant parameters (schema/migrations/010: a JSON array), kept a stretch
 * at a time: `closed` (NULL at the run's start) replaces the array's last element, and `opened`
 * (NULL at its end) is appended; both are copied. At the start, the array is [opened]. */
void store_run_segment(store *st, int64_t run, const json_t *closed, const json_t *opened);
void store_event(store *st, int64_t run, uint64_t steps, double t, const char *kind,
                 const char *detail_json);
/* m holds the measurements of `scene`, a catalogue entry (static). */
void store_sample(store *st, int64_t run, uint64_t steps, double t, const grn_scene_info *scene,
                  const grn_measurements *m);
/* Why a run ends, described once (the runs filter and its messages read it; migration 010 holds
 * the same list in the table's CHECK): brought to its end, an orderly shutdown, a scene switch,
 * deleted, its worker failed, a crash of the daemon (closed at the next start), idle, a Reset
 * (which starts a new run: its reset_of). */
#define STORE_END_REASONS                                                                          \
  "finished", "stopped", "switched", "deleted", "failed", "interrupted", "idle", "reset"
/* `results`: name → number (stolen); `reason`: one of STORE_END_REASONS. */
void store_run_end(store *st, int64_t run, const char *reason, uint64_t steps, double t,
                   const uint64_t *digest, json_t *results);
/* Classes (issue 17, migration 007). A class row is a JSON object with the keys of
 * store_class_columns (NULL-terminated): id, code, name (strings), scenes (array), max_groups,
 * grain_budget (integers), defaults (object), private, locked (booleans), second_join,
 * spotlight (string or null), teacher_hash (the token's SHA-256, store_token_hash), created_at,
 * ends_at (Unix seconds), ended_at (Unix seconds or null), seeds ("shared" or "own", migration
 * 012). store_class records a new class or,
 * for one already recorded, its second_join, locked, spotlight and ended_at (the rest never
 * changes); `row` is copied. store_group records a group of a class once. */
extern const char *const store_class_columns[];
void store_class(store *st, const json_t *row);
void store_group(store *st, const char *class_id, const char *name);
/* Recorded classes as such rows with "groups": [{"name", "joined_at"}, in the order they joined
 * (unix seconds of the first join)], oldest class first: the open ones and those ended since
 * `since` (unix seconds; what grainlabd keeps in memory), or the one whose id or code is `key`
 * (an empty list when there is none). */
typedef enum store_class_pick {
  STORE_CLASSES_LIVE,
  STORE_CLASS_ID,
  STORE_CLASS_CODE
} store_class_pick;
store_status store_load_classes(store *st, store_class_pick pick, const char *key, double since,
                                json_t **out, store_error *err);

/* The results database (store_pg.c). Whether `uri` is one grainlabd takes: a postgresql:// or
 * postgres:// URI that libpq parses (its password, if any, may instead come from PGPASSWORD or
 * ~/.pgpass); -1 with the reason in why otherwise. No message of the store ever holds the
 * password: logs and errors name the database as store_results_db_name writes it. */
int store_results_db_check(const char *uri, char *why, size_t whylen);
/* "user@host:port/dbname" of such a URI, without its password, for logs and messages. */
void store_results_db_name(const char *uri, char *out, size_t size);
/* The results database's lines of /metrics (nothing without one): whether the shipper reaches
 * it, how many changes wait in the outbox, when a batch last committed there, and the totals. */
void store_results_db_metrics(store *st, FILE *f);

/* For /metrics: records waiting, and how long records waited from queueing to commit. */
typedef struct store_stats {
  uint64_t queue_length, written, batches;
  double latency_sum, latency_max; /* s, over everything written; the max over the last batch */
  bool writable;                   /* the last write committed */
  uint64_t write_failures;         /* transactions the disk refused (each retried) */
  uint64_t dropped;                /* samples and events dropped (the bounds above) */
  /* bytes SQLite holds, now and at most since the start (its page caches, one per connection,
   * fill up to their bound as the database grows: growth that is not a leak) */
  uint64_t memory, memory_peak;
} store_stats;
void store_get_stats(store *st, store_stats *out);

/* Whether the store can write now: false (with the disk's reason in why) from a refused write
 * until a retry commits. */
bool store_writable(store *st, char *why, size_t whylen);

/* Wait until everything queued so far is committed (bounded by timeout_ms). STORE_OK, also when
 * the wait timed out on a busy but healthy writer; STORE_E_UNAVAILABLE at once while the store
 * cannot write. */
store_status store_sync(store *st, int timeout_ms);

/* Who reads the record: the admin reads every run; anyone else the runs of public sessions, and
 * those of each private session whose viewer or control token they present (its SHA-256 is
 * compared with the one store_session kept), and those of each class whose teacher token they
 * present. */
typedef struct store_access {
  bool admin;
  char token_sha256[65]; /* lower-case hex; "" without a token */
} store_access;
/* From a presented bearer token (NULL: none) and whether it is the admin's. */
void store_access_init(store_access *a, const char *token, bool admin);
/* The SHA-256 of a token in lower-case hex, as the store keeps it. */
void store_token_hash(const char *token, char out[65]);

/* Reads. Each returns STORE_OK, or a status with err filled (store_error.h): a run the access
 * may not read is STORE_E_NOT_FOUND, as one that does not exist (its id cannot be probed), and
 * STORE_E_UNAVAILABLE while the store cannot write (the record would miss what is queued). */
/* One page of the runs the filter selects (store_filter.h) and `a` may read, and how many it
 * selects in all (store_run.h; the caller frees it with store_run_page_free). Each run names its
 * class and group (null for a run outside any class), and its node when the store has one. A
 * filter on a class that does not exist, or that is private and `a` is not its teacher's or the
 * admin's, is STORE_E_NOT_FOUND.
 * With a results database the list is the whole cluster's, read from PostgreSQL with the same
 * filter, order and paging; STORE_E_UNAVAILABLE (code results_db_unavailable) while it cannot be
 * reached. Tokens never leave a node, so a private session's runs (and a private class's) are
 * listed to the admin and to a token that opens them on the node that answers: that node finds
 * which of its own sessions and classes the token opens (the hashes it keeps) and asks
 * PostgreSQL for those ids. Another node's private runs are that node's to list (reach it as
 * /n/{node}/api/runs); a token never shows more than it does to its own node's store. */
store_status store_list_runs(store *st, const store_runs_filter *f, const store_access *a,
                             store_run_page *out, store_error *err);
/* One run of this store with its results, its counts of samples and events, and one page of its
 * events (store_filter.h); freed with store_run_detail_free. */
store_status store_get_run(store *st, int64_t id, const store_access *a,
                           const store_events_page *page, store_run_detail *out, store_error *err);
/* The run's samples in step order, each with the parameters in force when it was taken, given
 * to the sink (store_run.h) while the read lasts: its head, then a row at a time. */
store_status store_read_samples(store *st, int64_t id, const store_access *a,
                                const store_samples_sink *sink, store_error *err);
/* Whether `a` may read run `id` (replays and forks), and whether its session is private. */
store_status store_run_access(store *st, int64_t id, const store_access *a, bool *private_,
                              store_error *err);

/* A consistent copy of the database at db_path into out_path (which must not exist), made with
 * SQLite's online backup while grainlabd keeps writing. Returns the runs the copy holds, or −1
 * with err. */
long store_backup(const char *db_path, const char *out_path, char *err, size_t errlen);

/* For replays: the run's definition and its parameter changes and actions in order, read from a
 * database file directly (the CLI). */

typedef struct store_replay {
  grn_world_def def;
  uint64_t end_steps;
  bool ended;
  char digest[17];
  char end_reason[16];
  timeline events; /* the run's actions and parameter changes, ending at end_steps */
} store_replay;

/* Refused (-1 with err) for an unknown run and for one whose events were dropped (the bounds
 * above), which could not be replayed faithfully. */
int store_load_replay(const char *db_path, int64_t run, store_replay *out, char *err,
                      size_t errlen);
void store_replay_free(store_replay *r);

#endif
