/* Sessions of grainlabd (see sess.h): the registry, each session's worker, tokens and end.
 * Pacing and playback are in sess_pace.c, the record in sess_record.c, changes in sess_change.c,
 * stored runs replayed in sess_replay.c, views and figures in sess_view.c. */
#define _GNU_SOURCE
#include "node.h"
#include "sess_internal.h"
#include "snapshot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

void sess_registry_set_notify(sess_registry *r, void (*notify)(void *), void *ctx) {
  r->notify = notify;
  r->notify_ctx = ctx;
}

int sess_max_grains(const sess_registry *r) {
  return r->limits.max_grains;
}

int sess_max_viewers(const sess_registry *r) {
  return r->limits.max_viewers;
}

chan *sess_chan(session *s) {
  return &s->ch;
}

const char *sess_id(const session *s) {
  return s->id;
}

/* What sets the definition's particle count, for a refusal that names it. */
static const char *count_field(const grn_world_def *def) {
  const char *name = grn_world_def_count_param(def);
  return name ? name : "scene";
}

/* The server's limit on particles per session; 0 or an error. */
int sess__check_count(const sess_registry *r, const grn_world_def *def, sess_error *err) {
  const int n = grn_world_def_grains(def);
  if (n > r->limits.max_grains) {
    api_fail(err, API_E_TOO_MANY_GRAINS, count_field(def), "%d %s exceed this server's limit of %d",
             n, grn_model_info_of(def->scene->model)->particles, r->limits.max_grains);
    return -1;
  }
  return 0;
}

const char *sess_node(const sess_registry *r) {
  return r->node;
}

void sess_random_text(char *out, size_t len, const char *alphabet) {
  const size_t k = strlen(alphabet);
  unsigned char bytes[64];
  while (getrandom(bytes, len, 0) != (ssize_t)len) {
  }
  for (size_t i = 0; i < len; i++) {
    out[i] = alphabet[bytes[i] % k];
  }
  out[len] = '\0';
}

static void *reaper(void *arg);

sess_registry *sess_registry_new(const sess_limits *limits, const char *node,
                                 const char *worker_exe, store *st) {
  sess_registry *r = calloc(1, sizeof *r);
  if (!r) {
    return NULL;
  }
  pthread_mutex_init(&r->lock, NULL);
  pthread_mutex_init(&r->replay_lock, NULL);
  r->limits = *limits;
  snprintf(r->node, sizeof r->node, "%s", node);
  snprintf(r->worker_exe, sizeof r->worker_exe, "%s", worker_exe);
  r->st = st;
  r->next_run = st ? (uint64_t)store_next_run_id(st) : 1;
  r->limits.replay_slots = r->limits.replay_slots > 0 ? r->limits.replay_slots : 1;
  r->replaying = calloc((size_t)r->limits.replay_slots, sizeof *r->replaying);
  pthread_mutex_init(&r->reaper_lock, NULL);
  pthread_cond_init(&r->reaper_wake, NULL);
  if (!r->replaying || pthread_create(&r->reaper, NULL, reaper, r) != 0) {
    free(r->replaying);
    pthread_mutex_destroy(&r->reaper_lock);
    pthread_cond_destroy(&r->reaper_wake);
    pthread_mutex_destroy(&r->lock);
    pthread_mutex_destroy(&r->replay_lock);
    free(r);
    return NULL;
  }
  return r;
}

worker_create sess__create_msg(const sess_registry *r, const grn_world_def *def) {
  worker_create c;
  memset(&c, 0, sizeof c);
  c.h.type = WORKER_CMD_CREATE;
  c.h.size = sizeof c;
  c.version = WORKER_PROTO_VERSION;
  snprintf(c.scene, sizeof c.scene, "%s", def->scene->name);
  memcpy(c.param, def->param, sizeof c.param);
  c.seed = def->seed;
  c.grains = def->grains;
  c.threads = r->limits.threads;
  c.memory_limit = r->limits.worker_memory;
  c.frame_bytes = worker_frame_bytes(grn_world_def_grains(def));
  return c;
}

int sess__start_worker(session *s, sess_error *err) {
  const worker_create c = sess__create_msg(s->reg, &s->def);
  worker_status st;
  /* a world's first forces and measurements cost a few of its steps */
  const int timeout = sess__timeout_for(s, 4);
  pthread_mutex_unlock(&s->lock); /* building a world takes a while: nobody waits on it */
  const int rc = worker_spawn(&s->wc, s->reg->worker_exe, &c, false, timeout, s->cancel_fd, &st);
  pthread_mutex_lock(&s->lock);
  if (rc != 0) {
    api_fail(err, API_E_WORKER_FAILED, "", "the session's worker did not start: %s", s->wc.reason);
    return -1;
  }
  s->last = st;
  s->state = SESS_RUNNING;
  s->reason[0] = '\0';
  s->step_acc = 0.0;
  s->sample_mark = -1.0; /* no sample yet: the first, at t = 0, is recorded too */
  s->shown_state = st.meas.state;
  s->dirty = true;
  chan_new_source(&s->ch);
  if (sess__settle_start(s) != 0) {
    api_fail(err, API_E_WORKER_FAILED, "", "the session's worker ended as it started: %s",
             s->wc.reason);
    return -1;
  }
  pthread_mutex_lock(&s->qlock);
  s->qscene = s->def.scene;
  pthread_mutex_unlock(&s->qlock);
  pthread_mutex_lock(&s->reg->lock);
  s->run_id = s->reg->next_run++;
  s->live = true;
  pthread_mutex_unlock(&s->reg->lock);
  return 0;
}

void sess__own(session *s) {
  __atomic_add_fetch(&s->wanted, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_lock(&s->wlock);
  __atomic_sub_fetch(&s->wanted, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_lock(&s->lock);
}

void sess__own_to_end(session *s) {
  pthread_mutex_lock(&s->lock);
  const bool short_calls = grn_world_def_step_cost(&s->def) <= CALL_BUDGET_US;
  pthread_mutex_unlock(&s->lock);
  __atomic_add_fetch(&s->wanted, 1, __ATOMIC_ACQ_REL);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  const long ns = until.tv_nsec + (long)END_WAIT_MS * 1000000L;
  until.tv_sec += ns / 1000000000L;
  until.tv_nsec = ns % 1000000000L;
  if (!short_calls || pthread_mutex_timedlock(&s->wlock, &until) != 0) {
    const uint64_t one = 1;
    if (write(s->cancel_fd, &one, sizeof one) != (ssize_t)sizeof one) {
      log_msg(LOG_WARN, "cancel_failed", "session=%s: the cancel did not go out", s->id);
    }
    pthread_mutex_lock(&s->wlock);
  }
  __atomic_sub_fetch(&s->wanted, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_lock(&s->lock);
}

int sess__fresh_digest(session *s) {
  if (s->last.digest_steps == s->last.steps || s->wc.ended || s->state == SESS_FAILED ||
      s->state == SESS_ENDED) {
    return WORKER_REPLY_STATUS;
  }
  /* a cancel written when the wait ran out, after the call in flight had ended anyway, would cut
   * this call short: the worker is still good, so it is taken back */
  uint64_t pending;
  if (read(s->cancel_fd, &pending, sizeof pending) < 0 && errno != EAGAIN) {
    log_msg(LOG_WARN, "cancel_read", "session=%s: %s", s->id, strerror(errno));
  }
  worker_result r;
  const int timeout = sess__timeout_for(s, 1);
  pthread_mutex_unlock(&s->lock);
  const int type = worker_call_status(&s->wc, timeout, &r);
  pthread_mutex_lock(&s->lock);
  if (type == WORKER_REPLY_STATUS) {
    s->last = r.status;
  }
  return type;
}

void sess__disown(session *s) {
  pthread_mutex_unlock(&s->lock);
  pthread_mutex_unlock(&s->wlock);
}

void sess__give_way(session *s) {
  /* a mutex is not fair: wait until the waiter has it (bounded, should requests keep coming) */
  for (int i = 0; i < 200 && __atomic_load_n(&s->wanted, __ATOMIC_ACQUIRE) > 0; i++) {
    const struct timespec ts = {0, 250000};
    nanosleep(&ts, NULL);
  }
}

void sess__let_in(session *s) {
  if (__atomic_load_n(&s->wanted, __ATOMIC_ACQUIRE) == 0) {
    return;
  }
  pthread_mutex_unlock(&s->lock);
  pthread_mutex_unlock(&s->wlock);
  sess__give_way(s);
  pthread_mutex_lock(&s->wlock);
  pthread_mutex_lock(&s->lock);
}

void sess__dead(session *s) {
  s->died = sess__now();
  pthread_mutex_lock(&s->reg->lock);
  s->live = false;
  pthread_mutex_unlock(&s->reg->lock);
}

void sess__touch(session *s) {
  pthread_mutex_lock(&s->lock);
  s->active = sess__now();
  pthread_mutex_unlock(&s->lock);
}

/* Sessions holding a slot, all and this client's; under the registry lock. */
static int live_count(const sess_registry *r, const char *client, int *mine) {
  int n = 0;
  *mine = 0;
  for (int i = 0; i < r->n; i++) {
    n += r->list[i]->live;
    *mine += r->list[i]->live && client && *client && strcmp(r->list[i]->client, client) == 0;
  }
  return n;
}

/* A slot for a session that starts (or starts again), or a refusal; under the registry lock. */
int sess__take_slot(const sess_registry *r, const char *client, sess_error *err) {
  int mine;
  if (live_count(r, client, &mine) >= r->limits.max_sessions) {
    api_fail(err, API_E_TOO_MANY_SESSIONS, "", "this server runs at most %d sessions",
             r->limits.max_sessions);
    return -1;
  }
  if (client && *client && r->limits.max_per_client > 0 && mine >= r->limits.max_per_client) {
    api_fail(err, API_E_CLIENT_SESSION_LIMIT, "",
             "%s has %d live sessions, the most one client may have (end one, or wait for one "
             "to finish)",
             client, mine);
    return -1;
  }
  return 0;
}

static void destroy(session *s);
static void drop(session *s, int k);

/* Take a listed session off the registry's list; whether it was there. */
static bool unlist(sess_registry *r, session *s) {
  bool listed = false;
  pthread_mutex_lock(&r->lock);
  for (int i = 0; i < r->n; i++) {
    if (r->list[i] == s) {
      r->list[i] = r->list[--r->n];
      listed = true;
      break;
    }
  }
  pthread_mutex_unlock(&r->lock);
  return listed;
}

/* A new session, under a script (taken over, freed on failure) or none. */
static session *create(sess_registry *r, const grn_world_def *def, const char *label, bool private_,
                       const char *client, script *sc, const sess_class_link *link,
                       char token_out[65], char viewer_token_out[65], sess_error *err) {
  const int grains = grn_world_def_grains(def);
  if (sess__check_count(r, def, err) != 0) {
    sess__free_script(sc);
    return NULL;
  }
  session *s = calloc(1, sizeof *s);
  const int cancel_fd = s ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
  if (!s || cancel_fd < 0) {
    api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
    sess__free_script(sc);
    free(s);
    return NULL;
  }
  s->cancel_fd = cancel_fd;
  s->script = sc;
  s->reg = r;
  s->refs = 2; /* the registry's and the caller's */
  s->def = *def;
  s->speed = 1.0;
  s->wc.fd = -1;
  s->wc.cancel_fd = -1;
  s->active = sess__now();
  if (link) {
    s->in_class = true;
    s->link = *link;
  }
  snprintf(s->label, sizeof s->label, "%s", label ? label : "");
  snprintf(s->client, sizeof s->client, "%s", client ? client : "");
  pthread_mutex_init(&s->wlock, NULL);
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->wake, NULL);
  pthread_mutex_init(&s->qlock, NULL);
  chan_init(&s->ch);
  char id[17], join[7];
  sess_random_text(id, 16, "0123456789abcdef");
  sess_random_text(join, 6, SESS_CODE_ALPHABET);
  node_join(s->id, sizeof s->id, r->node, id);
  node_join(s->join, sizeof s->join, r->node, join);
  sess_random_text(s->token, 64, "0123456789abcdef");
  if (private_) {
    sess_random_text(s->viewer_token, 64, "0123456789abcdef");
  }
  pthread_mutex_lock(&r->lock);
  if (sess__take_slot(r, client, err) != 0) {
    pthread_mutex_unlock(&r->lock);
    destroy(s); /* not yet seen by anyone; frees the script it took over */
    return NULL;
  }
  if (r->n == r->cap) {
    const int cap = r->cap ? 2 * r->cap : 16;
    session **l = realloc(r->list, sizeof(session *) * (size_t)cap);
    if (!l) {
      pthread_mutex_unlock(&r->lock);
      api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
      destroy(s);
      return NULL;
    }
    r->list = l;
    r->cap = cap;
  }
  s->live = true;      /* the slot is held while the worker starts */
  r->list[r->n++] = s; /* listed: a DELETE may come before the worker is up */
  pthread_mutex_unlock(&r->lock);
  sess__own(s);
  if (sess__start_worker(s, err) != 0) {
    /* While listed, a request or a websocket join may have found it and holds a reference: it
     * ends (so nothing starts a worker in it again, sess_switch_scene refuses an ended session)
     * and its viewers are sent away; the last reference frees it. */
    s->state = SESS_ENDED;
    snprintf(s->reason, sizeof s->reason, "%.199s", err->message);
    api_utf8_clean(s->reason);
    sess__dead(s);
    sess__disown(s);
    chan_close(&s->ch);
    /* the caller's reference, and the registry's unless a DELETE that came meanwhile took it
     * off the list (that one drops it) */
    drop(s, unlist(r, s) ? 2 : 1);
    return NULL;
  }
  pthread_mutex_lock(&r->lock);
  r->created++;
  pthread_mutex_unlock(&r->lock);
  if (r->st) {
    store_session(r->st, s->id, s->join, s->label, private_, s->token, s->viewer_token);
  }
  if (!s->stop) {
    /* else a DELETE came while the worker started: it stops the worker once this returns */
    sess__run_started(s);
    s->has_thread = pthread_create(&s->thread, NULL, sess__pace, s) == 0;
  }
  sess__disown(s);
  log_msg(LOG_INFO, "session_created", "session=%s run=%llu scene=%s grains=%d", s->id,
          (unsigned long long)s->run_id, s->def.scene->name, grains);
  memcpy(token_out, s->token, 65);
  memcpy(viewer_token_out, s->viewer_token, 65);
  return s;
}

session *sess_create(sess_registry *r, const grn_world_def *def, const char *label, bool private_,
                     const char *client, char token_out[65], char viewer_token_out[65],
                     sess_error *err) {
  return create(r, def, label, private_, client, NULL, NULL, token_out, viewer_token_out, err);
}

session *sess_create_in_class(sess_registry *r, const grn_world_def *def, const char *label,
                              bool private_, const sess_class_link *link, char token_out[65],
                              char viewer_token_out[65], sess_error *err) {
  sess_error e;
  if (sess__class_allows(link, def, &e) != 0) {
    *err = e;
    return NULL;
  }
  return create(r, def, label, private_, NULL, NULL, link, token_out, viewer_token_out, err);
}

int sess__class_allows(const sess_class_link *link, const grn_world_def *def, sess_error *err) {
  bool allowed = false;
  for (int i = 0; i < link->nscenes; i++) {
    allowed = allowed || link->scenes[i] == def->scene;
  }
  if (!allowed) {
    api_fail(err, API_E_SCENE_NOT_IN_CLASS, "scene", "the class does not use scene '%s'",
             def->scene->name);
    return -1;
  }
  const int n = grn_world_def_grains(def);
  if (n > link->grain_budget) {
    api_fail(err, API_E_OVER_CLASS_BUDGET, count_field(def),
             "%d %s exceed the class's budget of %d per group", n,
             grn_model_info_of(def->scene->model)->particles, link->grain_budget);
    return -1;
  }
  return 0;
}

bool sess_locked(const session *s) {
  return s->in_class && s->link.locked && __atomic_load_n(s->link.locked, __ATOMIC_ACQUIRE);
}

bool sess_alive(session *s) {
  pthread_mutex_lock(&s->lock);
  const bool alive = s->state != SESS_FAILED && s->state != SESS_ENDED && !s->ending;
  pthread_mutex_unlock(&s->lock);
  return alive;
}

session *sess_create_from_run(sess_registry *r, int64_t run, const api_params *fork_params,
                              const char *label, bool private_, const char *client,
                              char token_out[65], char viewer_token_out[65], sess_error *err) {
  script *sc = calloc(1, sizeof *sc);
  if (!sc) {
    api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
    return NULL;
  }
  if (sess__load_run(r, run, &sc->r, err) != 0) {
    free(sc);
    return NULL;
  }
  sc->source = run;
  sc->fast = fork_params != NULL;
  /* a fork's parameters: checked against the scene now, all or nothing */
  grn_world_def d = sc->r.def;
  api_params checked = {0};
  if (fork_params) {
    checked = *fork_params;
  }
  if (api_params_apply(&checked, &d, API_PARAMS_FORK, err) != 0) {
    sess__free_script(sc);
    return NULL;
  }
  for (int i = 0; fork_params && i < fork_params->count; i++) {
    timeline_event ev = {.value = checked.at[i].value, .param_index = checked.at[i].index};
    snprintf(ev.param, sizeof ev.param, "%s", fork_params->at[i].name);
    if (timeline_add(&sc->fork, &ev) != 0) {
      sess__free_script(sc);
      api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
      return NULL;
    }
  }
  char name[64];
  if (!label || !*label) {
    snprintf(name, sizeof name, "%s of run %lld", sc->fast ? "fork" : "replay", (long long)run);
    label = name;
  }
  const grn_world_def def = sc->r.def;
  return create(r, &def, label, private_, client, sc, NULL, token_out, viewer_token_out, err);
}

session *sess_find(sess_registry *r, const char *id) {
  session *found = NULL;
  pthread_mutex_lock(&r->lock);
  for (int i = 0; i < r->n && !found; i++) {
    if (strcmp(r->list[i]->id, id) == 0 || strcmp(r->list[i]->join, id) == 0) {
      found = r->list[i];
      found->refs++;
    }
  }
  pthread_mutex_unlock(&r->lock);
  return found;
}

static void destroy(session *s) {
  sess__free_script(s->script);
  json_decref(s->segment);
  worker_samples_free(&s->samples);
  chan_destroy(&s->ch);
  if (s->cancel_fd >= 0) {
    close(s->cancel_fd);
  }
  pthread_mutex_destroy(&s->qlock);
  pthread_mutex_destroy(&s->lock);
  pthread_mutex_destroy(&s->wlock);
  pthread_cond_destroy(&s->wake);
  free(s);
}

/* Drop k references at once (the last frees it). */
static void drop(session *s, int k) {
  sess_registry *r = s->reg;
  pthread_mutex_lock(&r->lock);
  s->refs -= k;
  const int left = s->refs;
  pthread_mutex_unlock(&r->lock);
  if (left == 0) {
    destroy(s);
  }
}

void sess_release(session *s) {
  drop(s, 1);
}

/* Stop the pacing thread and the worker; the session stays allocated. A worker busy with a long
 * step is not waited for: the cancel cuts its call short and it is killed (sess__own_to_end). */
static void end(session *s, const char *reason) {
  pthread_mutex_lock(&s->lock);
  s->stop = true;
  s->ending = true;
  s->step_cancel = true;
  pthread_cond_broadcast(&s->wake);
  const bool thread = s->has_thread;
  s->has_thread = false;
  pthread_mutex_unlock(&s->lock);
  sess__own_to_end(s);
  const bool was_dead = s->state == SESS_FAILED || s->state == SESS_ENDED;
  (void)sess__fresh_digest(s); /* the run's record ends with it */
  sess__close_run(s, reason);
  /* the pacing thread sees `stop` once it has the worker again, and leaves */
  sess__disown(s);
  if (thread) {
    pthread_join(s->thread, NULL);
  }
  sess__own(s);
  pthread_mutex_unlock(&s->lock);
  worker_stop(&s->wc, STOP_GRACE_MS);
  pthread_mutex_lock(&s->lock);
  s->state = SESS_ENDED;
  if (!was_dead) {
    snprintf(s->reason, sizeof s->reason, "%s", reason);
  }
  sess__dead(s);
  sess__event(s, "session_ended", json_pack("{s:s}", "reason", reason));
  sess__disown(s);
  if (s->reg->st) {
    store_session_end(s->reg->st, s->id);
  }
  log_msg(LOG_INFO, "session_ended", "session=%s reason=%s", s->id, reason);
  chan_close(&s->ch);
  sess__notify(s);
}

/* End a listed session and take it off the list (once, whoever comes first); whether it did,
 * and so holds the registry's reference for the caller to drop. */
static bool forget(sess_registry *r, session *s, const char *reason) {
  if (!unlist(r, s)) {
    return false;
  }
  end(s, reason);
  return true;
}

void sess_delete(sess_registry *r, session *s) {
  if (forget(r, s, "deleted")) {
    sess_release(s); /* the registry's */
  }
}

/* Every session's lifetime, once a second: a live one without viewers and without a controller's
 * change for the idle timeout ends ("idle"); a failed or ended one without viewers is forgotten
 * after DEAD_KEEP_S, or at once while more than twice the slots are listed. */
static void reap(sess_registry *r) {
  int n;
  session **copy = sess__snapshot(r, &n);
  const double now = sess__now(), idle = r->limits.idle_timeout_s;
  for (int i = 0; i < n; i++) {
    session *s = copy[i];
    const int viewers = chan_viewers(&s->ch, NULL, NULL);
    pthread_mutex_lock(&s->lock);
    const bool dead = s->state == SESS_FAILED || s->state == SESS_ENDED;
    if (viewers > 0) {
      s->active = now; /* watched: the idle clock starts when the last viewer leaves */
    }
    const double quiet = now - s->active, gone = now - s->died;
    pthread_mutex_unlock(&s->lock);
    bool forgot = false;
    if (!dead && idle > 0 && viewers == 0 && quiet >= idle) {
      log_msg(LOG_INFO, "session_idle", "session=%s: no viewer and no change for %.0f s", s->id,
              quiet);
      forgot = forget(r, s, "idle");
    } else if (dead && viewers == 0 && (gone >= DEAD_KEEP_S || n > 2 * r->limits.max_sessions)) {
      forgot = forget(r, s, "ended");
    }
    drop(s, forgot ? 2 : 1); /* the snapshot's, and the registry's when it was forgotten */
  }
  free(copy);
}

static void *reaper(void *arg) {
  sess_registry *r = arg;
  pthread_mutex_lock(&r->reaper_lock);
  while (!r->reaper_stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 1;
    pthread_cond_timedwait(&r->reaper_wake, &r->reaper_lock, &ts);
    if (!r->reaper_stop) {
      pthread_mutex_unlock(&r->reaper_lock);
      reap(r);
      pthread_mutex_lock(&r->reaper_lock);
    }
  }
  pthread_mutex_unlock(&r->reaper_lock);
  return NULL;
}

void sess_registry_free(sess_registry *r) {
  pthread_mutex_lock(&r->reaper_lock);
  r->reaper_stop = true;
  pthread_cond_signal(&r->reaper_wake);
  pthread_mutex_unlock(&r->reaper_lock);
  pthread_join(r->reaper, NULL);
  for (;;) {
    /* take each session off the list, end it, and drop the registry's reference */
    pthread_mutex_lock(&r->lock);
    session *s = r->n > 0 ? r->list[--r->n] : NULL;
    pthread_mutex_unlock(&r->lock);
    if (!s) {
      break;
    }
    end(s, "stopped"); /* an orderly shutdown stops every run */
    sess_release(s);
  }
  free(r->list);
  pthread_mutex_destroy(&r->reaper_lock);
  pthread_cond_destroy(&r->reaper_wake);
  pthread_mutex_destroy(&r->lock);
  pthread_mutex_destroy(&r->replay_lock);
  free(r->replaying);
  snapcache_free(r->snaps);
  settled_free(r->settled);
  free(r);
}

void sess_set_snapcache(sess_registry *r, snapcache *cache) {
  snapcache_free(r->snaps);
  r->snaps = cache;
}

/* Constant time in the token's content: no early exit on the first wrong character. */
static bool same_token(const char *want, const char *token) {
  if (!token || strlen(want) != 64 || strlen(token) != 64) {
    return false;
  }
  unsigned char diff = 0;
  for (int i = 0; i < 64; i++) {
    diff |= (unsigned char)(want[i] ^ token[i]);
  }
  return diff == 0;
}

bool sess_token_ok(const session *s, const char *token) {
  return same_token(s->token, token);
}

bool sess_private(const session *s) {
  return s->viewer_token[0] != '\0';
}

bool sess_viewer_ok(const session *s, const char *token) {
  const bool viewer = same_token(s->viewer_token, token), control = same_token(s->token, token);
  return !sess_private(s) || viewer || control;
}
