/* What the registry shows of its sessions (sess.h): one session's view, the list, the totals
 * and the Prometheus figures. */
#define _GNU_SOURCE
#include "sess_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *state_name(sess_state st) {
  static const char *const names[] = {"running", "paused", "asleep", "failed", "ended"};
  return names[st];
}

void sess_view(session *s, api_session_view *out) {
  memset(out, 0, sizeof *out);
  out->viewers = chan_viewers(&s->ch, NULL, NULL);
  pthread_mutex_lock(&s->lock);
  memcpy(out->id, s->id, sizeof out->id);
  memcpy(out->join_code, s->join, sizeof out->join_code);
  memcpy(out->label, s->label, sizeof out->label);
  out->private_ = sess_private(s);
  out->def = s->def;
  out->state = state_name(s->state);
  if (s->state == SESS_FAILED) {
    snprintf(out->reason, sizeof out->reason, "%s", s->reason);
  }
  out->t = s->last.t;
  out->settle_left = s->last.settle_left;
  out->settle_wait = s->awaiting;
  out->rt_factor = s->rt_factor;
  out->speed = s->speed;
  out->run_id = s->run_id;
  out->steps = s->last.steps;
  out->digest = s->last.digest;
  out->digest_known = s->last.digest_steps == s->last.steps;
  out->meas = s->last.meas;
  if (s->script) {
    out->script = s->script->fast ? "fork" : "replay";
    out->script_run = s->script->source;
    out->script_end_steps = s->script->r.end_steps;
  }
  if (s->in_class) {
    out->in_class = true;
    out->class_locked = sess_locked(s);
    memcpy(out->class_id, s->link.class_id, sizeof out->class_id);
    memcpy(out->group, s->link.group, sizeof out->group);
  }
  pthread_mutex_unlock(&s->lock);
}

/* The listed sessions, each referenced (release every one, then free the array); session locks
 * may be taken afterwards, since elsewhere the order is session, then registry. */
session **sess__snapshot(sess_registry *r, int *n) {
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

api_session_view *sess_list(sess_registry *r, bool include_private, int *count) {
  int n;
  session **copy = sess__snapshot(r, &n);
  api_session_view *views = malloc(sizeof *views * (size_t)(n > 0 ? n : 1));
  *count = 0;
  for (int i = 0; i < n; i++) {
    if (views && (include_private || !sess_private(copy[i]))) {
      sess_view(copy[i], &views[(*count)++]);
    }
    sess_release(copy[i]);
  }
  free(copy);
  return views;
}

void sess_get_totals(sess_registry *r, sess_totals *out) {
  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&r->lock);
  out->created = r->created;
  out->worker_failures = r->worker_failures;
  out->steps = __atomic_load_n(&r->steps, __ATOMIC_RELAXED);
  out->max_sessions = r->limits.max_sessions;
  pthread_mutex_unlock(&r->lock);
  pthread_mutex_lock(&r->replay_lock);
  out->replays = r->replays;
  pthread_mutex_unlock(&r->replay_lock);
  int n;
  session **copy = sess__snapshot(r, &n);
  out->sessions = n;
  for (int i = 0; i < n; i++) {
    pthread_mutex_lock(&copy[i]->lock);
    const sess_state st = copy[i]->state;
    const double speed = copy[i]->speed, rt = copy[i]->rt_factor;
    const int grains = grn_world_def_grains(&copy[i]->def);
    pthread_mutex_unlock(&copy[i]->lock);
    if (st == SESS_RUNNING) {
      out->work += grains * speed / GRN_STEP_SECONDS;
      out->lagging += rt > 0 && rt < 0.95 * speed;
    }
    out->running += st == SESS_RUNNING || st == SESS_ASLEEP;
    out->workers += st != SESS_FAILED && st != SESS_ENDED;
    out->failed += st == SESS_FAILED;
    out->viewers += chan_viewers(&copy[i]->ch, NULL, NULL);
    sess_release(copy[i]);
  }
  free(copy);
}

void sess_metrics(sess_registry *r, FILE *f) {
  int n;
  session **copy = sess__snapshot(r, &n);
  /* per-session series for public sessions only: /metrics is open to anyone, and a private
   * session's id is its address (the totals count every session) */
  int shown = 0;
  for (int i = 0; i < n; i++) {
    if (sess_private(copy[i])) {
      sess_release(copy[i]);
    } else {
      copy[shown++] = copy[i];
    }
  }
  n = shown;
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
            chan_viewers(&copy[i]->ch, NULL, NULL));
    sess_release(copy[i]);
  }
  free(copy);
}
