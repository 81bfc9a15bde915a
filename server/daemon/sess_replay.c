/* Stored runs replayed (sess.h): a run loaded from the store, played to its end in a worker of
 * its own for the run's snapshot, with the replays one client may run at once bounded. */
#define _GNU_SOURCE
#include "sess_internal.h"
#include "snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A stored run loaded for replaying: 0, or -1 with err (404 unknown, 422 dropped events, 409 no
 * recorded end). */
int sess__load_run(sess_registry *r, int64_t run, store_replay *out, sess_error *err) {
  if (!r->st) {
    api_fail(err, API_E_NO_STORE, "", "this server keeps no record");
    return -1;
  }
  char why[256];
  store_sync(r->st, 2000); /* the run may have ended a moment ago */
  if (store_load_replay(store_path(r->st), run, out, why, sizeof why) != 0) {
    api_fail(err, strcmp(why, "no such run") == 0 ? API_E_NOT_FOUND : API_E_NOT_REPLAYABLE, "id",
             "run %lld: %s", (long long)run, why);
    return -1;
  }
  if (!out->ended) {
    store_replay_free(out);
    api_fail(err, API_E_RUN_OPEN, "id",
             "run %lld has no recorded end (still running, or interrupted)", (long long)run);
    return -1;
  }
  return 0;
}

/* The most work a snapshot's replay may be, in the engine's cost units (µs on a slow machine):
 * five minutes there, one or two here; the request waits for it. */
#define REPLAY_MAX_US 300e6

static int replay_timeout(const grn_world_def *def, int steps) {
  const double ms = WORKER_TIMEOUT_MS + 0.001 * steps * grn_world_def_step_cost(def);
  return ms < 600000.0 ? (int)ms : 600000;
}

/* One recorded event applied in the replay's worker: the engine took it when it was recorded, so
 * a refusal now means the replay is not the run. 0 or -1 with err. */
static int replay_event(worker_client *wc, const grn_world_def *def, const timeline_event *ev,
                        uint64_t at, sess_error *err) {
  worker_result res;
  int type;
  if (ev->is_action) {
    type = worker_call_act(wc, &ev->action, replay_timeout(def, 600), &res);
  } else {
    type = worker_call_set(wc, ev->param_index, ev->value, replay_timeout(def, 0), &res);
  }
  if (type == WORKER_REPLY_STATUS) {
    return 0;
  }
  api_fail(err, API_E_REPLAY_FAILED, "", "the replay refused its event at step %llu: %s",
           (unsigned long long)at, type == WORKER_REPLY_ERROR ? res.error.message : wc->reason);
  return -1;
}

/* Steps the replay's worker through the run's events to its end, then takes the snapshot. */
static int replay_to_end(worker_client *wc, store_replay *rp, int64_t run, int format, char **text,
                         size_t *len, uint64_t *steps, sess_error *err) {
  const grn_world_def *def = &rp->def;
  const double cost = grn_world_def_step_cost(def);
  const double per_call = CALL_BUDGET_US * 20.0 / (cost > 0.0 ? cost : 1.0);
  const uint64_t chunk = per_call >= (double)WORKER_MAX_STEPS ? (uint64_t)WORKER_MAX_STEPS
                         : per_call <= 1.0                    ? 1
                                                              : (uint64_t)per_call;
  worker_result res;
  /* the timeline counts the run's steps: a reset restarts the world's clock, not the run's */
  for (uint64_t now = 0;;) {
    const timeline_event *ev;
    while ((ev = timeline_due(&rp->events, now)) != NULL) {
      if (replay_event(wc, def, ev, now, err) != 0) {
        return -1;
      }
    }
    if (timeline_done(&rp->events, now)) {
      break;
    }
    const uint64_t k = timeline_room(&rp->events, now, chunk);
    if (worker_call_step(wc, (int)k, false, replay_timeout(def, (int)k), NULL, &res) !=
        WORKER_REPLY_STATUS) {
      api_fail(err, API_E_REPLAY_FAILED, "", "the replay's worker ended: %s", wc->reason);
      return -1;
    }
    now += k;
  }
  if (worker_call_status(wc, replay_timeout(def, 1), &res) != WORKER_REPLY_STATUS) {
    api_fail(err, API_E_REPLAY_FAILED, "", "the replay's worker ended: %s", wc->reason);
    return -1;
  }
  char digest[17];
  snprintf(digest, sizeof digest, "%016llx", (unsigned long long)res.status.digest);
  if (rp->digest[0] && strcmp(digest, rp->digest) != 0) {
    api_fail(err, API_E_REPLAY_DIVERGED, "", "run %lld replayed to digest %s, not its recorded %s",
             (long long)run, digest, rp->digest);
    return -1;
  }
  const int alive = res.status.alive;
  *steps = res.status.steps;
  const int type = worker_call_snapshot(wc, format, snapshot_max_bytes(alive),
                                        replay_timeout(def, 0) + alive / 50, text, len, &res);
  if (type != WORKER_REPLY_STATUS || !*text) {
    api_fail(err, API_E_REPLAY_FAILED, "", "no snapshot from the replay: %s",
             type == WORKER_REPLY_ERROR ? res.error.message
             : type < 0                 ? wc->reason
                                        : "out of memory");
    free(*text);
    *text = NULL;
    return -1;
  }
  return 0;
}

/* A replay slot for `client` ("" the admin), or the refusal: the pool is full, or the client's
 * own replay is under way. */
static int take_replay(sess_registry *r, const char *client, sess_error *err) {
  pthread_mutex_lock(&r->replay_lock);
  bool mine = false;
  for (int i = 0; i < r->nreplaying && *client; i++) {
    mine = mine || strcmp(r->replaying[i], client) == 0;
  }
  const bool full = r->nreplaying >= r->limits.replay_slots;
  if (!mine && !full) {
    snprintf(r->replaying[r->nreplaying++], sizeof r->replaying[0], "%s", client);
    r->replays++;
  }
  pthread_mutex_unlock(&r->replay_lock);
  if (mine || full) {
    api_fail(err, API_E_REPLAY_BUSY, "",
             mine ? "this client's replay of a run is still under way: ask again when it is done"
                  : "the server replays %d runs at once for their snapshots, and all are busy: "
                    "ask again in a few seconds",
             r->limits.replay_slots);
    err->seconds_left = 5.0;
    return -1;
  }
  return 0;
}

static void give_replay(sess_registry *r, const char *client) {
  pthread_mutex_lock(&r->replay_lock);
  for (int i = 0; i < r->nreplaying; i++) {
    if (strcmp(r->replaying[i], client) == 0) {
      memcpy(r->replaying[i], r->replaying[--r->nreplaying], sizeof r->replaying[0]);
      break;
    }
  }
  pthread_mutex_unlock(&r->replay_lock);
}

/* The replay at its end, checked: every format's snapshot goes to the cache, so the run is
 * never replayed again for one. */
static void keep_snapshots(sess_registry *r, worker_client *wc, const store_replay *rp, int64_t run,
                           int format, const char *text, size_t len, uint64_t steps) {
  if (!r->snaps || !rp->digest[0]) {
    return; /* without a recorded digest nothing says a kept file is this run's end */
  }
  snapcache_put(r->snaps, run, rp->digest, snapshot_format_name((snapshot_format)format), text, len,
                steps);
  worker_result res;
  if (worker_call_status(wc, replay_timeout(&rp->def, 1), &res) != WORKER_REPLY_STATUS) {
    return;
  }
  const snapshot_format other = format == SNAPSHOT_CSV ? SNAPSHOT_VTK : SNAPSHOT_CSV;
  char *more = NULL;
  size_t n = 0;
  if (worker_call_snapshot(wc, other, snapshot_max_bytes(res.status.alive),
                           replay_timeout(&rp->def, 0) + res.status.alive / 50, &more, &n,
                           &res) == WORKER_REPLY_STATUS &&
      more) {
    snapcache_put(r->snaps, run, rp->digest, snapshot_format_name(other), more, n, steps);
  }
  free(more);
}

int sess_run_snapshot(sess_registry *r, int64_t run, int format, const char *client, char **text,
                      size_t *len, uint64_t *steps, sess_error *err) {
  *text = NULL;
  client = client ? client : "";
  store_replay rp;
  int rc = sess__load_run(r, run, &rp, err);
  if (rc != 0) {
    return -1;
  }
  if (rp.digest[0] &&
      snapcache_get(r->snaps, run, rp.digest, snapshot_format_name((snapshot_format)format), text,
                    len, steps) == 0) {
    store_replay_free(&rp);
    return 0;
  }
  const double work = (double)rp.end_steps * grn_world_def_step_cost(&rp.def);
  if (work > REPLAY_MAX_US) {
    api_fail(err, API_E_TOO_LONG, "id",
             "run %lld is too long to replay for a snapshot (about %.0f s of work; at most "
             "%.0f s)",
             (long long)run, work * 1e-6, REPLAY_MAX_US * 1e-6);
    store_replay_free(&rp);
    return -1;
  }
  if (take_replay(r, client, err) != 0) {
    store_replay_free(&rp);
    return -1;
  }
  /* another request may have kept it while this one waited for its slot */
  if (rp.digest[0] &&
      snapcache_get(r->snaps, run, rp.digest, snapshot_format_name((snapshot_format)format), text,
                    len, steps) == 0) {
    give_replay(r, client);
    store_replay_free(&rp);
    return 0;
  }
  worker_client wc;
  memset(&wc, 0, sizeof wc);
  wc.cancel_fd = -1;
  worker_create c = sess__create_msg(r, &rp.def);
  c.frame_bytes = 0; /* nobody watches a replay for a snapshot */
  worker_status first;
  if (worker_spawn(&wc, r->worker_exe, &c, false, replay_timeout(&rp.def, 4), -1, &first) != 0) {
    api_fail(err, API_E_WORKER_FAILED, "", "the replay's worker did not start: %s", wc.reason);
    rc = -1;
  } else {
    rc = replay_to_end(&wc, &rp, run, format, text, len, steps, err);
    if (rc == 0) {
      keep_snapshots(r, &wc, &rp, run, format, *text, *len, *steps);
    }
    worker_stop(&wc, STOP_GRACE_MS);
  }
  store_replay_free(&rp);
  give_replay(r, client);
  return rc;
}
