/* Sessions of grainlabd: one live simulation each, run by its own sandboxed worker and paced at
 * real time by its own thread. Every change of a session passes through one place
 * (sess_record.c), which streams it and records it. */
#ifndef GRAINLAB_SESS_H
#define GRAINLAB_SESS_H

#include "api_error.h"
#include "api_json.h"
#include "chan.h"
#include "grainlab/grainlab.h"
#include "snapcache.h"
#include "store.h"
#include "worker_client.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct sess_limits {
  int max_sessions;
  int max_grains;
  uint64_t worker_memory; /* bytes */
  int threads;            /* engine threads per worker */
  int max_viewers;        /* per session */
  int max_per_client;     /* live sessions one client (IP) may hold; 0: no limit */
  double step_budget;     /* grain-steps (GRN_GRAIN_STEP_US of work each) one `step n` may take */
  int idle_timeout_s;     /* no viewer and no controller's change this long ends it; 0: never */
  int replay_slots;       /* stored runs replayed at once for their snapshots (one per client) */
} sess_limits;

typedef enum sess_state {
  SESS_RUNNING = 0,
  SESS_PAUSED,
  SESS_ASLEEP,
  SESS_FAILED,
  SESS_ENDED
} sess_state;

typedef struct session session;

typedef struct sess_registry sess_registry;

/* A failed request (api_error.h). */
typedef api_error sess_error;

/* `st` (may be NULL: nothing recorded) records every session, run, event and sample. node (a
 * node_id_ok id, or "" for a lone daemon) prefixes every session id and join code (node.h). */
sess_registry *sess_registry_new(const sess_limits *limits, const char *node,
                                 const char *worker_exe, store *st);
/* This daemon's node id ("" alone). */
const char *sess_node(const sess_registry *r);
/* Called (from any thread) whenever a session's stream has something new: the websocket server
 * wakes its service thread here. Set once, before the first session. */
void sess_registry_set_notify(sess_registry *r, void (*notify)(void *), void *ctx);
int sess_max_viewers(const sess_registry *r);
int sess_max_grains(const sess_registry *r);
/* Ends every session (workers stopped, threads joined) and frees the registry. */
void sess_registry_free(sess_registry *r);

/* Create from a validated definition for `client` (its address, for the per-client limit; NULL:
 * none); returns the session (referenced) or NULL with err. The control token is written to
 * token_out (65 bytes); a private session also gets a viewer token (viewer_token_out, 65 bytes)
 * without which it cannot be watched or looked at. Failed and ended sessions hold no slot. */
session *sess_create(sess_registry *r, const grn_world_def *def, const char *label, bool private_,
                     const char *client, char token_out[65], char viewer_token_out[65],
                     sess_error *err);
/* A stored run's final state (server/common/snapshot.h's format), made by replaying it in a
 * worker of its own to its recorded end, checked against its recorded digest where it has one:
 * *text (malloc'd, *len bytes), and the step it is of. A run with a recorded digest is replayed
 * once: its snapshots (every format) are kept in the registry's cache (sess_set_snapcache) and
 * served from there. Replays share limits.replay_slots workers, one per client at a time (429
 * replay_busy with Retry-After; `client` "" or NULL: the admin, held to the pool only); a run
 * that would take more than a few minutes is refused (422). */
int sess_run_snapshot(sess_registry *r, int64_t run, int format, const char *client, char **text,
                      size_t *len, uint64_t *steps, sess_error *err);
/* Where finished runs' snapshots are kept (taken over; NULL: none kept). Set before serving. */
void sess_set_snapcache(sess_registry *r, snapcache *cache);
/* Where settled states are kept and shared (settled.h; taken over; NULL: none kept). Set before
 * serving. */
typedef struct settled settled;
void sess_set_settled(sess_registry *r, settled *cache);
/* The kept states' figures for /metrics (Prometheus text), appended to f. */
void sess_settled_metrics(sess_registry *r, FILE *f);
/* A live session from a stored run: a replay (the run's changes at their steps, in real time, then
 * paused) or, with fork_params (possibly none), a fork (as fast as the worker goes to
 * the run's end, then the new parameters, then on in real time). Both are recorded as new runs
 * that replay in turn. */
session *sess_create_from_run(sess_registry *r, int64_t run, const api_params *fork_params,
                              const char *label, bool private_, const char *client,
                              char token_out[65], char viewer_token_out[65], sess_error *err);
/* A class's session (issue 17, class.c): its class and group, which its runs record, and the
 * class's rules: the scenes it may switch to, its grain budget, and the class's lock (an int the
 * class sets with __atomic builtins and the session only reads; the class outlives it). */
#define SESS_CLASS_SCENES 32
typedef struct sess_class_link {
  char class_id[NODE_NAME_SIZE];
  char group[321]; /* 80 characters of UTF-8 at most */
  int grain_budget;
  const grn_scene_info *scenes[SESS_CLASS_SCENES];
  int nscenes;
  const int *locked;
} sess_class_link;
/* sess_create for a class's group: held to the server's limits but to no client's (a class's
 * groups sit behind one school address), and to the class's rules. */
session *sess_create_in_class(sess_registry *r, const grn_world_def *def, const char *label,
                              bool private_, const sess_class_link *link, char token_out[65],
                              char viewer_token_out[65], sess_error *err);
/* Whether the session's class has locked its students' controls (false outside a class). */
bool sess_locked(const session *s);
/* Whether the session is live (not failed or ended). */
bool sess_alive(session *s);

/* len (at most 64) random characters of alphabet, and a NUL: ids, codes and tokens (getrandom). */
void sess_random_text(char *out, size_t len, const char *alphabet);
/* Codes people read out (join codes, class codes): no 0/O or 1/I to misread. */
#define SESS_CODE_ALPHABET "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

/* Look up by id or join code; the result is referenced and must be released. */
session *sess_find(sess_registry *r, const char *id);
void sess_release(session *s);
/* End a session and forget it, within a second even while its worker is busy (it is killed). */
void sess_delete(sess_registry *r, session *s);

/* The session's stream (valid while the session is referenced). */
chan *sess_chan(session *s);
const char *sess_id(const session *s);

/* A controller's action from the websocket (spout drag, tool, ...): validated now, applied by the
 * session's own thread before its next step, so the caller never waits for the worker. Only
 * actions of the engine (not pause/resume/step); a newer drag replaces a queued one. */
int sess_queue_action(session *s, const api_action *action, sess_error *err);

/* Constant-time comparison of a presented control token. */
bool sess_token_ok(const session *s, const char *token);
/* Whether watching needs a token, and whether this one (viewer or control token) will do. */
bool sess_private(const session *s);
bool sess_viewer_ok(const session *s, const char *token);

/* What one session shows (api_session_json renders it), taken under its lock. */
void sess_view(session *s, api_session_view *out);
/* Every session's view (private ones only if asked for): a malloc'd array of `count` (NULL when
 * memory runs out). */
api_session_view *sess_list(sess_registry *r, bool include_private, int *count);

/* Changes: each validated before it touches anything; on error nothing changed. */
/* params: checked here against the session's scene (api_params_apply, which notes each one's
 * index), then applied in order. */
int sess_set_params(session *s, api_params *params, sess_error *err);
int sess_set_speed(session *s, double speed, sess_error *err);
/* An action read by api_read_action: the engine's, checked against the scene, or the daemon's
 * own. */
int sess_action(session *s, const api_action *action, sess_error *err);
int sess_switch_scene(sess_registry *r, session *s, const grn_world_def *def, sess_error *err);
/* Brings the session to its end as the `finish` action does (its run closes as "finished"),
 * saying why (at most 199 bytes) to its viewers. */
int sess_finish(session *s, const char *why, sess_error *err);

/* The world's particles and contacts now (server/common/snapshot.h), in *text (malloc'd, *len
 * bytes), and the step they are of. One at a time per session: another asked meanwhile is
 * refused (429), so viewers cannot queue the pacing thread out. */
int sess_snapshot(session *s, int format, char **text, size_t *len, uint64_t *steps,
                  sess_error *err);

/* Metrics for /metrics, and the load a node publishes in /readyz for placement. */
typedef struct sess_totals {
  int sessions, running, failed, viewers, workers;
  int max_sessions; /* the limit: room is max_sessions - workers */
  int lagging;      /* running sessions behind real time (rt factor under 0.95) */
  double work;      /* grain-steps per second the running sessions ask for, at their speeds */
  uint64_t created, worker_failures, steps;
  uint64_t replays; /* stored runs replayed for their snapshots (kept ones are not replayed) */
} sess_totals;
void sess_get_totals(sess_registry *r, sess_totals *out);
/* Per-session series for /metrics (Prometheus text), appended to f. */
void sess_metrics(sess_registry *r, FILE *f);

#endif
