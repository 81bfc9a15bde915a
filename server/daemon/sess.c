/* Sessions of grainlabd (see sess.h): registry, worker lifecycle, real-time pacing, validated
 * changes, and JSON views. */
#define _GNU_SOURCE
#include "sess.h"
#include "log.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define TICK_HZ 60             /* pacing ticks per second: 4 steps of 1/240 s each at speed 1 */
#define WORKER_TIMEOUT_MS 5000 /* a worker silent this long (beyond its work) has hung */
#define QUEUE_MAX 16           /* controller actions from the websocket waiting for a step */

/* A stored run played into a live session: its events at their steps, in real time (a replay) or
 * as fast as the worker goes up to the run's end and then new parameters (a fork). */
typedef struct script {
  store_replay r;
  int next;
  bool fast;
  int64_t source;
  json_t *fork_params; /* a fork's new parameters, applied at the end */
} script;

struct session {
  sess_registry *reg;
  int refs;                                          /* under the registry lock */
  char id[17], join[7], token[65], viewer_token[65]; /* viewer_token empty: public */
  char label[64];
  pthread_mutex_t lock; /* everything below, and the worker channel */
  pthread_cond_t wake;
  grn_world_def def;
  sess_state state;
  char reason[200];
  double speed, rt_factor, step_acc;
  uint64_t run_id;
  worker_client wc;
  worker_status last;
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
  bool run_open;   /* the current run is recorded as started and not yet ended */
  double flow_sum; /* silo: flow samples while draining, for the run's mean flow */
  int flow_n;
  script *script; /* a replay or fork in progress (NULL: none) */
};

struct sess_registry {
  pthread_mutex_t lock;
  session **list;
  int n, cap;
  sess_limits limits;
  char worker_exe[4096];
  uint64_t next_run, created, worker_failures;
  uint64_t steps; /* __atomic: every step of every session, for /metrics */
  store *st;
  void (*notify)(void *);
  void *notify_ctx;
};

void sess_registry_set_notify(sess_registry *r, void (*notify)(void *), void *ctx) {
  r->notify = notify;
  r->notify_ctx = ctx;
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

static void notify(const session *s) {
  if (s->reg->notify) {
    s->reg->notify(s->reg->notify_ctx);
  }
}

/* Engine time one step of 1/240 s may take on a slow core, µs: ten times what the engine
 * measures on one core of the development machine, by model. Grains: 0.2 µs each (contacts of a
 * few neighbours). SPH: 7 µs per particle (density and force sums over ~30 neighbours, and CFL
 * sub-steps). N-body: 1.5 ns per pair when every pair is summed (theta 0, or the engine's direct
 * sum up to 2048 bodies), 7 µs per body through the Barnes-Hut tree. */
static double step_cost_us(const grn_world_def *def) {
  const double n = (double)grn_world_def_grains(def);
  switch (def->scene->model) {
  case GRN_MODEL_FLUID:
    return 70.0 * n;
  case GRN_MODEL_GRAVITY:
    return n <= 2048.0 || grn_scene_param_index(def->scene, "theta") < 0 ||
                   def->param[GRN_P_THETA] == 0.0
               ? 0.015 * n * n
               : 70.0 * n;
  default:
    return 2.0 * n;
  }
}

/* How long a command may take: the heartbeat plus the work asked for at a slow machine's pace,
 * so a long "step" is not mistaken for a hang. */
static int timeout_for(const session *s, int steps) {
  const double ms = WORKER_TIMEOUT_MS + 0.001 * steps * step_cost_us(&s->def);
  return ms < 600000.0 ? (int)ms : 600000;
}

/* Steps a fork fast-forwards per tick: 4 s of simulated time for a few thousand grains, fewer
 * for costlier worlds so one tick holds the session's lock (and its GET) for well under a
 * second, never fewer than real time would take. */
static int fast_steps(const session *s) {
  const double k = 6e6 / step_cost_us(&s->def);
  return k >= 960.0 ? 960 : k <= 4.0 ? 4 : (int)k;
}

/* The parameter that sets a scene's particle count, for a refusal that names it. */
static const char *count_param(const grn_scene_info *scene) {
  static const char *const names[] = {"amount", "bodies", "quality"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (grn_scene_param_index(scene, names[i]) >= 0) {
      return names[i];
    }
  }
  return "scene";
}

/* What a scene's particles are called in messages. */
static const char *particles(const grn_scene_info *scene) {
  return scene->model == GRN_MODEL_FLUID     ? "water particles"
         : scene->model == GRN_MODEL_GRAVITY ? "bodies"
                                             : "grains";
}

/* The server's limit on particles per session; 0 or an error. */
static int check_count(const sess_registry *r, const grn_world_def *def, sess_error *err) {
  const int n = grn_world_def_grains(def);
  if (n > r->limits.max_grains) {
    api_fail(err, 422, "too_many_grains", count_param(def->scene),
             "%d %s exceed this server's limit of %d", n, particles(def->scene),
             r->limits.max_grains);
    return -1;
  }
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static json_t *number_or_null(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

/* Publish one JSON text message on the session's stream. */
static void stream_text(session *s, json_t *msg) {
  char *text = json_dumps(msg, JSON_COMPACT);
  if (text) {
    chan_publish_text(&s->ch, text, strlen(text));
    free(text);
    notify(s);
  }
  json_decref(msg);
}

/* The one place every change of a session passes (under its lock): the stream's events come
 * from here, and the store attaches here. `detail` (stolen, may be NULL) adds fields. */
static void sess_event(session *s, const char *kind, json_t *detail) {
  if (s->reg->st && s->run_open) {
    char *text = detail ? json_dumps(detail, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    store_event(s->reg->st, (int64_t)s->run_id, s->last.steps, s->last.t, kind, text);
    free(text);
  }
  json_t *m = json_pack("{s:s, s:s, s:f, s:I, s:I}", "type", "event", "event", kind, "t", s->last.t,
                        "steps", (json_int_t)s->last.steps, "run_id", (json_int_t)s->run_id);
  if (detail) {
    json_object_update(m, detail);
    json_decref(detail);
  }
  stream_text(s, m);
}

/* An engine action in its text form, as the CLI and the replay parse it ("spout:0.5,-1"). */
static json_t *action_text(const grn_action *a) {
  char text[256];
  return grn_action_format(a, text, sizeof text) > 0 ? json_string(text) : NULL;
}

/* The end of the current run in the record: why, where (steps and digest, what a replay must
 * reproduce), and the results: the last measurements and, for a silo, its mean flow. */
static void close_run(session *s, const char *reason) {
  if (!s->run_open) {
    return;
  }
  s->run_open = false;
  if (!s->reg->st) {
    return;
  }
  json_t *results = json_object();
  for (int k = 1; k < GRN_MEASURE_COUNT; k++) {
    if ((s->last.meas.present & (1u << k)) && isfinite(s->last.meas.value[k])) {
      json_object_set_new(results, grn_measure_name((grn_measure_key)k),
                          json_real(s->last.meas.value[k]));
    }
  }
  if (s->flow_n > 0) {
    const double mean = s->flow_sum / s->flow_n, bev = s->last.meas.value[GRN_M_BEVERLOO];
    json_object_set_new(results, "mean_flow", json_real(mean));
    if (isfinite(bev) && bev > 0) {
      json_object_set_new(results, "flow_vs_beverloo", json_real(mean / bev));
    }
  }
  store_run_end(s->reg->st, (int64_t)s->run_id, reason, s->last.steps, s->last.t, s->last.digest,
                results);
}

static json_t *params_json(const grn_world_def *def) {
  json_t *params = json_object();
  for (int i = 0; i < def->scene->param_count; i++) {
    json_object_set_new(params, def->scene->param_info[i].name,
                        json_real(def->param[def->scene->params[i]]));
  }
  return params;
}

static json_t *measurements_json(const grn_measurements *m) {
  json_t *values = json_object();
  for (int k = 0; k < GRN_MEASURE_COUNT; k++) {
    if (m->present & (1u << k)) {
      json_object_set_new(values, grn_measure_name((grn_measure_key)k),
                          number_or_null(m->value[k]));
    }
  }
  return values;
}

static void free_script(script *sc) {
  if (sc) {
    store_replay_free(&sc->r);
    json_decref(sc->fork_params);
    free(sc);
  }
}

static void run_started(session *s) {
  s->run_open = true;
  s->flow_sum = 0.0;
  s->flow_n = 0;
  if (s->reg->st) {
    store_run_start(s->reg->st, (int64_t)s->run_id, s->id, s->label, &s->def,
                    grn_world_def_grains(&s->def));
  }
  json_t *detail =
      json_pack("{s:s, s:o, s:I, s:i}", "scene", s->def.scene->name, "params", params_json(&s->def),
                "seed", (json_int_t)s->def.seed, "grains", grn_world_def_grains(&s->def));
  if (s->script) {
    json_object_set_new(detail, s->script->fast ? "fork_of" : "replay_of",
                        json_integer(s->script->source));
  }
  sess_event(s, "run_started", detail);
}

static void failed(session *s) {
  s->state = SESS_FAILED;
  snprintf(s->reason, sizeof s->reason, "%s", s->wc.reason);
  pthread_mutex_lock(&s->reg->lock);
  s->reg->worker_failures++;
  pthread_mutex_unlock(&s->reg->lock);
  s->dirty = false;
  sess_event(s, "session_failed", json_pack("{s:s}", "reason", s->reason));
  log_msg(LOG_WARN, "session_failed", "session=%s run=%llu: %s", s->id,
          (unsigned long long)s->run_id, s->reason);
  close_run(s, "failed");
}

static void random_text(char *out, size_t len, const char *alphabet) {
  const size_t k = strlen(alphabet);
  unsigned char bytes[64];
  while (getrandom(bytes, len, 0) != (ssize_t)len) {
  }
  for (size_t i = 0; i < len; i++) {
    out[i] = alphabet[bytes[i] % k];
  }
  out[len] = '\0';
}

sess_registry *sess_registry_new(const sess_limits *limits, const char *worker_exe, store *st) {
  sess_registry *r = calloc(1, sizeof *r);
  if (!r) {
    return NULL;
  }
  pthread_mutex_init(&r->lock, NULL);
  r->limits = *limits;
  snprintf(r->worker_exe, sizeof r->worker_exe, "%s", worker_exe);
  r->st = st;
  r->next_run = st ? (uint64_t)store_next_run_id(st) : 1;
  return r;
}

static worker_create create_msg(const sess_registry *r, const grn_world_def *def) {
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

/* The stream after a tick: a frame when someone watches and something changed (or a viewer
 * waits for a keyframe), the measurements at every new 0.25 s sample, and state changes. */
static void stream(session *s, bool samples) {
  bool want_key = false;
  const int viewers = chan_viewers(&s->ch, &want_key);
  if (viewers > 0 && (s->dirty || want_key) && s->state != SESS_FAILED) {
    const bool chains = strcmp(s->def.scene->name, "chains") == 0;
    const double cx = s->last.meas.value[GRN_M_CX], cz = s->last.meas.value[GRN_M_CZ];
    worker_frame f;
    memset(&f, 0, sizeof f);
    f.h.type = WORKER_CMD_FRAME;
    f.h.size = sizeof f;
    f.key = want_key;
    f.chains = chains;
    /* the chains' cut plane: through the pile's centre, facing a viewer on +z */
    f.px = isfinite(cx) ? cx : 0.0;
    f.pz = isfinite(cz) ? cz : 0.0;
    f.nz = 1.0;
    union {
      worker_status st;
      worker_error er;
    } reply;
    const int type = worker_call(&s->wc, &f, sizeof f, &reply, sizeof reply, timeout_for(s, 1));
    if (type == WORKER_REPLY_STATUS) {
      s->last = reply.st;
      const size_t size = reply.st.frame_size, at = (size + 7) & ~(size_t)7;
      const size_t csize = reply.st.chain_size;
      /* the worker is not trusted: its sizes must lie inside the shared memory */
      if (size > 0 && size <= s->wc.frame_bytes &&
          (csize == 0 || at + csize <= s->wc.frame_bytes)) {
        if (chan_publish_frame(&s->ch, s->wc.frames, size, csize ? s->wc.frames + at : NULL,
                               csize) == 0) {
          s->dirty = false;
          notify(s);
        }
      }
    } else if (type == WORKER_REPLY_ERROR) {
      log_msg(LOG_WARN, "frame_failed", "session=%s: no frame: %s", s->id, reply.er.error.message);
    } else {
      failed(s);
      return;
    }
  }
  /* a new sample of the engine's (every 0.25 s of simulated time): streamed and recorded */
  const double sample_t = s->last.meas.value[GRN_M_T];
  if (samples && isfinite(sample_t) && sample_t != s->sample_mark) {
    s->sample_mark = sample_t;
    const uint64_t sample_steps = (uint64_t)llround(sample_t / GRN_STEP_SECONDS);
    if (s->reg->st && s->run_open) {
      store_sample(s->reg->st, (int64_t)s->run_id, sample_steps, sample_t, &s->last.meas);
    }
    if (s->last.meas.state == GRN_STATE_FLOWING && isfinite(s->last.meas.value[GRN_M_FLOW])) {
      s->flow_sum += s->last.meas.value[GRN_M_FLOW];
      s->flow_n++;
    }
    json_t *line = json_array();
    for (int i = 0; i < 4; i++) {
      json_array_append_new(line, number_or_null(s->last.meas.line[i]));
    }
    stream_text(s, json_pack("{s:s, s:f, s:I, s:s, s:f, s:i, s:o, s:o}", "type", "measurements",
                             "t", sample_t, "steps", (json_int_t)sample_steps, "state",
                             grn_state_name(s->last.meas.state), "rt_factor", s->rt_factor, "alive",
                             (int)s->last.alive, "values", measurements_json(&s->last.meas), "line",
                             line));
  }
  if (s->last.meas.state != s->shown_state) {
    s->shown_state = s->last.meas.state;
    const grn_state st = s->shown_state;
    const char *kind = st == GRN_STATE_JAMMED                              ? "jam"
                       : st == GRN_STATE_DRAINED || st == GRN_STATE_ASLEEP ? "done"
                                                                           : "state";
    sess_event(s, kind, json_pack("{s:s}", "state", grn_state_name(st)));
  }
}

static int call(session *s, const void *cmd, size_t size, int steps, sess_error *err);

/* Controller actions that came over the websocket, in order, each announced as it lands. */
static void apply_queued(session *s) {
  api_action q[QUEUE_MAX];
  pthread_mutex_lock(&s->qlock);
  const int n = s->queued;
  memcpy(q, s->queue, sizeof q[0] * (size_t)n);
  s->queued = 0;
  pthread_mutex_unlock(&s->qlock);
  for (int i = 0; i < n; i++) {
    worker_act cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.h.type = WORKER_CMD_ACT;
    cmd.h.size = sizeof cmd;
    cmd.action = q[i].action;
    sess_error err;
    if (call(s, &cmd, sizeof cmd, 0, &err) == 0) {
      s->dirty = true;
      sess_event(s, "action",
                 json_pack("{s:o, s:s, s:o}", "action", api_action_json(&q[i]), "via", "websocket",
                           "engine", action_text(&cmd.action)));
    } else {
      log_msg(LOG_WARN, "action_failed", "session=%s: websocket action not applied: %s", s->id,
              err.message);
    }
  }
}

/* The id of a parameter the scene takes (validated by the caller), as the worker is sent it; −1,
 * which the worker refuses, for any other name. */
static int32_t param_id(const grn_scene_info *scene, const char *name) {
  const int k = grn_scene_param_index(scene, name);
  return k < 0 ? -1 : (int32_t)scene->params[k];
}

/* One recorded event, applied and recorded again (so the new run replays as well). */
static void script_event(session *s, const store_replay_event *ev) {
  const char *via = s->script->fast ? "fork" : "replay";
  sess_error err;
  if (ev->is_action) {
    worker_act cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.h.type = WORKER_CMD_ACT;
    cmd.h.size = sizeof cmd;
    cmd.action = ev->action;
    if (call(s, &cmd, sizeof cmd, ev->action.kind == GRN_A_RESET ? 600 : 0, &err) == 0) {
      s->dirty = true;
      sess_event(s, "action",
                 json_pack("{s:{s:s}, s:s, s:o}", "action", "type",
                           grn_action_name(ev->action.kind), "via", via, "engine",
                           action_text(&ev->action)));
    }
    return;
  }
  worker_set cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.h.type = WORKER_CMD_SET;
  cmd.h.size = sizeof cmd;
  cmd.param = param_id(s->def.scene, ev->param);
  cmd.value = ev->value;
  grn_error e;
  if (call(s, &cmd, sizeof cmd, 0, &err) == 0) {
    grn_world_def_set(&s->def, ev->param, ev->value, &e);
    s->dirty = true;
    sess_event(s, "parameter_changed",
               json_pack("{s:{s:f}, s:s}", "params", ev->param, ev->value, "via", via));
  }
}

/* The end of a script: a fork takes its new parameters and runs on; a replay pauses. */
static void script_done(session *s) {
  script *sc = s->script;
  if (sc->fast) {
    const char *name;
    json_t *v;
    json_object_foreach(sc->fork_params, name, v) {
      store_replay_event ev;
      memset(&ev, 0, sizeof ev);
      snprintf(ev.param, sizeof ev.param, "%s", name);
      ev.value = json_number_value(v);
      script_event(s, &ev);
    }
    sess_event(s, "forked", json_pack("{s:I}", "from_run", (json_int_t)sc->source));
  } else {
    s->state = SESS_PAUSED;
    sess_event(s, "replay_done", json_pack("{s:I}", "of_run", (json_int_t)sc->source));
  }
  s->script = NULL;
  free_script(sc);
}

/* How many steps this tick may take under a script (k: what real time asks for): events due now
 * are applied first, and no step passes the next event or the recorded end. */
static int script_steps(session *s, int k) {
  script *sc = s->script;
  while (sc->next < sc->r.nevents && sc->r.events[sc->next].steps <= s->last.steps &&
         s->state != SESS_FAILED) {
    script_event(s, &sc->r.events[sc->next++]);
  }
  if (s->state == SESS_FAILED) {
    return 0;
  }
  if (sc->next >= sc->r.nevents && s->last.steps >= sc->r.end_steps) {
    const bool fast = sc->fast;
    script_done(s);
    return fast ? k : 0;
  }
  const uint64_t stop = sc->next < sc->r.nevents ? sc->r.events[sc->next].steps : sc->r.end_steps;
  const uint64_t room = stop - s->last.steps;
  const uint64_t want = sc->fast ? (uint64_t)fast_steps(s) : (uint64_t)k;
  return (int)(want < room ? want : room);
}

/* Pacing: every tick, as many steps as real time × speed asks; the achieved real-time factor is
 * measured over windows of about a second. */
static void *pace(void *arg) {
  session *s = arg;
  double next = now_s(), win_wall = next, win_sim = 0.0;
  pthread_mutex_lock(&s->lock);
  win_sim = s->last.t;
  for (;;) {
    if (s->stop) {
      break;
    }
    if (s->state == SESS_PAUSED || s->state == SESS_FAILED || s->state == SESS_ENDED) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 100000000;
      if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
      }
      pthread_cond_timedwait(&s->wake, &s->lock, &ts);
      next = win_wall = now_s();
      win_sim = s->last.t;
      if (s->state == SESS_PAUSED) {
        apply_queued(s);
        stream(s, false);
      }
      continue;
    }
    apply_queued(s);
    s->step_acc += 1.0 / GRN_STEP_SECONDS / TICK_HZ * s->speed;
    int k = (int)s->step_acc;
    s->step_acc -= k;
    const bool fast = s->script && s->script->fast;
    if (s->script) {
      k = script_steps(s, k);
    }
    if (k > 0 && s->state != SESS_PAUSED && s->state != SESS_FAILED) {
      const worker_step cmd = {{WORKER_CMD_STEP, sizeof cmd}, k};
      worker_status st;
      if (worker_call(&s->wc, &cmd, sizeof cmd, &st, sizeof st, timeout_for(s, k)) !=
          WORKER_REPLY_STATUS) {
        failed(s);
        continue;
      }
      s->last = st;
      s->state = st.asleep ? SESS_ASLEEP : SESS_RUNNING;
      s->dirty = true;
      __atomic_add_fetch(&s->reg->steps, (uint64_t)k, __ATOMIC_RELAXED);
    }
    stream(s, true);
    const double t = now_s();
    if (t - win_wall >= 1.0) {
      s->rt_factor = (s->last.t - win_sim) / (t - win_wall);
      win_wall = t;
      win_sim = s->last.t;
    }
    pthread_mutex_unlock(&s->lock);
    next += 1.0 / TICK_HZ;
    if (next < t || fast) {
      next = t; /* behind (or fast-forwarding): do not try to catch up in a burst */
    }
    const double wait = next - now_s();
    if (wait > 0) {
      const struct timespec ts = {(time_t)wait, (long)((wait - floor(wait)) * 1e9)};
      nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&s->lock);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

static int start_worker(session *s, sess_error *err) {
  const worker_create c = create_msg(s->reg, &s->def);
  worker_status st;
  if (worker_spawn(&s->wc, s->reg->worker_exe, &c, false, WORKER_TIMEOUT_MS, &st) != 0) {
    api_fail(err, 500, "worker_failed", "", "the session's worker did not start: %s", s->wc.reason);
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
  pthread_mutex_lock(&s->qlock);
  s->qscene = s->def.scene;
  pthread_mutex_unlock(&s->qlock);
  pthread_mutex_lock(&s->reg->lock);
  s->run_id = s->reg->next_run++;
  pthread_mutex_unlock(&s->reg->lock);
  return 0;
}

static void destroy(session *s);

/* A new session, under a script (taken over, freed on failure) or none. */
static session *create(sess_registry *r, const grn_world_def *def, const char *label, bool private_,
                       script *sc, char token_out[65], char viewer_token_out[65], sess_error *err) {
  const int grains = grn_world_def_grains(def);
  if (check_count(r, def, err) != 0) {
    free_script(sc);
    return NULL;
  }
  session *s = calloc(1, sizeof *s);
  if (!s) {
    api_fail(err, 503, "out_of_memory", "", "out of memory");
    free_script(sc);
    return NULL;
  }
  s->script = sc;
  s->reg = r;
  s->refs = 2; /* the registry's and the caller's */
  s->def = *def;
  s->speed = 1.0;
  s->wc.fd = -1;
  snprintf(s->label, sizeof s->label, "%s", label ? label : "");
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->wake, NULL);
  pthread_mutex_init(&s->qlock, NULL);
  chan_init(&s->ch);
  random_text(s->id, 16, "0123456789abcdef");
  random_text(s->join, 6, "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"); /* no 0/O or 1/I to misread */
  random_text(s->token, 64, "0123456789abcdef");
  if (private_) {
    random_text(s->viewer_token, 64, "0123456789abcdef");
  }
  pthread_mutex_lock(&r->lock);
  if (r->n >= r->limits.max_sessions) {
    pthread_mutex_unlock(&r->lock);
    api_fail(err, 429, "too_many_sessions", "", "this server runs at most %d sessions",
             r->limits.max_sessions);
    free(s);
    return NULL;
  }
  if (r->n == r->cap) {
    const int cap = r->cap ? 2 * r->cap : 16;
    session **l = realloc(r->list, sizeof(session *) * (size_t)cap);
    if (!l) {
      pthread_mutex_unlock(&r->lock);
      api_fail(err, 503, "out_of_memory", "", "out of memory");
      free(s);
      return NULL;
    }
    r->list = l;
    r->cap = cap;
  }
  r->list[r->n++] = s; /* hold the slot while the worker starts */
  pthread_mutex_unlock(&r->lock);
  if (start_worker(s, err) != 0) {
    pthread_mutex_lock(&r->lock);
    for (int i = 0; i < r->n; i++) {
      if (r->list[i] == s) {
        r->list[i] = r->list[--r->n];
        break;
      }
    }
    pthread_mutex_unlock(&r->lock);
    destroy(s);
    return NULL;
  }
  pthread_mutex_lock(&r->lock);
  r->created++;
  pthread_mutex_unlock(&r->lock);
  if (r->st) {
    store_session(r->st, s->id, s->join, s->label, private_);
  }
  pthread_mutex_lock(&s->lock);
  run_started(s);
  pthread_mutex_unlock(&s->lock);
  log_msg(LOG_INFO, "session_created", "session=%s run=%llu scene=%s grains=%d", s->id,
          (unsigned long long)s->run_id, s->def.scene->name, grains);
  s->has_thread = pthread_create(&s->thread, NULL, pace, s) == 0;
  memcpy(token_out, s->token, 65);
  memcpy(viewer_token_out, s->viewer_token, 65);
  return s;
}

session *sess_create(sess_registry *r, const grn_world_def *def, const char *label, bool private_,
                     char token_out[65], char viewer_token_out[65], sess_error *err) {
  return create(r, def, label, private_, NULL, token_out, viewer_token_out, err);
}

session *sess_create_from_run(sess_registry *r, int64_t run, json_t *fork_params, const char *label,
                              bool private_, char token_out[65], char viewer_token_out[65],
                              sess_error *err) {
  if (!r->st) {
    api_fail(err, 503, "no_store", "", "this server keeps no record");
    return NULL;
  }
  script *sc = calloc(1, sizeof *sc);
  char why[256];
  if (!sc) {
    api_fail(err, 503, "out_of_memory", "", "out of memory");
    return NULL;
  }
  store_sync(r->st, 2000); /* the run may have ended a moment ago */
  if (store_load_replay(store_path(r->st), run, &sc->r, why, sizeof why) != 0) {
    free(sc);
    api_fail(err, strcmp(why, "no such run") == 0 ? 404 : 422,
             strcmp(why, "no such run") == 0 ? "not_found" : "not_replayable", "id", "run %lld: %s",
             (long long)run, why);
    return NULL;
  }
  if (!sc->r.ended) {
    free_script(sc);
    api_fail(err, 409, "not_replayable", "id",
             "run %lld has no recorded end (still running, or interrupted)", (long long)run);
    return NULL;
  }
  sc->source = run;
  sc->fast = fork_params != NULL;
  /* a fork's parameters: checked against the scene now, all or nothing */
  grn_world_def d = sc->r.def;
  api_params fork;
  api_params_read(fork_params, &fork);
  if (api_params_apply(&fork, &d, API_PARAMS_FORK, err) != 0) {
    free_script(sc);
    return NULL;
  }
  sc->fork_params = fork_params ? json_incref(fork_params) : NULL;
  char name[64];
  if (!label || !*label) {
    snprintf(name, sizeof name, "%s of run %lld", sc->fast ? "fork" : "replay", (long long)run);
    label = name;
  }
  const grn_world_def def = sc->r.def;
  return create(r, &def, label, private_, sc, token_out, viewer_token_out, err);
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
  free_script(s->script);
  chan_destroy(&s->ch);
  pthread_mutex_destroy(&s->qlock);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->wake);
  free(s);
}

void sess_release(session *s) {
  sess_registry *r = s->reg;
  pthread_mutex_lock(&r->lock);
  const int left = --s->refs;
  pthread_mutex_unlock(&r->lock);
  if (left == 0) {
    destroy(s);
  }
}

/* Stop the pacing thread and the worker; the session stays allocated. */
static void end(session *s, const char *reason) {
  pthread_mutex_lock(&s->lock);
  s->stop = true;
  pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->lock);
  if (s->has_thread) {
    pthread_join(s->thread, NULL);
    s->has_thread = false;
  }
  pthread_mutex_lock(&s->lock);
  close_run(s, reason);
  worker_stop(&s->wc, 2000);
  s->state = SESS_ENDED;
  sess_event(s, "session_ended", NULL);
  pthread_mutex_unlock(&s->lock);
  if (s->reg->st) {
    store_session_end(s->reg->st, s->id);
  }
  log_msg(LOG_INFO, "session_ended", "session=%s reason=%s", s->id, reason);
  chan_close(&s->ch);
  notify(s);
}

void sess_delete(sess_registry *r, session *s) {
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
  if (listed) {
    end(s, "deleted");
    sess_release(s); /* the registry's reference */
  }
}

void sess_registry_free(sess_registry *r) {
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
  pthread_mutex_destroy(&r->lock);
  free(r);
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

static const char *state_name(sess_state st) {
  static const char *const names[] = {"running", "paused", "asleep", "failed", "ended"};
  return names[st];
}

json_t *sess_json(session *s) {
  const int viewers = chan_viewers(&s->ch, NULL);
  pthread_mutex_lock(&s->lock);
  json_t *params = params_json(&s->def);
  json_t *meas = measurements_json(&s->last.meas);
  json_object_set_new(meas, "state", json_string(grn_state_name(s->last.meas.state)));
  json_t *source = s->script
                       ? json_pack("{s:s, s:I, s:I}", "kind", s->script->fast ? "fork" : "replay",
                                   "run", (json_int_t)s->script->source, "end_steps",
                                   (json_int_t)s->script->r.end_steps)
                       : NULL;
  json_t *j =
      json_pack("{s:s, s:s, s:s, s:s, s:b, s:o, s:I, s:s, s:f, s:f, s:f, s:i, s:I, s:I, s:o}", "id",
                s->id, "join_code", s->join, "scene", s->def.scene->name, "label", s->label,
                "private", sess_private(s), "params", params, "seed", (json_int_t)s->def.seed,
                "state", state_name(s->state), "t", s->last.t, "rt_factor", s->rt_factor, "speed",
                s->speed, "viewers", viewers, "run_id", (json_int_t)s->run_id, "steps",
                (json_int_t)s->last.steps, "measurements", meas);
  if (s->state == SESS_FAILED) {
    json_object_set_new(j, "reason", json_string(s->reason));
  }
  if (source) {
    json_object_set_new(j, "script", source); /* a replay or fork still playing */
  }
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", (unsigned long long)s->last.digest);
  json_object_set_new(j, "digest", json_string(hex)); /* of the state at `steps` */
  pthread_mutex_unlock(&s->lock);
  return j;
}

/* The live sessions, each referenced (release every one, then free the array); session locks
 * may be taken afterwards, since elsewhere the order is session, then registry. */
static session **snapshot(sess_registry *r, int *n) {
  pthread_mutex_lock(&r->lock);
  *n = r->n;
  session **copy = malloc(sizeof(session *) * (size_t)(r->n > 0 ? r->n : 1));
  for (int i = 0; copy && i < r->n; i++) {
    copy[i] = r->list[i];
    copy[i]->refs++;
  }
  *n = copy ? *n : 0;
  pthread_mutex_unlock(&r->lock);
  return copy;
}

json_t *sess_list_json(sess_registry *r, bool include_private) {
  json_t *a = json_array();
  int n;
  session **copy = snapshot(r, &n);
  for (int i = 0; i < n; i++) {
    if (include_private || !sess_private(copy[i])) {
      json_array_append_new(a, sess_json(copy[i]));
    }
    sess_release(copy[i]);
  }
  free(copy);
  return a;
}

/* Run one worker command under the session lock; failures of the worker fail the session. */
static int call(session *s, const void *cmd, size_t size, int steps, sess_error *err) {
  if (s->state == SESS_FAILED || s->state == SESS_ENDED) {
    api_fail(err, 409, "session_failed", "", "the session has %s: %s",
             s->state == SESS_FAILED ? "failed" : "ended", s->reason);
    return -1;
  }
  union {
    worker_status st;
    worker_error er;
  } reply;
  const int type = worker_call(&s->wc, cmd, size, &reply, sizeof reply, timeout_for(s, steps));
  if (type == WORKER_REPLY_STATUS) {
    s->last = reply.st;
    return 0;
  }
  if (type == WORKER_REPLY_ERROR) {
    /* the engine's refusal of a live change it cannot make: the same answer as the daemon's own
     * check of restart-only parameters */
    const bool set = ((const worker_header *)cmd)->type == WORKER_CMD_SET;
    api_engine_error(err, set ? API_ON_WORKER_SET : API_ON_WORKER, &reply.er.error);
    return -1;
  }
  failed(s);
  api_fail(err, 409, "session_failed", "", "the session's worker ended: %s", s->reason);
  return -1;
}

int sess_set_params(session *s, const api_params *params, sess_error *err) {
  pthread_mutex_lock(&s->lock);
  grn_world_def d = s->def;
  grn_error e;
  /* all or nothing: every value is checked before the first reaches the worker */
  if (api_params_apply(params, &d, API_PARAMS_LIVE, err) != 0) {
    pthread_mutex_unlock(&s->lock);
    return -1;
  }
  int rc = 0;
  /* what the worker took: should it refuse a later value after all, the record still says
   * exactly what changed, so the run replays */
  json_t *applied = json_object();
  for (int i = 0; i < params->count; i++) {
    const api_param *p = &params->at[i];
    worker_set cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.h.type = WORKER_CMD_SET;
    cmd.h.size = sizeof cmd;
    cmd.param = param_id(s->def.scene, p->name);
    cmd.value = p->value;
    if ((rc = call(s, &cmd, sizeof cmd, 0, err)) != 0) {
      break;
    }
    grn_world_def_set(&s->def, p->name, cmd.value, &e);
    json_object_set_new(applied, p->name,
                        p->integer ? json_integer((json_int_t)p->value) : json_real(p->value));
  }
  if (json_object_size(applied) > 0) {
    s->dirty = true;
    sess_event(s, "parameter_changed", json_pack("{s:O}", "params", applied));
  }
  json_decref(applied);
  pthread_mutex_unlock(&s->lock);
  return rc;
}

int sess_set_speed(session *s, double speed, sess_error *err) {
  if (!(speed >= 0.25 && speed <= 4.0)) {
    api_fail(err, 422, "out_of_range", "speed", "speed = %g is outside 0.25..4", speed);
    return -1;
  }
  pthread_mutex_lock(&s->lock);
  s->speed = speed;
  sess_event(s, "speed_changed", json_pack("{s:f}", "speed", speed));
  pthread_mutex_unlock(&s->lock);
  return 0;
}

int sess_action(session *s, const api_action *a, sess_error *err) {
  const api_action p = *a;
  const double *args = p.action.args;
  pthread_mutex_lock(&s->lock);
  int rc = 0;
  json_t *engine = NULL; /* the engine's form of an engine action, for replays */
  if (p.own == API_ACT_PAUSE || p.own == API_ACT_RESUME) {
    if (s->state == SESS_FAILED || s->state == SESS_ENDED) {
      api_fail(err, 409, "session_failed", "", "the session has failed: %s", s->reason);
      rc = -1;
    } else {
      s->state = p.own == API_ACT_PAUSE ? SESS_PAUSED : SESS_RUNNING;
      pthread_cond_signal(&s->wake);
    }
  } else if (p.own == API_ACT_FINISH) {
    if (s->state == SESS_FAILED || s->state == SESS_ENDED) {
      api_fail(err, 409, "session_failed", "", "the session has %s already",
               s->state == SESS_FAILED ? "failed" : "ended");
      rc = -1;
    } else {
      close_run(s, "finished");
      worker_stop(&s->wc, 2000);
      s->state = SESS_ENDED;
      snprintf(s->reason, sizeof s->reason, "finished by its controller");
    }
  } else if (p.own == API_ACT_TEST) {
    const uint32_t cmd = strcmp(p.info->name, "test_hog") == 0       ? WORKER_CMD_TEST_HOG
                         : strcmp(p.info->name, "test_syscall") == 0 ? WORKER_CMD_TEST_SYSCALL
                                                                     : WORKER_CMD_TEST_HANG;
    const worker_header h = {cmd, sizeof h};
    rc = call(s, &h, sizeof h, 0, err);
  } else if (p.own == API_ACT_STEP) {
    if (s->state != SESS_PAUSED) {
      api_fail(err, 409, "not_paused", "type", "step works on a paused session");
      rc = -1;
    } else if (!(args[0] >= p.info->args[0].min && args[0] <= p.info->args[0].max &&
                 args[0] == floor(args[0]))) {
      api_fail(err, 422, "out_of_range", "n", "n = %g must be a whole number in %g..%g", args[0],
               p.info->args[0].min, p.info->args[0].max);
      rc = -1;
    } else {
      const worker_step cmd = {{WORKER_CMD_STEP, sizeof cmd}, (int32_t)args[0]};
      rc = call(s, &cmd, sizeof cmd, cmd.steps, err);
    }
  } else {
    worker_act cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.h.type = WORKER_CMD_ACT;
    cmd.h.size = sizeof cmd;
    cmd.action = p.action;
    grn_error e;
    if (grn_action_check(s->def.scene, &cmd.action, &e) != GRN_OK) {
      api_engine_error(err, API_ON_ACTION, &e);
      rc = -1;
    } else {
      /* reset rebuilds the scene: as much work as a few hundred steps */
      rc = call(s, &cmd, sizeof cmd, p.action.kind == GRN_A_RESET ? 600 : 0, err);
      engine = rc == 0 ? action_text(&cmd.action) : NULL;
    }
  }
  if (rc == 0 && p.own == API_ACT_FINISH) {
    sess_event(s, "session_ended", json_pack("{s:s}", "reason", s->reason));
    chan_close(&s->ch); /* viewers are sent away: there is nothing more to see */
    notify(s);
  } else if (rc == 0) {
    s->dirty = true;
    json_t *detail = json_pack("{s:o, s:s}", "action", api_action_json(&p), "via", "rest");
    if (engine) {
      json_object_set_new(detail, "engine", engine);
    }
    sess_event(s, "action", detail);
  }
  pthread_mutex_unlock(&s->lock);
  return rc;
}

int sess_queue_action(session *s, const api_action *p, sess_error *err) {
  if (p->own != API_ACT_ENGINE) {
    api_fail(err, 400, "rest_only", "type", "'%s' is sent over the REST API, not the websocket",
             p->info->name);
    return -1;
  }
  const grn_action a = p->action;
  grn_error e;
  pthread_mutex_lock(&s->qlock);
  int rc = 0;
  if (grn_action_check(s->qscene, &a, &e) != GRN_OK) {
    api_engine_error(err, API_ON_ACTION, &e);
    rc = -1;
  } else if (s->queued > 0 && (a.kind == GRN_A_SPOUT || a.kind == GRN_A_TOOL) &&
             s->queue[s->queued - 1].action.kind == a.kind) {
    /* a drag: only where the pointer is now matters */
    s->queue[s->queued - 1] = *p;
  } else if (s->queued == QUEUE_MAX) {
    api_fail(err, 429, "busy", "", "%d actions wait for the next step already", QUEUE_MAX);
    rc = -1;
  } else {
    s->queue[s->queued++] = *p;
  }
  pthread_mutex_unlock(&s->qlock);
  return rc;
}

int sess_switch_scene(sess_registry *r, session *s, const grn_world_def *def, sess_error *err) {
  if (check_count(r, def, err) != 0) {
    return -1;
  }
  pthread_mutex_lock(&s->lock);
  close_run(s, "switched");
  worker_stop(&s->wc, 2000);
  s->def = *def;
  const int rc = start_worker(s, err);
  if (rc != 0) {
    s->state = SESS_FAILED;
    snprintf(s->reason, sizeof s->reason, "%.199s", err->message);
  }
  if (rc == 0) {
    run_started(s);
  }
  pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->lock);
  return rc;
}

void sess_get_totals(sess_registry *r, sess_totals *out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&r->lock);
  out->created = r->created;
  out->worker_failures = r->worker_failures;
  out->steps = __atomic_load_n(&r->steps, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&r->lock);
  int n;
  session **copy = snapshot(r, &n);
  out->sessions = n;
  for (int i = 0; i < n; i++) {
    pthread_mutex_lock(&copy[i]->lock);
    const sess_state st = copy[i]->state;
    pthread_mutex_unlock(&copy[i]->lock);
    out->running += st == SESS_RUNNING || st == SESS_ASLEEP;
    out->workers += st != SESS_FAILED && st != SESS_ENDED;
    out->failed += st == SESS_FAILED;
    out->viewers += chan_viewers(&copy[i]->ch, NULL);
    sess_release(copy[i]);
  }
  free(copy);
}

void sess_metrics(sess_registry *r, FILE *f) {
  int n;
  session **copy = snapshot(r, &n);
  fputs("# HELP grainlab_session_rt_factor Simulated seconds per wall-clock second, per session.\n"
        "# TYPE grainlab_session_rt_factor gauge\n",
        f);
  for (int i = 0; i < n; i++) {
    pthread_mutex_lock(&copy[i]->lock);
    fprintf(f, "grainlab_session_rt_factor{session=\"%s\",scene=\"%s\"} %.4f\n", copy[i]->id,
            copy[i]->def.scene->name, copy[i]->rt_factor);
    pthread_mutex_unlock(&copy[i]->lock);
  }
  fputs("# HELP grainlab_session_steps Steps of the session's current run.\n"
        "# TYPE grainlab_session_steps gauge\n",
        f);
  for (int i = 0; i < n; i++) {
    pthread_mutex_lock(&copy[i]->lock);
    fprintf(f, "grainlab_session_steps{session=\"%s\",scene=\"%s\"} %llu\n", copy[i]->id,
            copy[i]->def.scene->name, (unsigned long long)copy[i]->last.steps);
    pthread_mutex_unlock(&copy[i]->lock);
  }
  fputs("# HELP grainlab_session_viewers Websocket viewers, per session.\n"
        "# TYPE grainlab_session_viewers gauge\n",
        f);
  for (int i = 0; i < n; i++) {
    fprintf(f, "grainlab_session_viewers{session=\"%s\"} %d\n", copy[i]->id,
            chan_viewers(&copy[i]->ch, NULL));
    sess_release(copy[i]);
  }
  free(copy);
}
