/* Pacing and playback of a session (see sess_internal.h): its own thread steps the worker at
 * real time × speed, applies queued controller actions, plays a replay's or fork's timeline, and
 * publishes frames to the stream. */
#define _GNU_SOURCE
#include "sess_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A measurement of the latest sample by name; NaN when the scene has none. */
static double measured(const session *s, const char *name) {
  const int k = grn_scene_measure_index(s->def.scene, name);
  return k >= 0 && k < s->last.meas.count ? s->last.meas.value[k] : NAN;
}

double sess__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int sess__chunk(const session *s) {
  const double k = CALL_BUDGET_US / grn_world_def_step_cost(&s->def);
  return k >= 14400.0 ? 14400 : k <= 1.0 ? 1 : (int)k;
}

/* How long a command may take: the heartbeat plus the work asked for at a slow machine's pace
 * (the engine's own estimate, per model), so a long "step" is not mistaken for a hang. */
int sess__timeout_for(const session *s, int steps) {
  const double ms = WORKER_TIMEOUT_MS + 0.001 * steps * grn_world_def_step_cost(&s->def);
  return ms < 600000.0 ? (int)ms : 600000;
}

/* Steps a fork fast-forwards per tick: 4 s of simulated time for a few thousand grains, fewer
 * for costlier worlds so that frames keep coming, never fewer than real time would take. */
static int fast_steps(const session *s) {
  const double k = 6e6 / grn_world_def_step_cost(&s->def);
  return k >= 960.0 ? 960 : k <= 4.0 ? 4 : (int)k;
}

void sess__free_script(script *sc) {
  if (sc) {
    store_replay_free(&sc->r);
    timeline_free(&sc->fork);
    free(sc);
  }
}

/* The stream after a tick: a frame when someone watches and something changed (or a viewer
 * waits for a keyframe), then the new sample and state changes (sess__publish). */
static void stream(session *s, bool samples) {
  if (s->ending) {
    return;
  }
  bool want_key = false, want_delta = false;
  const int viewers = chan_viewers(&s->ch, &want_key, &want_delta);
  if (viewers > 0 && (s->dirty || want_key || want_delta) && s->state != SESS_FAILED) {
    const bool chains = s->def.scene->chains;
    const double cx = measured(s, "cx"), cz = measured(s, "cz");
    /* the chains' cut plane: through the pile's centre, facing a viewer on +z */
    const double plane[4] = {isfinite(cx) ? cx : 0.0, isfinite(cz) ? cz : 0.0, 0.0, 1.0};
    worker_result r;
    const int timeout = sess__timeout_for(s, 1);
    pthread_mutex_unlock(&s->lock);
    const int type =
        worker_call_frame(&s->wc, want_key, want_delta, chains ? plane : NULL, timeout, &r);
    pthread_mutex_lock(&s->lock);
    if (type == WORKER_REPLY_STATUS) {
      s->last = r.status;
      /* the worker is not trusted: its sizes must lie inside the shared memory (each part at
       * the end of the one before, rounded up to 8) */
      const size_t room = s->wc.frame_bytes;
      const size_t size = r.status.frame_size, at = (size + 7) & ~(size_t)7;
      const size_t csize = r.status.chain_size, dsize = r.status.delta_size;
      const size_t dat = csize ? (at + csize + 7) & ~(size_t)7 : at;
      if (size > 0 && size <= room && (csize == 0 || (at <= room && csize <= room - at)) &&
          (dsize == 0 || (dat <= room && dsize <= room - dat))) {
        if (chan_publish_frame(&s->ch, s->wc.frames, size, dsize ? s->wc.frames + dat : NULL, dsize,
                               csize ? s->wc.frames + at : NULL, csize) == 0) {
          s->dirty = false;
          sess__notify(s);
        }
      }
    } else if (type == WORKER_REPLY_ERROR) {
      log_msg(LOG_WARN, "frame_failed", "session=%s: no frame: %s", s->id, r.error.message);
    } else {
      sess__failed(s);
      return;
    }
  }
  sess__publish(s, samples);
}

/* Controller actions that came over the websocket, in order, each announced as it lands. */
static void apply_queued(session *s) {
  api_action q[QUEUE_MAX];
  pthread_mutex_lock(&s->qlock);
  const int n = s->queued;
  memcpy(q, s->queue, sizeof q[0] * (size_t)n);
  s->queued = 0;
  pthread_mutex_unlock(&s->qlock);
  for (int i = 0; i < n; i++) {
    sess_error err;
    if (sess__act(s, &q[i].action, &err) == 0) {
      s->dirty = true;
      if (q[i].action.kind == GRN_A_RESET) {
        continue; /* a new run, whose run_started says so (sess__reset) */
      }
      sess__event(s, "action",
                  json_pack("{s:o, s:s, s:o}", "action", api_action_json(&q[i]), "via", "websocket",
                            "engine", sess__action_text(&q[i].action)));
    } else {
      log_msg(LOG_WARN, "action_failed", "session=%s: websocket action not applied: %s", s->id,
              err.message);
    }
  }
}

/* One recorded event, applied and recorded again (so the new run replays as well). */
static void script_event(session *s, const timeline_event *ev) {
  const char *via = s->script->fast ? "fork" : "replay";
  sess_error err;
  if (ev->is_action) {
    if (sess__act(s, &ev->action, &err) == 0) {
      s->dirty = true;
      sess__event(s, "action",
                  json_pack("{s:{s:s}, s:s, s:o}", "action", "type",
                            grn_action_name(ev->action.kind), "via", via, "engine",
                            sess__action_text(&ev->action)));
    }
    return;
  }
  if (sess__set(s, ev->param_index, ev->value, &err) == 0) {
    s->dirty = true;
    sess__event(s, "parameter_changed",
                json_pack("{s:{s:f}, s:s}", "params", ev->param, ev->value, "via", via));
  }
}

/* The end of a script: a fork takes its new parameters and runs on; a replay pauses. */
static void script_done(session *s) {
  script *sc = s->script;
  if (sc->fast) {
    for (int i = 0; i < sc->fork.count; i++) {
      script_event(s, &sc->fork.events[i]);
    }
    sess__event(s, "forked", json_pack("{s:I}", "from_run", (json_int_t)sc->source));
  } else if (sess__fresh_digest(s) != WORKER_REPLY_STATUS) {
    sess__failed(s); /* the worker is gone */
  } else {
    /* paused where the run ended, in the same state, which its digest shows */
    s->state = SESS_PAUSED;
    sess__event(s, "replay_done", json_pack("{s:I}", "of_run", (json_int_t)sc->source));
  }
  s->script = NULL;
  sess__free_script(sc);
}

/* How many steps this tick may take under a script (k: what real time asks for): events due now
 * are applied first, and no step passes the next event or the recorded end. */
static int script_steps(session *s, int k) {
  script *sc = s->script;
  const timeline_event *ev;
  while (s->state != SESS_FAILED && !s->ending &&
         (ev = timeline_due(&sc->r.events, s->last.steps)) != NULL) {
    script_event(s, ev);
  }
  if (s->state == SESS_FAILED || s->ending) {
    return 0;
  }
  if (timeline_done(&sc->r.events, s->last.steps)) {
    const bool fast = sc->fast;
    script_done(s);
    return fast ? k : 0;
  }
  const uint64_t want = sc->fast ? (uint64_t)fast_steps(s) : (uint64_t)k;
  return (int)timeline_room(&sc->r.events, s->last.steps, want);
}

/* A tick's k steps, in calls of sess__chunk steps, a waiting request let in between them. */
static void step_tick(session *s, int k) {
  const uint64_t run = s->run_id;
  while (k > 0 && (s->state == SESS_RUNNING || s->state == SESS_ASLEEP) && !s->ending) {
    const int n = k < sess__chunk(s) ? k : sess__chunk(s);
    const int timeout = sess__timeout_for(s, n);
    worker_result r;
    pthread_mutex_unlock(&s->lock);
    /* no digest: a pass over every grain at each call was 6 % of a class's time; it is asked for
     * where it is shown or recorded (paused, ended: sess__fresh_digest) */
    const int type = worker_call_step(&s->wc, n, false, timeout, &s->samples, &r);
    pthread_mutex_lock(&s->lock);
    if (type != WORKER_REPLY_STATUS) {
      sess__failed(s);
      return;
    }
    s->last = r.status;
    sess__samples(s);
    if (s->state == SESS_RUNNING || s->state == SESS_ASLEEP) { /* not paused meanwhile */
      s->state = r.status.asleep ? SESS_ASLEEP : SESS_RUNNING;
    }
    s->dirty = true;
    __atomic_add_fetch(&s->reg->steps, (uint64_t)n, __ATOMIC_RELAXED);
    k -= n;
    if (k > 0) {
      sess__let_in(s);
      if (s->run_id != run) {
        return; /* the scene was switched meanwhile: a new world, a new tick */
      }
    }
  }
}

/* Wait on the session's clock (or a wake-up) for up to `seconds`, under `lock`. */
static void wait_for(session *s, double seconds) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const long ns = ts.tv_nsec + (long)(seconds * 1e9);
  ts.tv_sec += ns / 1000000000;
  ts.tv_nsec = ns % 1000000000;
  pthread_cond_timedwait(&s->wake, &s->lock, &ts);
}

/* Sleep until `until` (sess__now's clock) or until a controller's action is queued
 * (sess_queue_action signals the wake); returns when it woke. Neither lock is held. */
static double wait_for_action(session *s, double until) {
  pthread_mutex_lock(&s->lock);
  for (;;) {
    pthread_mutex_lock(&s->qlock);
    const bool queued = s->queued > 0;
    pthread_mutex_unlock(&s->qlock);
    const double now = sess__now();
    if (queued || now >= until || s->stop) {
      pthread_mutex_unlock(&s->lock);
      return now < until ? now : until;
    }
    wait_for(s, until - now);
  }
}

/* Pacing: every tick, as many steps as real time × speed asks; the achieved real-time factor is
 * measured over windows of about a second. The thread holds the worker only during a tick. */
void *sess__pace(void *arg) {
  session *s = arg;
  double next = sess__now(), win_wall = next, win_sim = 0.0;
  double span = CALL_TICKS; /* ticks this call covers: fewer when an action cut the wait short */
  pthread_mutex_lock(&s->lock);
  win_sim = s->last.t;
  pthread_mutex_unlock(&s->lock);
  for (;;) {
    pthread_mutex_lock(&s->wlock);
    pthread_mutex_lock(&s->lock);
    if (s->stop) {
      sess__disown(s);
      break;
    }
    if (s->state == SESS_PAUSED || s->state == SESS_FAILED || s->state == SESS_ENDED || s->ending) {
      if (s->state == SESS_PAUSED && !s->ending) {
        apply_queued(s);
        /* a paused session shows its digest: taken once, at the pause's first look */
        if (s->state == SESS_PAUSED && sess__fresh_digest(s) != WORKER_REPLY_STATUS) {
          sess__failed(s);
        }
        stream(s, false);
      }
      pthread_mutex_unlock(&s->wlock); /* the wait holds `lock` only */
      if (!s->stop) {
        wait_for(s, 0.1);
      }
      next = win_wall = sess__now();
      win_sim = s->last.t;
      span = CALL_TICKS;
      pthread_mutex_unlock(&s->lock);
      continue;
    }
    apply_queued(s);
    if (sess__settle_tick(s)) {
      win_wall = sess__now(); /* a kept state restored: its clock jumped, not its pace */
      win_sim = s->last.t;
    }
    /* Every call steps CALL_TICKS ticks' worth (fewer when an action cut the wait short): at 60
     * calls a second each session's pacing and its worker's wake-ups took about 1 % of a core
     * (issue 33), and a frame at each call is 15 a second, which viewers draw between
     * (schema/stream.md). A session that cannot keep up stays behind real time: no burst to
     * catch up. */
    s->step_acc += 1.0 / GRN_STEP_SECONDS / TICK_HZ * s->speed * span;
    int k = (int)s->step_acc;
    s->step_acc -= k;
    const bool fast = s->script && s->script->fast;
    if (s->script) {
      k = script_steps(s, k);
    }
    if (s->awaiting) {
      k = 0; /* another session settles this world: its state comes, the cores go there */
      s->step_acc = 0.0;
    }
    step_tick(s, k);
    sess_keep keep;
    sess__settle_check(s, &keep);
    if (s->state != SESS_FAILED) {
      stream(s, true);
    }
    const double t = sess__now();
    if (t - win_wall >= 1.0) {
      s->rt_factor = (s->last.t - win_sim) / (t - win_wall);
      win_wall = t;
      win_sim = s->last.t;
    }
    sess__disown(s);
    sess__settle_keep(s->reg->settled, &keep); /* a file written: without the session's locks */
    next += (double)CALL_TICKS / TICK_HZ;
    if (next < t || fast) {
      next = t; /* behind (or fast-forwarding): do not try to catch up in a burst */
    }
    span = CALL_TICKS;
    if (next > sess__now()) {
      const double woke = wait_for_action(s, next);
      if (woke < next) {
        /* a controller's action came: it goes in now, after the steps of the time waited */
        span = CALL_TICKS - (next - woke) * TICK_HZ;
        next = woke;
      }
    } else {
      sess__give_way(s); /* behind: requests waiting for the worker go first */
    }
  }
  return NULL;
}
