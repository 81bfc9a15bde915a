/* Validated changes of a session (see sess.h): parameters, speed, actions and scene switches,
 * each checked before it touches anything, and the worker calls they make. */
#define _GNU_SOURCE
#include "sess_internal.h"

#include <math.h>
#include <string.h>

int sess__live(const session *s, sess_error *err) {
  if (s->state == SESS_FAILED || s->state == SESS_ENDED) {
    api_fail(err, 409, "session_failed", "", "the session has %s: %s",
             s->state == SESS_FAILED ? "failed" : "ended", s->reason);
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
    return -1;
  }
  sess__failed(s);
  api_fail(err, 409, "session_failed", "", "the session's worker ended: %s", s->reason);
  return -1;
}

int sess__act(session *s, const grn_action *a, sess_error *err) {
  if (sess__live(s, err) != 0) {
    return -1;
  }
  /* reset rebuilds the scene: as much work as a few hundred steps */
  worker_result r;
  const int timeout = sess__timeout_for(s, a->kind == GRN_A_RESET ? 600 : 0);
  return sess__reply(s, worker_call_act(&s->wc, a, timeout, &r), &r, false, err);
}

/* A parameter the caller validated against the scene, set in the worker and then in the
 * session's definition. */
int sess__set(session *s, const char *name, double value, sess_error *err) {
  if (sess__live(s, err) != 0) {
    return -1;
  }
  const int k = grn_scene_param_index(s->def.scene, name);
  /* an id the scene does not take is refused by the worker */
  const grn_param_id id = k < 0 ? GRN_PARAM_COUNT : s->def.scene->params[k];
  worker_result r;
  if (sess__reply(s, worker_call_set(&s->wc, id, value, sess__timeout_for(s, 0), &r), &r, true,
                  err) != 0) {
    return -1;
  }
  grn_error e;
  grn_world_def_set(&s->def, name, value, &e);
  return 0;
}

int sess_set_params(session *s, const api_params *params, sess_error *err) {
  pthread_mutex_lock(&s->lock);
  grn_world_def d = s->def;
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
    if ((rc = sess__set(s, p->name, p->value, err)) != 0) {
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
  sess__event(s, "speed_changed", json_pack("{s:f}", "speed", speed));
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
      sess__close_run(s, "finished");
      worker_stop(&s->wc, 2000);
      s->state = SESS_ENDED;
      __atomic_store_n(&s->over, true, __ATOMIC_RELAXED); /* frees its client's slot */
      snprintf(s->reason, sizeof s->reason, "finished by its controller");
    }
  } else if (p.own == API_ACT_TEST) {
    const uint32_t cmd = strcmp(p.info->name, "test_hog") == 0       ? WORKER_CMD_TEST_HOG
                         : strcmp(p.info->name, "test_syscall") == 0 ? WORKER_CMD_TEST_SYSCALL
                                                                     : WORKER_CMD_TEST_HANG;
    worker_result r;
    rc = sess__live(s, err);
    rc = rc ? rc
            : sess__reply(s, worker_call_bare(&s->wc, cmd, WORKER_TIMEOUT_MS, &r), &r, false, err);
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
      worker_result r;
      rc = sess__live(s, err);
      rc = rc ? rc
              : sess__reply(
                    s,
                    worker_call_step(&s->wc, (int)args[0], sess__timeout_for(s, (int)args[0]), &r),
                    &r, false, err);
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
  if (rc == 0 && p.own == API_ACT_FINISH) {
    sess__event(s, "session_ended", json_pack("{s:s}", "reason", s->reason));
    chan_close(&s->ch); /* viewers are sent away: there is nothing more to see */
    sess__notify(s);
  } else if (rc == 0) {
    s->dirty = true;
    json_t *detail = json_pack("{s:o, s:s}", "action", api_action_json(&p), "via", "rest");
    if (engine) {
      json_object_set_new(detail, "engine", engine);
    }
    sess__event(s, "action", detail);
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
  if (sess__check_count(r, def, err) != 0) {
    return -1;
  }
  pthread_mutex_lock(&s->lock);
  if (s->state == SESS_ENDED) {
    /* finish closed the stream and sent its viewers away: a new worker here would run where
     * nobody could watch it */
    api_fail(err, 409, "session_failed", "", "the session has ended: %s", s->reason);
    pthread_mutex_unlock(&s->lock);
    return -1;
  }
  sess__close_run(s, "switched");
  worker_stop(&s->wc, 2000);
  s->def = *def;
  const int rc = sess__start_worker(s, err);
  if (rc != 0) {
    s->state = SESS_FAILED;
    __atomic_store_n(&s->over, true, __ATOMIC_RELAXED);
    snprintf(s->reason, sizeof s->reason, "%.199s", err->message);
    api_utf8_clean(s->reason); /* the cut may split a character */
  }
  if (rc == 0) {
    sess__run_started(s);
  }
  pthread_cond_signal(&s->wake);
  pthread_mutex_unlock(&s->lock);
  return rc;
}
