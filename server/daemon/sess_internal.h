/* What the session files share (sess.c: the registry; sess_pace.c: pacing and playback;
 * sess_record.c: the record and the stream's messages; sess_change.c: validated changes). Only
 * those files include it. */
#ifndef GRAINLAB_SESS_INTERNAL_H
#define GRAINLAB_SESS_INTERNAL_H

#include "log.h"
#include "sess.h"
#include "settled.h"
#include "timeline.h"

#define TICK_HZ 60 /* pacing ticks per second: 4 steps of 1/240 s each at speed 1 */
/* Ticks per worker call, watched or not: a call's round trip and its turn on a core cost more
 * than four ticks' steps save, and viewers draw between frames 15 a second apart (issue 33) */
#define CALL_TICKS 4
#define WORKER_TIMEOUT_MS 5000 /* a worker silent this long (beyond its work) has hung */
#define QUEUE_MAX 16           /* controller actions from the websocket waiting for a step */
/* A run's stretches of constant parameters at most: each change rewrites the run's list, so a
 * flood of changes must not grow it without end; a class's run has a few dozen. */
#define SEGMENTS_MAX 1000
/* One worker call's work at most, in the engine's cost units (µs on a slow machine): a long
 * `step n` or a fast tick goes in calls of this size, so a change waits for one of them at most
 * (a single step of a heavier world is still one call). */
#define CALL_BUDGET_US 50000.0
#define STOP_GRACE_MS 500 /* a worker asked to quit is killed after this: DELETE ends in 1 s */
#define DEAD_KEEP_S 600   /* a failed or ended session stays visible this long without viewers */

/* A stored run played into a live session: its events at their steps, in real time (a replay) or
 * as fast as the worker goes up to the run's end and then new parameters (a fork). */
typedef struct script {
  store_replay r;
  bool fast;
  int64_t source;
  timeline fork; /* a fork's new parameters, applied at the end */
} script;

/* Locking. `wlock` owns the worker channel (wc) and is held across worker calls; `lock` guards
 * everything else and is never held while the worker works, so a reader (a GET, /metrics, a
 * websocket join) waits only for another thread's few field updates. The one order is wlock,
 * then lock: code that calls the worker takes both (sess__own) and lets `lock` go around each
 * call, then looks at the session again, since a pause, a speed change or an ending may have
 * come meanwhile. */
struct session {
  sess_registry *reg;
  int refs;        /* under the registry lock */
  bool live;       /* under the registry lock: holds a slot (not failed or ended) */
  char client[48]; /* who created it, for the per-client limit */
  char id[NODE_NAME_SIZE], join[NODE_CODE_SIZE], token[65],
      viewer_token[65]; /* viewer_token empty: public */
  char label[64];
  pthread_mutex_t wlock; /* the worker channel */
  pthread_mutex_t lock;  /* everything below but wc */
  int wanted;            /* __atomic: threads waiting for wlock; the pacing thread lets them in */
  int cancel_fd;         /* eventfd, written once when the session ends: cuts a call short */
  bool ending;           /* finish or delete under way: the worker's end is expected */
  pthread_cond_t wake;
  grn_world_def def;
  sess_state state;
  char reason[200];
  double speed, rt_factor, step_acc;
  uint64_t run_id;
  worker_client wc;
  worker_status last;
  worker_samples samples; /* those the last step call brought (wlock), published after it */
  bool stop;
  pthread_t thread;
  bool has_thread;
  chan ch;
  bool dirty;                   /* changed since the last frame */
  double sample_mark;           /* the 0.25 s sample last streamed */
  grn_state shown_state;        /* the measurement state last announced */
  pthread_mutex_t qlock;        /* the queue below (never held while calling the worker) */
  const grn_scene_info *qscene; /* the scene, for checking queued actions */
  api_action queue[QUEUE_MAX];
  int queued;
  bool run_open; /* the current run is recorded as started and not yet ended */
  /* the current run's open stretch of constant parameters (schema/migrations/010; the closed ones
   * are in the store), NULL without a run, and how many the run has had */
  json_t *segment;
  int nsegments;
  /* its latest sample, its results when it closes (kept as is: a JSON object a sample, four a
   * second in every pacing thread, fragmented the heap) */
  grn_measurements segment_meas;
  bool segment_sampled;
  uint64_t reset_of; /* the run a Reset ended, for the run it starts (0: none) */
  script *script;    /* a replay or fork in progress (NULL: none) */
  int stepping;      /* a `step n` in progress: its steps left (0: none) */
  bool step_cancel;
  bool snapping;        /* a snapshot is being made (sess_snapshot) */
  bool in_class;        /* a class's group's session: link holds its class */
  sess_class_link link; /* set at creation, never changed */
  double active;        /* when a controller last changed something, or a viewer left (s) */
  double died;          /* when it failed or ended (s) */
  /* its settle, shared through the registry's kept states (sess_settle.c): the key of its
   * definition (skeyed: it has one, and its world started fresh from it); pristine: nothing has
   * changed the world since, so it is on the path every session of the key takes; settling: its
   * grains had not yet come to rest when last seen; awaiting: another session settles the key,
   * and this one waits for it (not stepping) until await_until (monotonic s), looking again when
   * the cache's generation moves past seen_gen; claim: this session settles the key for the
   * others (its ticket; 0: not); restored: its world came from a kept state (the run says so) */
  settled_key skey;
  bool skeyed, pristine, settling, awaiting, restored;
  bool restore_untold; /* its run has not yet said so (settle_restored) */
  double await_until;
  uint64_t seen_gen, claim;
};
struct sess_registry {
  pthread_mutex_t lock;
  session **list;
  int n, cap;
  sess_limits limits;
  char node[NODE_ID_MAX + 1]; /* "" a lone daemon */
  char worker_exe[4096];
  uint64_t next_run, created, worker_failures;
  uint64_t steps; /* __atomic: every step of every session, for /metrics */
  store *st;
  void (*notify)(void *);
  void *notify_ctx;
  pthread_t reaper; /* ends idle sessions and forgets dead ones */
  pthread_mutex_t reaper_lock;
  pthread_cond_t reaper_wake;
  bool reaper_stop;
  /* stored runs replayed for their snapshots: limits.replay_slots at once, each a client's */
  pthread_mutex_t replay_lock;
  char (*replaying)[48]; /* the clients of the replays under way ("" the admin's) */
  int nreplaying;
  uint64_t replays; /* under replay_lock: replays started */
  snapcache *snaps; /* finished runs' snapshots, made once; NULL: none kept */
  settled *settled; /* settled states, kept and shared (issue 33); NULL: none kept */
};

/* sess_record.c: the one place every change passes (under the session's lock): the stream's
 * events, and the record; `detail` (stolen, may be NULL) adds fields. */
void sess__event(session *s, const char *kind, json_t *detail);
void sess__notify(const session *s);
void sess__stream_text(session *s, json_t *msg);
json_t *sess__action_text(const grn_action *a);
void sess__run_started(session *s);
void sess__close_run(session *s, const char *reason);
/* Refused (409 too_many_changes) once the run has SEGMENTS_MAX stretches of parameters. */
int sess__room_for_change(const session *s, sess_error *err);
/* The worker ended: the session fails with its reason, and its run closes as failed. */
void sess__failed(session *s);
void sess__publish(session *s, bool samples);
/* The samples the last step call brought (s->samples), each streamed and recorded in order; under
 * both locks, right after the call. */
void sess__samples(session *s);

/* sess_pace.c */
double sess__now(void);
void *sess__pace(void *arg);
/* Steps one worker call may take (CALL_BUDGET_US), at least one. */
int sess__chunk(const session *s);
int sess__timeout_for(const session *s, int steps);
void sess__free_script(script *sc);

/* sess_change.c: one worker call's reply (worker_call_*) under the session lock: the status kept,
 * an engine refusal mapped (`set`: a live parameter change), a worker that ended fails the
 * session. 0 or -1 with err. */
int sess__reply(session *s, int type, const worker_result *r, bool set, sess_error *err);
int sess__act(session *s, const grn_action *a, sess_error *err);
/* Reset (any caller's, through sess__act): the scene from its start as a new run (sess_change.c).
 */
int sess__reset(session *s, sess_error *err);
int sess__set(session *s, int index, double value, sess_error *err);
/* Refused before the worker when the session has failed or ended. */
int sess__live(const session *s, sess_error *err);

/* sess_settle.c (under both locks, `lock` let go around worker calls and file reads) */
/* Right after a worker started: restores the definition's kept state if there is one (and the
 * world is fresh and settling), else waits for the session that settles it, or settles it for
 * the others. 0, or -2 when the worker ended meanwhile. */
int sess__settle_start(session *s);
/* The pacing thread, before its steps: a waiting session looks again when a state was kept or a
 * claim given up, or its wait ran out. Whether it restored (its clock jumped). It steps only
 * once it waits no more (s->awaiting). */
bool sess__settle_tick(session *s);
/* A state saved where the grains first came to rest, kept by sess__settle_keep once the
 * session's locks are let go (a file written, fsync'd). */
typedef struct sess_keep {
  settled_key key;
  uint64_t ticket;
  settled_state state; /* bytes NULL: nothing to keep */
} sess_keep;
/* The pacing thread, after its steps: the session that settles its key for the others saves the
 * state the moment the grains have come to rest. */
void sess__settle_check(session *s, sess_keep *out);
void sess__settle_keep(settled *c, sess_keep *k);
/* Something changed the world (an action, a parameter), or it goes (the run closes): it is off
 * the settle's path; a claim is given up, a wait ends. */
void sess__settle_forget(session *s);
/* The session stops settling for the others (paused), staying on the path. */
void sess__settle_release(session *s);
/* The run's `settle_restored` event, when its world came from a kept state. */
void sess__settle_announce(session *s);

/* sess.c */
int sess__check_count(const sess_registry *r, const grn_world_def *def, sess_error *err);
/* A class's rules for a definition (its scenes, its grain budget): 0, or 409 with err. */
int sess__class_allows(const sess_class_link *link, const grn_world_def *def, sess_error *err);
/* Under both locks (lock let go while the worker starts). */
int sess__start_worker(session *s, sess_error *err);
/* The worker's create message for a definition, with the registry's limits (sess.c). */
worker_create sess__create_msg(const sess_registry *r, const grn_world_def *def);
/* A stored run loaded for replaying: 0, or -1 with err (not found, dropped events, no recorded
 * end) (sess_replay.c). */
int sess__load_run(sess_registry *r, int64_t run, store_replay *out, sess_error *err);
/* The listed sessions, each referenced: release each, then free the array. */
session **sess__snapshot(sess_registry *r, int *n);
/* Take wlock then lock, ahead of the pacing thread's next call; and give both back. */
void sess__own(session *s);
void sess__disown(session *s);
/* sess__own for a finish or a DELETE (ending set, the pacing thread and `step n` told to stop):
 * a call in flight of a world whose calls are short (within CALL_BUDGET_US) is waited for, up to
 * END_WAIT_MS, so that the run ends where the worker's state is known; a longer one (an N-body
 * step of seconds, a hung worker) is cut short by the cancel, which ends the worker. */
#define END_WAIT_MS 1000
void sess__own_to_end(session *s);
/* Under both locks: make s->last's digest that of its steps (a STATUS call: the pacing thread
 * does not ask for it, sess_pace.c) unless the worker is gone. Returns the worker's reply type,
 * WORKER_REPLY_STATUS when nothing was needed. */
int sess__fresh_digest(session *s);
/* The pacing thread, between calls (both locks held): let a thread that waits for the worker go
 * first; sess__give_way is the wait itself, with neither lock held. */
void sess__let_in(session *s);
void sess__give_way(session *s);
/* A slot for a session that starts (or starts again), or a refusal; under the registry lock. */
int sess__take_slot(const sess_registry *r, const char *client, sess_error *err);
/* The session stops holding a slot (it failed or ended); under `lock`. */
void sess__dead(session *s);
/* A controller did something (the idle clock starts again). */
void sess__touch(session *s);

#endif
