/* Validated changes of a session (see sess.h): parameters, speed, actions and scene switches,
 * each checked before it touches anything, and the worker calls they make. */
#define _GNU_SOURCE
#include "sess_internal.h"
#include "snapshot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sess__live(const session *s, sess_error *err) {
  if (s->state == SESS_FAILED || s->state == SESS_ENDED || s->ending) {
    api_fail(err, API_E_SESSION_FAILED, "", "the session has %s: %s",
             s->state == SESS_FAILED ? "failed" : "ended", s->ending ? "it is ending" : s->reason);
    return -1;
  }
  return 0;
}

int sess__reply(session *s, int type, const worker_result *r, bool set, sess_error *err) {
  if (type == WORKER_REPLY_STATUS) {
    s->last = r->status;
    return 0;
  }
  if (type == WORKER_REPLY_ERROR) {
    /* the engine's refusal of a live change it cannot make: the same answer as the daemon's own
     * check of restart-only parameters */
    api_engine_error(err, set ? API_ON_WORKER_SET : API_ON_WORKER, &r->error);
    if (r->error.code == GRN_E_SETTLING) {
      /* the last status is at most one call old, so its bound still holds */
      err->seconds_left = s->last.settle_left > 0.0 ? s->last.settle_left : GRN_STEP_SECONDS;
    }
    return -1;
  }
  sess__failed(s);
  api_fail(err, API_E_SESSION_FAILED, "", "the session's worker ended: %s",
           s->ending ? "the session is ending" : s->reason);
  return -1;
}

int sess__act(session *s, const grn_action *a, sess_error *err) {
  if (sess__live(s, err) != 0) {
    return -1;
  }
  if (a->kind == GRN_A_RESET) {
    return sess__reset(s, err);
  }
  worker_result r;
  const int timeout = sess__timeout_for(s, 0);
  pthread_mutex_unlock(&s->lock);
  const int type = worker_call_act(&s->wc, a, timeout, &r);
  pthread_mutex_lock(&s->lock);
  const int rc = sess__reply(s, type, &r, false, err);
  if (rc == 0) {
    sess__settle_forget(s); /* off the path every session of its definition takes */
  }
  return rc;
}

/* Reset starts the scene over as a new run, linked to the run it ends (which ends 'reset'): the
 * scene's steps count from 0 again, and inside one run its events went back in steps and it could
 * not be replayed (issue 30). The old run ends where it stood, with its digest; the new one starts
 * with the parameters now in force, which the reset rebuilt the scene with, and from their kept
 * settled state when there is one (sess_settle.c). */
int sess__reset(session *s, sess_error *err) {
  if (sess__fresh_digest(s) != WORKER_REPLY_STATUS) {
    sess__failed(s);
    api_fail(err, API_E_SESSION_FAILED, "", "the session's worker ended: %s", s->reason);
    return -1;
  }
  const worker_status before = s->last;
  const grn_action reset = {.kind = GRN_A_RESET};
  worker_result r;
  const int timeout = sess__timeout_for(s, 600); /* a rebuild: a few hundred steps' work */
  pthread_mutex_unlock(&s->lock);
  const int type = worker_call_act(&s->wc, &reset, timeout, &r);
  pthread_mutex_lock(&s->lock);
  if (sess__reply(s, type, &r, false, err) != 0) {
    return -1;
  }
  const worker_status after = s->last;
  s->last = before;
  sess__close_run(s, "reset");
  s->last = after;
  s->sample_mark = -1.0; /* the new run's first sample, at t = 0, is recorded too */
  /* the world starts over exactly as a new one of its definition (test_state): its settle is
   * the kept one's, and the new run may start from it */
  if (sess__settle_start(s) != 0) {
    sess__failed(s);
    api_fail(err, API_E_SESSION_FAILED, "", "the session's worker ended: %s", s->reason);
    return -1;
  }
  s->shown_state = s->last.meas.state;
  s->reset_of = s->run_id;
  pthread_mutex_lock(&s->reg->lock);
  s->run_id = s->reg->next_run++;
  pthread_mutex_unlock(&s->reg->lock);
  sess__run_started(s);
  s->reset_of = 0;
  return 0;
}

/* The parameter at `index` in the scene's list, which the caller validated against the scene, set
 * in the worker and then in the session's definition (an index the scene has not, -1 included,
 * is refused by the worker). */
int sess__set(session *s, int index, double value, sess_error *err) {
  if (sess__live(s, err) != 0) {
    return -1;
  }
  const int timeout = sess__timeout_for(s, 0);
  worker_result r;
  pthread_mutex_unlock(&s->lock);
  const int type = worker_call_set(&s->wc, index, value, timeout, &r);
  pthread_mutex_lock(&s->lock);
  if (sess__reply(s, type, &r, true, err) != 0) {
    return -1;
  }
  sess__settle_forget(s);
  grn_error e;
  grn_world_def_set_at(&s->def, index, value, &e);
  return 0;
}

int sess_set_params(session *s, api_params *params, sess_error *err) {
  sess__own(s);
  s->active = sess__now();
  grn_world_def d = s->def;
  /* all or nothing: every value is checked before the first reaches the worker */
  if (api_params_apply(params, &d, API_PARAMS_LIVE, err) != 0 || sess__room_for_change(s, err)) {
    sess__disown(s);
    return -1;
  }
  int rc = 0;
  /* what the worker took: should it refuse a later value after all, the record still says
   * exactly what changed, so the run replays */
  json_t *applied = json_object();
  for (int i = 0; i < params->count; i++) {
    const api_param *p = &params->at[i];
    if (s->def.param[p->index] == p->value) {
      continue; /* no change: nothing to apply, and no new stretch of the record */
    }
    if ((rc = sess__set(s, p->index, p->value, err)) != 0) {
      break;
    }
    json_object_set_new(applied, p->name,
                        p->integer ? json_integer((json_int_t)p->value) : json_real(p->value));
  }
  if (json_object_size(applied) > 0) {
    s->dirty = true;
    sess__event(s, "parameter_changed", json_pack("{s:O}", "params", applied));
  }
  json_decref(applied);
  sess__disown(s);
  return rc;
}

int sess_snapshot(session *s, int format, char **text, size_t *len, uint64_t *steps,
                  sess_error *err) {
  *text = NULL;
  pthread_mutex_lock(&s->lock);
  const bool busy = s->snapping;
  s->snapping = true;
  pthread_mutex_unlock(&s->lock);
  if (busy) {
    api_fail(err, API_E_BUSY, "", "a snapshot of this session is being made: ask again after it");
    return -1;
  }
  sess__own(s);
  int rc = sess__live(s, err);
  if (rc == 0) {
    /* every particle's row and its share of the contacts, formatted at about a microsecond a
     * number on a slow machine */
    const int alive = s->last.alive;
    const int timeout = sess__timeout_for(s, 0) + alive / 50;
    worker_result r;
    pthread_mutex_unlock(&s->lock);
    const int type =
        worker_call_snapshot(&s->wc, format, snapshot_max_bytes(alive), timeout, text, len, &r);
    pthread_mutex_lock(&s->lock);
    rc = sess__reply(s, type, &r, false, err);
    if (rc == 0 && !*text) {
      api_fail(err, API_E_NO_MEMORY, "", "no memory for the snapshot");
      rc = -1;
    }
    *steps = s->last.steps;
  }
  s->snapping = false;
  sess__disown(s);
  if (rc != 0) {
    free(*text);
    *text = NULL;
  }
  return rc;
}

int sess_set_speed(session *s, double speed, sess_error *err) {
  if (!(speed >= 0.25 && speed <= 4.0)) {
    api_fail(err, API_E_OUT_OF_RANGE, "speed", "speed = %g is outside 0.25..4", speed);
    return -1;
  }
  pthread_mutex_lock(&s->lock);
  s->active = sess__now();
  s->speed = speed;
  sess__event(s, "speed_changed", json_pack("{s:f}", "speed", speed));
  pthread_mutex_unlock(&s->lock);
  return 0;
}

/* pause and resume: the clock only, never the worker; either ends a `step n` in progress. Under
 * `lock`. */
static int set_clock(session *s, bool pause, sess_error *err) {
  if (s->state == SESS_FAILED || s->state == SESS_ENDED || s->ending) {
    api_fail(err, API_E_SESSION_FAILED, "", "the session has %s: %s",
             s->state == SESS_FAILED ? "failed" : "ended", s->reason);
    return -1;
  }
  s->state = pause ? SESS_PAUSED : SESS_RUNNING;
  s->step_cancel = s->stepping > 0;
  if (pause) {
    sess__settle_release(s); /* whoever waits for its settle need not wait for its resume */
  }
  pthread_cond_signal(&s->wake);
  return 0;
}

/* finish: the run is recorded as finished and the worker stopped, after the call in flight if it
 * is short, else cutting it short (sess__own_to_end). */
int sess_finish(session *s, const char *why, sess_error *err) {
  pthread_mutex_lock(&s->lock);
  if (s->state == SESS_FAILED || s->state == SESS_ENDED || s->ending) {
    api_fail(err, API_E_SESSION_FAILED, "", "the session has %s already",
             s->state == SESS_FAILED ? "failed" : "ended");
    pthread_mutex_unlock(&s->lock);
    return -1;
  }
  s->ending = true;
  s->step_cancel = true;
  pthread_mutex_unlock(&s->lock);
  sess__own_to_end(s);
  (void)sess__fresh_digest(s); /* the run's record ends with it */
  sess__close_run(s, "finished");
  pthread_mutex_unlock(&s->lock);
  worker_stop(&s->wc, STOP_GRACE_MS);
  pthread_mutex_lock(&s->lock);
  s->state = SESS_ENDED;
  snprintf(s->reason, sizeof s->reason, "%s", why);
  sess__dead(s);
  sess__event(s, "session_ended", json_pack("{s:s}", "reason", s->reason));
  sess__disown(s);
  chan_close(&s->ch); /* viewers are sent away: there is nothing more to see */
  sess__notify(s);
  return 0;
}

/* step n of a paused session: within the work budget, in calls of sess__chunk steps with the
 * worker let go between them (frames, other requests and a DELETE go on meanwhile); pause,
 * resume, cancel, finish or DELETE stop it after the call in flight. */
static int step(session *s, const api_action *p, sess_error *err) {
  const double n = p->action.args[0];
  const grn_action_arg *arg = &p->info->args[0];
  pthread_mutex_lock(&s->lock);
  const double cost = grn_world_def_step_cost(&s->def) / GRN_GRAIN_STEP_US;
  int rc = 0;
  if (s->state != SESS_PAUSED) {
    api_fail(err, API_E_NOT_PAUSED, "type", "step works on a paused session");
    rc = -1;
  } else if (!(n >= arg->min && n <= arg->max && n == floor(n))) {
    api_fail(err, API_E_OUT_OF_RANGE, "n", "n = %g must be a whole number in %g..%g", n, arg->min,
             arg->max);
    rc = -1;
  } else if (n * cost > s->reg->limits.step_budget) {
    const double most = floor(s->reg->limits.step_budget / cost);
    api_fail(err, API_E_OVER_BUDGET, "n",
             "%g steps of this world are %.3g grain-steps of work, over this server's budget of "
             "%.3g for one step request: ask for at most %.0f",
             n, n * cost, s->reg->limits.step_budget, most);
    rc = -1;
  } else if (s->stepping > 0) {
    api_fail(err, API_E_STEPPING, "", "a step is in progress already (%d steps left)", s->stepping);
    rc = -1;
  } else {
    rc = sess__live(s, err);
  }
  if (rc != 0) {
    pthread_mutex_unlock(&s->lock);
    return -1;
  }
  s->stepping = (int)n;
  s->step_cancel = false;
  s->active = sess__now();
  pthread_mutex_unlock(&s->lock);
  int done = 0;
  sess__own(s);
  while (rc == 0 && done < (int)n) {
    if (s->step_cancel || s->state != SESS_PAUSED) {
      break;
    }
    if ((rc = sess__live(s, err)) != 0) {
      break;
    }
    const int want = (int)n - done < sess__chunk(s) ? (int)n - done : sess__chunk(s);
    const int timeout = sess__timeout_for(s, want);
    worker_result r;
    pthread_mutex_unlock(&s->lock);
    /* a paused session's state, digest and all, as each call leaves it */
    const int type = worker_call_step(&s->wc, want, true, timeout, &s->samples, &r);
    pthread_mutex_lock(&s->lock);
    if ((rc = sess__reply(s, type, &r, false, err)) != 0) {
      break;
    }
    sess__samples(s);
    done += want;
    s->stepping = (int)n - done;
    s->dirty = true;
    __atomic_add_fetch(&s->reg->steps, (uint64_t)want, __ATOMIC_RELAXED);
    sess__disown(s); /* between calls the worker is free for the frames and other requests */
    sess__own(s);
  }
  s->stepping = 0;
  if (done > 0) {
    /* what happened, as it happened: the record says the steps actually taken */
    api_action taken = *p;
    taken.action.args[0] = done;
    json_t *detail = json_pack("{s:o, s:s}", "action", api_action_json(&taken), "via", "rest");
    if (done < (int)n) {
      json_object_set_new(detail, "asked", json_integer((json_int_t)n));
    }
    sess__event(s, "action", detail);
  }
  if (rc == 0 && done < (int)n) {
    api_fail(err, API_E_CANCELLED, "", "the step was cancelled after %d of %.0f steps", done, n);
    rc = -1;
  }
  sess__disown(s);
  return rc;
}

int sess_action(session *s, const api_action *a, sess_error *err) {
  const api_action p = *a;
  if (p.own == API_ACT_STEP) {
    return step(s, &p, err);
  }
  if (p.own == API_ACT_FINISH) {
    return sess_finish(s, "finished by its controller", err);
  }
  if (p.own == API_ACT_PAUSE || p.own == API_ACT_RESUME || p.own == API_ACT_CANCEL) {
    pthread_mutex_lock(&s->lock);
    s->active = sess__now();
    int rc = 0;
    if (p.own == API_ACT_CANCEL) {
      if (s->stepping == 0) {
        api_fail(err, API_E_NOTHING_TO_CANCEL, "type", "no step is in progress");
        rc = -1;
      }
      s->step_cancel = true;
    } else {
      rc = set_clock(s, p.own == API_ACT_PAUSE, err);
    }
    if (rc == 0 && p.own != API_ACT_CANCEL) {
      sess__event(s, "action",
                  json_pack("{s:o, s:s}", "action", api_action_json(&p), "via", "rest"));
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
  }
  sess__own(s);
  s->active = sess__now();
  int rc = 0;
  json_t *engine = NULL; /* the engine's form of an engine action, for replays */
  if (p.own == API_ACT_TEST) {
    const uint32_t cmd = strcmp(p.info->name, "test_hog") == 0       ? WORKER_CMD_TEST_HOG
                         : strcmp(p.info->name, "test_syscall") == 0 ? WORKER_CMD_TEST_SYSCALL
                                                                     : WORKER_CMD_TEST_HANG;
    rc = sess__live(s, err);
    if (rc == 0) {
      worker_result r;
      pthread_mutex_unlock(&s->lock);
      const int type = worker_call_bare(&s->wc, cmd, WORKER_TIMEOUT_MS, &r);
      pthread_mutex_lock(&s->lock);
      rc = sess__reply(s, type, &r, false, err);
    }
  } else {
    grn_error e;
    if (grn_action_check(s->def.scene, &p.action, &e) != GRN_OK) {
      api_engine_error(err, API_ON_ACTION, &e);
      rc = -1;
    } else {
      rc = sess__act(s, &p.action, err);
      engine = rc == 0 ? sess__action_text(&p.action) : NULL;
    }
  }
  if (rc == 0 && p.own == API_ACT_ENGINE && p.action.kind == GRN_A_RESET) {
    json_decref(engine); /* a new run: its run_started says reset_of, and it replays alone */
    s->dirty = true;
  } else if (rc == 0) {
    s->dirty = true;
    json_t *detail = json_pack("{s:o, s:s}", "action", api_action_json(&p), "via", "rest");
    if (engine) {
      json_object_set_new(detail, "engine", engine);
    }
    sess__event(s, "action", detail);
  }
  sess__disown(s);
  return rc;
}

int sess_queue_action(session *s, const api_action *p, sess_error *err) {
  if (p->own != API_ACT_ENGINE) {
    api_fail(err, API_E_REST_ONLY, "type", "'%s' is sent over the REST API, not the websocket",
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
    api_fail(err, API_E_BUSY, "", "%d actions wait for the next step already", QUEUE_MAX);
    rc = -1;
  } else {
    s->queue[s->queued++] = *p;
  }
  pthread_mutex_unlock(&s->qlock);
  if (rc == 0) {
    sess__touch(s);
    /* the pacing thread goes in now rather than at its next call (a drag is felt at once); not
     * under its lock, which a call in progress holds: a wake-up lost in the instant before it
     * waits costs the action one call's wait, 1/15 s */
    pthread_cond_signal(&s->wake);
  }
  return rc;
}

int sess_switch_scene(sess_registry *r, session *s, const grn_world_def *def, sess_error *err) {
  if (sess__check_count(r, def, err) != 0 ||
      (s->in_class && sess__class_allows(&s->link, def, err) != 0)) {
    return -1;
  }
  sess__own(s);
  s->active = sess__now();
  if (s->state == SESS_ENDED || s->ending) {
    /* finish closed the stream and sent its viewers away: a new worker here would run where
     * nobody could watch it */
    api_fail(err, API_E_SESSION_FAILED, "", "the session has ended: %s", s->reason);
    sess__disown(s);
    return -1;
  }
  if (s->state == SESS_FAILED) {
    /* a failed session gave its slot back: starting again needs one */
    pthread_mutex_lock(&r->lock);
    const int rc = sess__take_slot(r, s->client, err);
    s->live = rc == 0;
    pthread_mutex_unlock(&r->lock);
    if (rc != 0) {
      sess__disown(s);
      return -1;
    }
  }
  (void)sess__fresh_digest(s); /* the run's record ends with it */
  sess__close_run(s, "switched");
  s->step_cancel = true;
  pthread_mutex_unlock(&s->lock);
  worker_stop(&s->wc, STOP_GRACE_MS);
  pthread_mutex_lock(&s->lock);
  s->def = *def;
  const int rc = sess__start_worker(s, err);
  if (rc != 0) {
    s->state = SESS_FAILED;
    snprintf(s->reason, sizeof s->reason, "%.199s", err->message);
    api_utf8_clean(s->reason); /* the cut may split a character */
    sess__dead(s);
  }
  if (rc == 0) {
    sess__run_started(s);
  }
  pthread_cond_signal(&s->wake);
  sess__disown(s);
  return rc;
}
