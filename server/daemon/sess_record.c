/* A session's record and the stream's messages (see sess_internal.h): every change passes
 * sess__event, which streams it and records it; runs start and close here, and samples are
 * streamed and recorded as they come. */
#define _GNU_SOURCE
#include "sess_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void sess__notify(const session *s) {
  if (s->reg->notify) {
    s->reg->notify(s->reg->notify_ctx);
  }
}

static json_t *number_or_null(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

/* Publish one JSON text message on the session's stream. */
void sess__stream_text(session *s, json_t *msg) {
  char *text = json_dumps(msg, JSON_COMPACT);
  if (text) {
    chan_publish_text(&s->ch, text, strlen(text));
    free(text);
    sess__notify(s);
  }
  json_decref(msg);
}

/* The current run's stretches (sess_internal.h): a new one opens with the parameters now in force
 * and the ones just changed; the open one is closed where the run stands. */
static json_t *segment_open(session *s, json_t *changed) {
  s->segment_sampled = false;
  return json_pack("{s:I, s:f, s:n, s:n, s:o, s:o, s:o}", "from_steps", (json_int_t)s->last.steps,
                   "from_t", s->last.t, "to_steps", "to_t", "params", api_params_json(&s->def),
                   "changed", changed ? changed : json_object(), "results", json_object());
}

static void segment_close(session *s) {
  if (s->segment) {
    json_object_set_new(s->segment, "to_steps", json_integer((json_int_t)s->last.steps));
    json_object_set_new(s->segment, "to_t", json_real(s->last.t));
    if (s->segment_sampled) {
      json_object_set_new(s->segment, "results",
                          api_measurements_json(s->def.scene, &s->segment_meas));
    }
  }
}

int sess__room_for_change(const session *s, sess_error *err) {
  if (s->nsegments >= SEGMENTS_MAX) {
    api_fail(err, API_E_TOO_MANY_CHANGES, "",
             "this run has had %d settings of its parameters, the most one run records: Reset "
             "to start a new run",
             SEGMENTS_MAX);
    return -1;
  }
  return 0;
}

void sess__event(session *s, const char *kind, json_t *detail) {
  if (s->reg->st && s->run_open) {
    char *text = detail ? json_dumps(detail, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    store_event(s->reg->st, (int64_t)s->run_id, s->last.steps, s->last.t, kind, text);
    free(text);
  }
  if (s->segment && strcmp(kind, "parameter_changed") == 0) {
    /* every change starts a stretch of its own, so no result mixes two settings */
    segment_close(s);
    json_t *next = segment_open(s, json_deep_copy(json_object_get(detail, "params")));
    if (s->reg->st && s->run_open) {
      store_run_segment(s->reg->st, (int64_t)s->run_id, s->segment, next);
    }
    json_decref(s->segment);
    s->segment = next;
    s->nsegments++;
  }
  json_t *m = json_pack("{s:s, s:s, s:f, s:I, s:I}", "type", "event", "event", kind, "t", s->last.t,
                        "steps", (json_int_t)s->last.steps, "run_id", (json_int_t)s->run_id);
  if (detail) {
    json_object_update(m, detail);
    json_decref(detail);
  }
  sess__stream_text(s, m);
}

/* An engine action in its text form, as the CLI and the replay parse it ("spout:0.5,-1"). */
json_t *sess__action_text(const grn_action *a) {
  char text[256];
  return grn_action_format(a, text, sizeof text) > 0 ? json_string(text) : NULL;
}

/* The end of the current run in the record: why, where (steps and digest, what a replay must
 * reproduce), its last stretch of parameters closed, and its results: the last measurements,
 * under the parameters of that stretch. */
void sess__close_run(session *s, const char *reason) {
  sess__settle_forget(s); /* the world goes, or starts over */
  if (!s->run_open) {
    return;
  }
  s->run_open = false;
  segment_close(s);
  json_t *last = s->segment;
  s->segment = NULL;
  if (!s->reg->st) {
    json_decref(last);
    return;
  }
  store_run_segment(s->reg->st, (int64_t)s->run_id, last, NULL);
  json_decref(last);
  json_t *results = json_object();
  const grn_scene_info *scene = s->def.scene;
  for (int k = 0; k < scene->measure_count && k < s->last.meas.count; k++) {
    if (k != GRN_MEASURE_T && isfinite(s->last.meas.value[k])) {
      json_object_set_new(results, scene->measures[k].name, json_real(s->last.meas.value[k]));
    }
  }
  /* the digest is known unless the worker was cut short mid-call or died: the run then ends
   * where it was last seen, without one (a replay can still run it, not check it) */
  const bool known = s->last.digest_steps == s->last.steps;
  store_run_end(s->reg->st, (int64_t)s->run_id, reason, s->last.steps, s->last.t,
                known ? &s->last.digest : NULL, results);
}

void sess__run_started(session *s) {
  s->run_open = true;
  json_decref(s->segment);
  s->segment = segment_open(s, NULL);
  s->nsegments = 1;
  if (s->reg->st) {
    store_run_start(s->reg->st, (int64_t)s->run_id, s->id, s->label, &s->def,
                    grn_world_def_grains(&s->def), s->in_class ? s->link.class_id : NULL,
                    s->in_class ? s->link.group : NULL, (int64_t)s->reset_of);
    store_run_segment(s->reg->st, (int64_t)s->run_id, NULL, s->segment);
  }
  const int every = grn_scene_sample_steps(s->def.scene);
  json_t *detail = json_pack("{s:s, s:o, s:I, s:i, s:i, s:f}", "scene", s->def.scene->name,
                             "params", api_params_json(&s->def), "seed", (json_int_t)s->def.seed,
                             "grains", grn_world_def_grains(&s->def), "sample_steps", every,
                             "sample_seconds", every * GRN_STEP_SECONDS);
  if (s->script) {
    json_object_set_new(detail, s->script->fast ? "fork_of" : "replay_of",
                        json_integer(s->script->source));
  }
  if (s->reset_of) {
    json_object_set_new(detail, "reset_of", json_integer((json_int_t)s->reset_of));
  }
  sess__event(s, "run_started", detail);
  sess__settle_announce(s); /* a run that starts from a kept settled state says so next */
}

void sess__failed(session *s) {
  if (s->ending) {
    return; /* finish or delete stopped the worker: it did not fail */
  }
  s->state = SESS_FAILED;
  sess__dead(s);
  snprintf(s->reason, sizeof s->reason, "%s", s->wc.reason);
  api_utf8_clean(s->reason); /* the worker's words, cut to fit */
  pthread_mutex_lock(&s->reg->lock);
  s->reg->worker_failures++;
  pthread_mutex_unlock(&s->reg->lock);
  s->dirty = false;
  sess__event(s, "session_failed", json_pack("{s:s}", "reason", s->reason));
  log_msg(LOG_WARN, "session_failed", "session=%s run=%llu: %s", s->id,
          (unsigned long long)s->run_id, s->reason);
  sess__close_run(s, "failed");
}

/* One new sample of the engine's (every grn_scene_sample_steps of simulated time), streamed and
 * recorded once: the same sample seen again (the status after the step call that brought it, a
 * frame's) is not. */
static void publish_sample(session *s, const grn_measurements *m, int alive) {
  const double sample_t = m->value[GRN_MEASURE_T];
  if (!isfinite(sample_t) || sample_t == s->sample_mark) {
    return;
  }
  s->sample_mark = sample_t;
  const uint64_t sample_steps = (uint64_t)llround(sample_t / GRN_STEP_SECONDS);
  if (s->reg->st && s->run_open) {
    store_sample(s->reg->st, (int64_t)s->run_id, sample_steps, sample_t, s->def.scene, m);
  }
  /* the open stretch's results: its latest sample's (a silo's mean flow is the engine's, over a
   * window it starts again at every change) */
  s->segment_meas = *m;
  s->segment_sampled = true;
  json_t *line = json_array();
  for (int i = 0; i < 4; i++) {
    json_array_append_new(line, number_or_null(m->line[i]));
  }
  sess__stream_text(s,
                    json_pack("{s:s, s:f, s:I, s:s, s:f, s:i, s:o, s:o}", "type", "measurements",
                              "t", sample_t, "steps", (json_int_t)sample_steps, "state",
                              grn_state_name(m->state), "rt_factor", s->rt_factor, "alive", alive,
                              "values", api_measurements_json(s->def.scene, m), "line", line));
}

void sess__samples(session *s) {
  for (int i = 0; i < s->samples.n; i++) {
    publish_sample(s, &s->samples.at[i].meas, s->samples.at[i].alive);
  }
  if (s->samples.lost > 0) {
    log_msg(LOG_WARN, "samples_lost", "session=%s: %d samples not kept (out of memory)", s->id,
            s->samples.lost);
  }
  s->samples.n = 0;
  s->samples.lost = 0;
}

/* The latest sample (one a step call did not bring: after a reset, a scene switch), and the
 * changes of the measured state as events. */
void sess__publish(session *s, bool samples) {
  if (samples) {
    publish_sample(s, &s->last.meas, (int)s->last.alive);
  }
  if (s->last.meas.state != s->shown_state) {
    s->shown_state = s->last.meas.state;
    const grn_state st = s->shown_state;
    const char *kind = st == GRN_STATE_JAMMED                              ? "jam"
                       : st == GRN_STATE_DRAINED || st == GRN_STATE_ASLEEP ? "done"
                                                                           : "state";
    sess__event(s, kind, json_pack("{s:s}", "state", grn_state_name(st)));
  }
}
