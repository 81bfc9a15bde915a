/* Pacing and playback of a session (see sess_internal.h): its own thread steps the worker at
 * real time × speed, applies queued controller actions, plays a replay's or fork's timeline, and
 * publishes frames to the stream. */
#define _GNU_SOURCE
#include "sess_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* How long a command may take: the heartbeat plus the work asked for at a slow machine's pace
 * (the engine's own estimate, per model), so a long "step" is not mistaken for a hang. */
int sess__timeout_for(const session *s, int steps) {
  const double ms = WORKER_TIMEOUT_MS + 0.001 * steps * grn_world_def_step_cost(&s->def);
  return ms < 600000.0 ? (int)ms : 600000;
}

/* Steps a fork fast-forwards per tick: 4 s of simulated time for a few thousand grains, fewer
 * for costlier worlds so one tick holds the session's lock (and its GET) for well under a
 * second, never fewer than real time would take. */
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
  bool want_key = false;
  const int viewers = chan_viewers(&s->ch, &want_key);
  if (viewers > 0 && (s->dirty || want_key) && s->state != SESS_FAILED) {
    const bool chains = s->def.scene->chains;
    const double cx = s->last.meas.value[GRN_M_CX], cz = s->last.meas.value[GRN_M_CZ];
    /* the chains' cut plane: through the pile's centre, facing a viewer on +z */
    const double plane[4] = {isfinite(cx) ? cx : 0.0, isfinite(cz) ? cz : 0.0, 0.0, 1.0};
    worker_result r;
    const int type =
        worker_call_frame(&s->wc, want_key, chains ? plane : NULL, sess__timeout_for(s, 1), &r);
    if (type == WORKER_REPLY_STATUS) {
      s->last = r.status;
      const size_t size = r.status.frame_size, at = (size + 7) & ~(size_t)7;
      const size_t csize = r.status.chain_size;
      /* the worker is not trusted: its sizes must lie inside the shared memory */
      if (size > 0 && size <= s->wc.frame_bytes &&
          (csize == 0 || at + csize <= s->wc.frame_bytes)) {
        if (chan_publish_frame(&s->ch, s->wc.frames, size, csize ? s->wc.frames + at : NULL,
                               csize) == 0) {
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
  if (sess__set(s, ev->param, ev->value, &err) == 0) {
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
  } else {
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
  while (s->state != SESS_FAILED && (ev = timeline_due(&sc->r.events, s->last.steps)) != NULL) {
    script_event(s, ev);
  }
  if (s->state == SESS_FAILED) {
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

/* Pacing: every tick, as many steps as real time × speed asks; the achieved real-time factor is
 * measured over windows of about a second. */
void *sess__pace(void *arg) {
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
      worker_result r;
      if (worker_call_step(&s->wc, k, sess__timeout_for(s, k), &r) != WORKER_REPLY_STATUS) {
        sess__failed(s);
        continue;
      }
      s->last = r.status;
      s->state = r.status.asleep ? SESS_ASLEEP : SESS_RUNNING;
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
