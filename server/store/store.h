/* grainlabd's SQLite store (schema/migrations): sessions, runs, events, samples and results.
 * Writes are queued and committed in batches by one writer thread, so a session never waits for
 * the disk; reads use their own connections and see every write queued before them. */
#ifndef GRAINLAB_STORE_H
#define GRAINLAB_STORE_H

#include "grainlab/grainlab.h"
#include "store_error.h"
#include "store_filter.h"
#include "timeline.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct store store;

/* Open (creating it and its folder's file) and migrate; runs left open by a crash are closed as
 * "interrupted". NULL with the reason in err. */
store *store_open(const char *path, char *err, size_t errlen);
/* Write everything queued, stop the writer, close. */
void store_close(store *st);
/* The id the next run gets (ids are never reused, across restarts too). */
int64_t store_next_run_id(store *st);
/* The database file. */
const char *store_path(const store *st);
/* Runs closed as interrupted at this start. */
int store_interrupted(const store *st);

/* Writes (queued; never block on the disk). */
void store_session(store *st, const char *id, const char *join, const char *label, bool private_);
void store_session_end(store *st, const char *id);
void store_run_start(store *st, int64_t run, const char *session_id, const char *label,
                     const grn_world_def *def, int grains);
void store_event(store *st, int64_t run, uint64_t steps, double t, const char *kind,
                 const char *detail_json);
void store_sample(store *st, int64_t run, uint64_t steps, double t, const grn_measurements *m);
/* `results`: name → number (stolen). */
void store_run_end(store *st, int64_t run, const char *reason, uint64_t steps, double t,
                   uint64_t digest, json_t *results);
/* For /metrics: records waiting, and how long records waited from queueing to commit. */
typedef struct store_stats {
  uint64_t queue_length, written, batches;
  double latency_sum, latency_max; /* s, over everything written; the max over the last batch */
} store_stats;
void store_get_stats(store *st, store_stats *out);

/* Wait until everything queued so far is committed (bounded by timeout_ms). */
void store_sync(store *st, int timeout_ms);

/* Reads. Each returns STORE_OK, or a status with err filled (store_error.h). */
/* One page of the runs the filter selects (store_filter.h), and how many it selects in all:
 * {"runs": [...], "total", "limit", "offset"}. */
store_status store_list_runs(store *st, const store_runs_filter *f, json_t **out, store_error *err);
/* One run with its results and events; STORE_E_NOT_FOUND when there is none. */
store_status store_get_run(store *st, int64_t id, json_t **out, store_error *err);
/* The run's samples as JSON ({"columns": [...], "rows": [[...], ...]}) or CSV text. */
store_status store_samples(store *st, int64_t id, bool csv, char **out, size_t *len,
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

int store_load_replay(const char *db_path, int64_t run, store_replay *out, char *err,
                      size_t errlen);
void store_replay_free(store_replay *r);

#endif
