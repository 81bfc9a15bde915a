/* A run as the record reads it back: its fields described once (name, kind, column), filled alike
 * by the SQLite store and the cluster's results database, and turned into JSON or CSV only by the
 * API (server/api/api_runs.c). */
#ifndef GRAINLAB_STORE_RUN_H
#define GRAINLAB_STORE_RUN_H

#include "grainlab/grainlab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum store_kind {
  STORE_TEXT,
  STORE_INT,
  STORE_REAL,
  STORE_NUMBERS,  /* a JSON object of name → number (parameters, results) */
  STORE_SEGMENTS, /* the JSON array of stretches (schema/migrations/010) */
} store_kind;

/* The fields of a listed run, in the order of both backends' list queries: id, key (as the API
 * names it), kind, and the column of runs r (NULL: each backend computes it, as the node's id and
 * the results). */
#define STORE_RUN_FIELDS(X)                                                                        \
  X(NODE, "node", STORE_TEXT, NULL)                                                                \
  X(ID, "id", STORE_INT, "r.id")                                                                   \
  X(SESSION_ID, "session_id", STORE_TEXT, "r.session_id")                                          \
  X(LABEL, "label", STORE_TEXT, "r.label")                                                         \
  X(SCENE, "scene", STORE_TEXT, "r.scene")                                                         \
  X(SEED, "seed", STORE_INT, "r.seed")                                                             \
  X(GRAINS, "grains", STORE_INT, "r.grains")                                                       \
  X(ENGINE_VERSION, "engine_version", STORE_TEXT, "r.engine_version")                              \
  X(PARAMS, "params", STORE_NUMBERS, "r.params")                                                   \
  X(STARTED_AT, "started_at", STORE_REAL, "r.started_at")                                          \
  X(ENDED_AT, "ended_at", STORE_REAL, "r.ended_at")                                                \
  X(END_REASON, "end_reason", STORE_TEXT, "r.end_reason")                                          \
  X(END_STEPS, "end_steps", STORE_INT, "r.end_steps")                                              \
  X(END_T, "end_t", STORE_REAL, "r.end_t")                                                         \
  X(DIGEST, "digest", STORE_TEXT, "r.digest")                                                      \
  X(RESULTS, "results", STORE_NUMBERS, NULL)                                                       \
  X(EVENTS_DROPPED, "events_dropped", STORE_INT, "r.events_dropped")                               \
  X(SAMPLES_DROPPED, "samples_dropped", STORE_INT, "r.samples_dropped")                            \
  X(CLASS, "class", STORE_TEXT, "r.class_id")                                                      \
  X(GROUP, "group", STORE_TEXT, "r.group_name")                                                    \
  X(SAMPLE_STEPS, "sample_steps", STORE_INT, "r.sample_steps")                                     \
  X(RESET_OF, "reset_of", STORE_INT, "r.reset_of")                                                 \
  X(STATE_VERSION, "state_version", STORE_INT, "r.state_version")                                  \
  X(SEGMENTS, "segments", STORE_SEGMENTS, "r.segments")

#define STORE_RUN_ENUM(id, key, kind, column) STORE_RUN_##id,
typedef enum store_run_field {
  STORE_RUN_FIELDS(STORE_RUN_ENUM) STORE_RUN_FIELD_COUNT
} store_run_field;
#undef STORE_RUN_ENUM

typedef struct store_field {
  const char *key;
  store_kind kind;
  const char *column;
} store_field;
extern const store_field store_run_fields[STORE_RUN_FIELD_COUNT];

/* "SELECT" and the fields' expressions, `node` and `results` for the two computed ones, into out;
 * 0, or -1 when it does not fit. */
int store_run_select(const char *node, const char *results, char *out, size_t size);

/* One value: null, or its kind's member. */
typedef struct store_value {
  bool null;
  int64_t i;  /* STORE_INT */
  double r;   /* STORE_REAL */
  char *text; /* STORE_TEXT, and the JSON text of STORE_NUMBERS and STORE_SEGMENTS (malloc'd) */
} store_value;

typedef struct store_run {
  store_value f[STORE_RUN_FIELD_COUNT];
} store_run;
void store_run_free(store_run *r);

/* One page of the runs list. */
typedef struct store_run_page {
  store_run *runs;
  size_t count;
  int64_t total; /* how many the filter selects in all */
  long limit, offset;
} store_run_page;
void store_run_page_free(store_run_page *p);

/* One run with its counts and one page of its events. */
typedef struct store_event_row {
  int64_t id, steps;
  double t, at;
  char *kind, *detail; /* detail: its JSON text */
} store_event_row;
typedef struct store_run_detail {
  store_run run;
  int64_t samples, events_total;
  store_event_row *events;
  size_t nevents;
  bool more; /* another page follows the last event */
} store_run_detail;
void store_run_detail_free(store_run_detail *d);

/* A run's samples, read a row at a time. `head` comes first: the scene, its measurements other
 * than t in the engine's order (the rows' values), and whether the rows carry the parameters in
 * force (a run recorded since the state version 10; else none). */
typedef struct store_samples_head {
  int64_t run_id, sample_steps;
  const grn_scene_info *scene;
  int nmeasures;
  int measures[GRN_MEASURE_MAX];
  bool params;
} store_samples_head;
typedef struct store_sample_row {
  double t;
  int64_t steps;
  const char *state;
  const store_value *value; /* the head's measurements, STORE_REAL or null */
  const store_value *param; /* the scene's parameters in force, STORE_REAL or null */
} store_sample_row;
typedef struct store_samples_sink {
  void (*head)(void *ctx, const store_samples_head *h);
  void (*row)(void *ctx, const store_sample_row *r);
  void *ctx;
} store_samples_sink;

#endif
