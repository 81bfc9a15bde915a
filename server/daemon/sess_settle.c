/* A session's settle shared through the registry's kept states (issue 33, settled.h). A world
 * built fresh from a definition whose scene settles is on one path until something changes it:
 * the same for every session of the same definition. The first session to start settles it and
 * keeps the state where the grains first come to rest; a session that starts later restores it
 * and is interactive at once; one that starts while another settles waits for it without
 * stepping (its share of the cores goes to that settle) and restores it then. Waits are bounded:
 * a session that gives up its settle (changes something, pauses, fails) or misses its promised
 * time lets the next one settle instead. The run stays true: a restored world is the one that
 * settling again would reach, step for step, and the run says where it came from (an event). */
#define _GNU_SOURCE
#include "sess_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How long a session promises to settle a definition in, wall seconds: twice the engine's bound
 * at the session's speed, and room for a loaded machine. */
static double promise_seconds(const session *s) {
  return 2.0 * s->last.settle_left / (s->speed > 0.0 ? s->speed : 1.0) + 10.0;
}

/* The world made from a kept state, announced in the run (now, or where the run starts). Under
 * both locks, `lock` let go around the call. 0; -1 when the worker refused it (the file is
 * deleted: its session settles as if nothing had been kept); -2 when the worker ended. */
static int restore(session *s, settled_state *st) {
  settled *c = s->reg->settled;
  if (st->steps < s->last.steps) {
    settled_state_free(st); /* behind this world (a `step n` went on): nothing to gain */
    return -1;
  }
  worker_result r;
  const int timeout = sess__timeout_for(s, 4);
  pthread_mutex_unlock(&s->lock);
  const int type =
      worker_call_restore(&s->wc, st->bytes, st->len, st->steps, st->digest, timeout, &r);
  pthread_mutex_lock(&s->lock);
  const uint64_t steps = st->steps;
  settled_state_free(st);
  if (type == WORKER_REPLY_ERROR) {
    log_msg(LOG_WARN, "settled_refused", "session=%s: the kept state %s was refused: %s", s->id,
            s->skey.file, r.error.message);
    settled_refused(c, &s->skey);
    return -1;
  }
  if (type != WORKER_REPLY_STATUS) {
    return -2;
  }
  s->last = r.status;
  s->settling = r.status.settle_left > 0.0;
  s->awaiting = false;
  s->dirty = true;
  /* the restored world's latest sample is the settling world's, at or before the kept step: this
   * session did not take it, and its run records none before it starts or goes on */
  s->sample_mark = r.status.meas.value[GRN_MEASURE_T];
  s->restored = s->restore_untold = true;
  settled_restored(c, &s->skey);
  log_msg(LOG_INFO, "settled_restored", "session=%s: started from the kept %s at step %llu", s->id,
          s->skey.file, (unsigned long long)steps);
  if (s->run_open) {
    sess__settle_announce(s);
  }
  return 0;
}

/* Look for the definition's kept state: restore it, wait for the session that settles it, or
 * settle it here for the others. Under both locks. 0, or -2 when the worker ended. */
static int look(session *s) {
  settled *c = s->reg->settled;
  /* taken before the look: a state kept meanwhile moves it past this, and is looked for again */
  s->seen_gen = settled_generation(c);
  for (int tries = 0; tries < 2; tries++) {
    const double until = sess__now() + promise_seconds(s);
    const settled_key key = s->skey;
    uint64_t ticket;
    double busy_until;
    settled_state st;
    pthread_mutex_unlock(&s->lock); /* reads a file */
    const settled_answer a = settled_look(c, &key, until, &ticket, &busy_until, &st);
    pthread_mutex_lock(&s->lock);
    if (a == SETTLED_KEPT) {
      const int rc = restore(s, &st);
      if (rc != -1) {
        return rc;
      }
      continue; /* refused and deleted: settle it, or wait for one who does */
    }
    if (a == SETTLED_BUSY) {
      if (!s->awaiting) {
        settled_waited(c);
      }
      s->awaiting = true;
      s->await_until = busy_until;
      return 0;
    }
    s->awaiting = false;
    s->claim = ticket;
    settled_missed(c);
    return 0;
  }
  s->awaiting = false; /* refused twice: this session settles by itself */
  settled_missed(c);
  return 0;
}

int sess__settle_start(session *s) {
  settled *c = s->reg->settled;
  s->skeyed = s->pristine = s->awaiting = s->restored = s->restore_untold = false;
  s->claim = 0;
  s->settling = s->last.settle_left > 0.0;
  /* a replay or fork plays a stored run's events from its own start: left as it was recorded */
  if (!c || s->script || !s->settling || !settled_key_of(&s->def, &s->skey)) {
    return 0;
  }
  s->skeyed = s->pristine = true;
  return look(s);
}

/* A session that settles its key itself (for the others, or after its wait ran out) and finds
 * it kept meanwhile by another, further on (one that got ahead while this one waited, or whose
 * claim lapsed while it went on): it jumps there, and is done settling. */
static bool overtaken(session *s) {
  settled *c = s->reg->settled;
  s->seen_gen = settled_generation(c);
  const settled_key key = s->skey;
  settled_state st;
  pthread_mutex_unlock(&s->lock); /* reads a file */
  const int found = settled_read(c, &key, &st);
  pthread_mutex_lock(&s->lock);
  if (found != 0 || !s->pristine || !s->settling) {
    settled_state_free(&st);
    return false;
  }
  const int rc = restore(s, &st);
  if (rc == -2) {
    sess__failed(s);
  }
  if (rc == 0) {
    sess__settle_release(s);
  }
  return rc == 0;
}

bool sess__settle_tick(session *s) {
  settled *c = s->reg->settled;
  if (!s->skeyed || !s->pristine || !s->settling || !c) {
    return false;
  }
  const bool moved = settled_generation(c) != s->seen_gen;
  if (!s->awaiting) {
    return moved && overtaken(s);
  }
  if (!moved && sess__now() < s->await_until) {
    return false;
  }
  const bool was = s->restored;
  if (look(s) != 0) {
    sess__failed(s);
    return false;
  }
  return s->restored && !was;
}

void sess__settle_check(session *s, sess_keep *out) {
  memset(out, 0, sizeof *out);
  if (!s->skeyed || !s->settling || s->last.settle_left > 0.0 || s->state == SESS_FAILED) {
    return;
  }
  s->settling = false; /* the grains have just come to rest */
  /* kept by the session that settles its key for the others; by another only when nobody did
   * (its claim lapsed, or a pause gave it up, while this one went on) */
  if (!s->pristine || (s->claim == 0 && settled_has(s->reg->settled, &s->skey))) {
    return;
  }
  settled_stats stats; /* a state past the bound is not kept: the worker may send no more */
  settled_get_stats(s->reg->settled, &stats);
  worker_result r;
  char *bytes = NULL;
  size_t len = 0;
  const int timeout = sess__timeout_for(s, 4);
  pthread_mutex_unlock(&s->lock);
  const int type = worker_call_save(&s->wc, (size_t)stats.max_bytes, timeout, &bytes, &len, &r);
  pthread_mutex_lock(&s->lock);
  /* a pause meanwhile gave the claim up, not the path: the state is kept all the same */
  if (type == WORKER_REPLY_STATUS && bytes && s->pristine) {
    s->last = r.status;
    out->key = s->skey;
    out->ticket = s->claim;
    out->state = (settled_state){bytes, len, r.status.steps, r.status.digest, r.status.t};
    s->claim = 0; /* the caller keeps the state, which ends the claim */
    return;
  }
  free(bytes);
  if (type == WORKER_REPLY_STATUS) {
    s->last = r.status;
  } else if (type == WORKER_REPLY_ERROR) {
    log_msg(LOG_WARN, "settled_not_kept", "session=%s: its settled state was not saved: %s", s->id,
            r.error.message);
  } else {
    sess__failed(s);
    return;
  }
  sess__settle_forget(s);
}

void sess__settle_keep(settled *c, sess_keep *k) {
  if (k->state.bytes) {
    settled_put(c, &k->key, k->ticket, &k->state);
    log_msg(LOG_INFO, "settled_kept", "kept %s: step %llu, %zu bytes", k->key.file,
            (unsigned long long)k->state.steps, k->state.len);
    settled_state_free(&k->state);
  }
}

void sess__settle_release(session *s) {
  if (s->claim != 0) {
    settled_release(s->reg->settled, s->claim);
    s->claim = 0;
  }
}

void sess__settle_forget(session *s) {
  sess__settle_release(s);
  s->pristine = false;
  s->awaiting = false;
}

void sess__settle_announce(session *s) {
  if (!s->restore_untold) {
    return;
  }
  s->restore_untold = false;
  char digest[17];
  snprintf(digest, sizeof digest, "%016llx", (unsigned long long)s->last.digest);
  sess__event(s, "settle_restored", json_pack("{s:s}", "digest", digest));
}

void sess_set_settled(sess_registry *r, settled *cache) {
  settled_free(r->settled);
  r->settled = cache;
}

void sess_settled_metrics(sess_registry *r, FILE *f) {
  settled_stats st;
  settled_get_stats(r->settled, &st);
  fprintf(f,
          "# HELP grainlab_settled_cache_hits_total Sessions started from a kept settled state.\n"
          "# TYPE grainlab_settled_cache_hits_total counter\n"
          "grainlab_settled_cache_hits_total %llu\n"
          "# HELP grainlab_settled_cache_misses_total Sessions that settled their grains "
          "themselves (none kept).\n"
          "# TYPE grainlab_settled_cache_misses_total counter\n"
          "grainlab_settled_cache_misses_total %llu\n"
          "# HELP grainlab_settled_cache_waits_total Sessions that waited for another's settle.\n"
          "# TYPE grainlab_settled_cache_waits_total counter\n"
          "grainlab_settled_cache_waits_total %llu\n"
          "# HELP grainlab_settled_cache_rejected_total Kept states refused (damaged), deleted.\n"
          "# TYPE grainlab_settled_cache_rejected_total counter\n"
          "grainlab_settled_cache_rejected_total %llu\n"
          "# HELP grainlab_settled_cache_evictions_total Kept states deleted for the bound.\n"
          "# TYPE grainlab_settled_cache_evictions_total counter\n"
          "grainlab_settled_cache_evictions_total %llu\n"
          "# HELP grainlab_settled_cache_states Settled states kept in the data directory.\n"
          "# TYPE grainlab_settled_cache_states gauge\n"
          "grainlab_settled_cache_states %llu\n"
          "# HELP grainlab_settled_cache_bytes Bytes of the kept settled states.\n"
          "# TYPE grainlab_settled_cache_bytes gauge\n"
          "grainlab_settled_cache_bytes %llu\n"
          "# HELP grainlab_settled_cache_max_bytes Their bound (settled-cache-mb; 0: none kept).\n"
          "# TYPE grainlab_settled_cache_max_bytes gauge\n"
          "grainlab_settled_cache_max_bytes %llu\n",
          (unsigned long long)st.hits, (unsigned long long)st.misses, (unsigned long long)st.waits,
          (unsigned long long)st.rejected, (unsigned long long)st.evicted,
          (unsigned long long)st.files, (unsigned long long)st.bytes,
          (unsigned long long)st.max_bytes);
}
