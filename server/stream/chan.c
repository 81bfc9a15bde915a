/* One session's stream fan-out (see chan.h). */
#define _GNU_SOURCE
#include "chan.h"

#include "frame.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

chan_blob *chan_blob_new(const void *bytes, size_t len, uint8_t kind) {
  chan_blob *b = malloc(sizeof *b + CHAN_HEADROOM + len);
  if (!b) {
    return NULL;
  }
  b->refs = 1;
  b->kind = kind;
  b->order = 0;
  b->seq = 0;
  b->len = len;
  memcpy(b->data + CHAN_HEADROOM, bytes, len);
  return b;
}

static chan_blob *ref(chan_blob *b) {
  __atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
  return b;
}

void chan_blob_unref(chan_blob *b) {
  if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0) {
    free(b);
  }
}

static void put(chan_blob **slot, chan_blob *b) {
  chan_blob_unref(*slot);
  *slot = b;
}

void chan_init(chan *c) {
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->lock, NULL);
}

static void drop_frames(chan *c) {
  put(&c->frame, NULL);
  put(&c->delta, NULL);
  put(&c->key, NULL);
  put(&c->chains, NULL);
}

void chan_destroy(chan *c) {
  drop_frames(c);
  for (int i = 0; i < CHAN_TEXT_RING; i++) {
    put(&c->text[i], NULL);
  }
  pthread_mutex_destroy(&c->lock);
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void stamp(chan_blob *b, uint32_t seq, uint32_t key_seq, uint64_t us) {
  frame_header h;
  memcpy(&h, chan_blob_bytes(b), sizeof h);
  h.seq = seq;
  h.key_seq = key_seq;
  h.published_us = us;
  memcpy(chan_blob_bytes(b), &h, sizeof h);
  b->seq = seq;
}

int chan_publish_frame(chan *c, const uint8_t *frame, size_t len, const uint8_t *delta,
                       size_t delta_len, const uint8_t *chains, size_t chains_len) {
  frame_header h, dh;
  if (len < sizeof h) {
    return -1;
  }
  memcpy(&h, frame, sizeof h);
  /* the worker is not trusted: a delta goes out only as what it claims to be, this frame's */
  bool with_delta = false;
  if (delta_len >= sizeof dh) {
    memcpy(&dh, delta, sizeof dh);
    with_delta =
        h.kind != FRAME_KEY && dh.kind == FRAME_DELTA && dh.seq == h.seq && dh.key_seq == h.key_seq;
  }
  /* copies made outside the lock: nobody sees them before they are numbered and published */
  chan_blob *f = chan_blob_new(frame, len, CHAN_BINARY);
  chan_blob *d = with_delta ? chan_blob_new(delta, delta_len, CHAN_BINARY) : NULL;
  chan_blob *ch = chains_len >= sizeof h ? chan_blob_new(chains, chains_len, CHAN_BINARY) : NULL;
  if (!f || (with_delta && !d) || (chains_len >= sizeof h && !ch)) {
    chan_blob_unref(f);
    chan_blob_unref(d);
    chan_blob_unref(ch);
    return -1;
  }
  const uint64_t us = now_us();
  pthread_mutex_lock(&c->lock);
  const bool key = h.kind == FRAME_KEY;
  /* a predicted frame needs the frame before it here: one the worker made but that was never
   * published (too big for the shared memory, say) breaks the chain until the next keyframe */
  if (!key && (!c->worker_key_ok || h.key_seq != c->worker_key ||
               (h.kind == FRAME_PREDICTED && h.seq != c->worker_last + 1))) {
    c->want_key = true;
    pthread_mutex_unlock(&c->lock);
    chan_blob_unref(f);
    chan_blob_unref(d);
    chan_blob_unref(ch);
    return -1;
  }
  const uint32_t seq = ++c->seq;
  if (key) {
    c->key_seq = seq;
    c->worker_key = h.seq;
    c->worker_key_ok = true;
  }
  c->worker_last = h.seq;
  stamp(f, seq, c->key_seq, us);
  f->order = h.kind == FRAME_PREDICTED ? h.order : 0;
  if (d) {
    stamp(d, seq, c->key_seq, us);
  }
  if (ch) {
    stamp(ch, seq, c->key_seq, us);
  }
  put(&c->frame, f);
  if (d || key) {
    put(&c->delta, d); /* a delta of the last keyframe is kept for a viewer that asked for it */
  }
  if (key) {
    put(&c->key, ref(f));
  }
  put(&c->chains, ch);
  pthread_mutex_unlock(&c->lock);
  return 0;
}

void chan_publish_text(chan *c, const char *json, size_t len) {
  chan_blob *b = chan_blob_new(json, len, CHAN_TEXT);
  if (!b) {
    return; /* out of memory: the message is lost, the stream goes on */
  }
  pthread_mutex_lock(&c->lock);
  put(&c->text[c->text_next % CHAN_TEXT_RING], b);
  c->text_next++;
  pthread_mutex_unlock(&c->lock);
}

void chan_new_source(chan *c) {
  pthread_mutex_lock(&c->lock);
  c->worker_key_ok = false;
  c->want_key = true;
  pthread_mutex_unlock(&c->lock);
}

int chan_viewers(chan *c, bool *want_key, bool *want_delta) {
  pthread_mutex_lock(&c->lock);
  const int n = c->viewers;
  if (want_key) {
    *want_key = c->want_key;
    c->want_key = false;
  }
  if (want_delta) {
    *want_delta = c->want_delta;
    c->want_delta = false;
  }
  pthread_mutex_unlock(&c->lock);
  return n;
}

void chan_close(chan *c) {
  pthread_mutex_lock(&c->lock);
  c->closed = true;
  pthread_mutex_unlock(&c->lock);
}

bool chan_join(chan *c, chan_cursor *cur, int max_viewers) {
  memset(cur, 0, sizeof *cur);
  pthread_mutex_lock(&c->lock);
  const bool ok = !c->closed && c->viewers < max_viewers;
  if (ok) {
    if (c->viewers == 0) {
      /* nobody watched, so no frames were made: what is cached is stale */
      drop_frames(c);
    }
    if (!c->key) {
      c->want_key = true;
    }
    c->viewers++;
    cur->text_pos = c->text_next;
  }
  pthread_mutex_unlock(&c->lock);
  return ok;
}

void chan_leave(chan *c) {
  pthread_mutex_lock(&c->lock);
  c->viewers--;
  pthread_mutex_unlock(&c->lock);
}

/* The newest frame this viewer can decode, or NULL: the latest frame when it got the frames right
 * before it (or it needs none), else the latest frame's delta, or a delta made since the viewer
 * asked for one. */
static chan_blob *usable(const chan *c, const chan_cursor *cur) {
  const chan_blob *f = c->frame, *d = c->delta;
  if (f->order == 0 || (f->seq == cur->sent_seq + 1 && cur->run >= f->order)) {
    return c->frame;
  }
  if (d && d->seq > cur->sent_seq && (d->seq == f->seq || (cur->asked && d->seq > cur->asked_at))) {
    return c->delta;
  }
  return NULL;
}

chan_blob *chan_next(chan *c, chan_cursor *cur, bool *closed) {
  chan_blob *b = NULL;
  *closed = false;
  cur->held = cur->shown = false;
  pthread_mutex_lock(&c->lock);
  const bool need_key = c->frame && c->key && (!cur->has_key || cur->key_seq != c->key->seq);
  const bool newer = c->frame && c->frame->seq > cur->sent_seq;
  chan_blob *form = newer && !need_key && !cur->hold_frames ? usable(c, cur) : NULL;
  if (cur->text_pos < c->text_next) {
    /* text first: small, and events should not wait behind a frame */
    if (c->text_next - cur->text_pos > CHAN_TEXT_RING) {
      cur->skipped_texts += c->text_next - CHAN_TEXT_RING - cur->text_pos;
      cur->text_pos = c->text_next - CHAN_TEXT_RING;
    }
    b = ref(c->text[cur->text_pos++ % CHAN_TEXT_RING]);
  } else if (need_key && !cur->hold_frames) {
    /* the latest frame refers to a keyframe this viewer lacks (it joined, or skipped it) */
    b = ref(c->key);
    cur->shown = c->key == c->frame;
    cur->skipped_frames +=
        cur->has_key && b->seq > cur->sent_seq + 1 ? b->seq - cur->sent_seq - 1 : 0;
    cur->has_key = true;
    cur->key_seq = cur->sent_seq = b->seq;
    cur->run = 1;
  } else if (form) {
    b = ref(form);
    cur->shown = true;
    cur->skipped_frames += b->seq - cur->sent_seq - 1;
    cur->run = b->seq != cur->sent_seq + 1  ? 1
               : cur->run < FRAME_ORDER_MAX ? cur->run + 1
                                            : cur->run;
    cur->sent_seq = b->seq;
    cur->asked = false;
    if (form == c->delta && cur->run < FRAME_ORDER_MAX) {
      /* a predicted frame after this one would need the frame it skipped: the next comes as a
       * delta too (wasted if this viewer's rate holds it, which costs one encoding, no bytes) */
      c->want_delta = true;
    }
  } else if (c->chains && c->chains->seq == cur->sent_seq && cur->chains_seq != cur->sent_seq) {
    b = ref(c->chains);
    cur->chains_seq = b->seq;
  } else {
    cur->held = cur->hold_frames && (need_key || newer);
    if (newer && !need_key && !cur->hold_frames) {
      /* the latest frame is one it cannot decode and no delta of it was made: ask for the next */
      c->want_delta = true;
      cur->asked_at = cur->asked ? cur->asked_at : c->frame->seq;
      cur->asked = true;
    }
    *closed = c->closed;
  }
  pthread_mutex_unlock(&c->lock);
  return b;
}
