/* The fan-out point of one session's stream: its pacing thread publishes frames and text
 * messages here, encoded once; the websocket thread hands the very same bytes to every viewer,
 * each of which only ever waits for the latest frame, so a slow viewer skips and never holds
 * anyone up. */
#ifndef GRAINLAB_CHAN_H
#define GRAINLAB_CHAN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CHAN_HEADROOM 32 /* bytes free before each blob's data: the websocket header goes there */
/* Text messages a viewer may fall behind by before it skips some: 4 s of a 60 Hz scene's samples
 * (a dam break's, issue 19) with its events, over a minute of a 4 Hz one's. */
#define CHAN_TEXT_RING 256

enum { CHAN_TEXT = 0, CHAN_BINARY = 1 };

/* An immutable, reference-counted message: len bytes at data + CHAN_HEADROOM. */
typedef struct chan_blob {
  int refs; /* atomic */
  uint8_t kind;
  uint8_t order; /* a predicted frame: the frames right before it a viewer must have (else 0) */
  uint32_t seq;  /* frames: the stream's sequence number */
  size_t len;
  uint8_t data[];
} chan_blob;

chan_blob *chan_blob_new(const void *bytes, size_t len, uint8_t kind);
static inline uint8_t *chan_blob_bytes(chan_blob *b) {
  return b->data + CHAN_HEADROOM;
}
void chan_blob_unref(chan_blob *b);

typedef struct chan {
  pthread_mutex_t lock;
  chan_blob *frame;  /* the latest frame: a keyframe or a predicted one */
  chan_blob *delta;  /* the last frame made as a delta too (a viewer asked), of this keyframe */
  chan_blob *key;    /* the keyframe it refers to (the same blob when it is one) */
  chan_blob *chains; /* the force chains drawn with `frame` (chains scene) */
  chan_blob *text[CHAN_TEXT_RING];
  uint64_t text_next; /* text messages published so far */
  int viewers;
  bool closed;   /* the session ended: viewers are sent away */
  bool want_key; /* a viewer waits and nothing is cached: the next frame must be a keyframe */
  /* a viewer cannot use the latest frame (it lacks the frames the prediction needs): the next
   * frame must come with its delta too */
  bool want_delta;
  /* the stream's numbering, independent of the worker's (which restarts with each worker) */
  uint32_t seq, key_seq, worker_key, worker_last;
  bool worker_key_ok;
} chan;

/* What one viewer has been sent (touched by the websocket thread only). */
typedef struct chan_cursor {
  bool has_key;
  uint32_t key_seq, sent_seq, chains_seq;
  int run; /* frames it got one after another up to sent_seq since its keyframe, at most 2 */
  /* it asked for a delta when the newest frame was asked_at: one made since is its to take */
  bool asked;
  uint32_t asked_at;
  uint64_t text_pos;
  uint64_t skipped_frames, skipped_texts;
  /* in: this viewer's rate holds frames back for now; text (and the chains of the frame it got
   * last) still comes */
  bool hold_frames;
  /* out, set by every chan_next: `held`, a frame waits that hold_frames kept back; `shown`, the
   * blob returned is the newest frame, which a rate counts (a keyframe sent only as the
   * reference of a newer delta is not: that delta follows at once, rate or not) */
  bool held, shown;
} chan_cursor;

void chan_init(chan *c);
void chan_destroy(chan *c);

/* Publisher side (the session's pacing thread). */
/* A worker frame, with its delta form if delta_len > 0 and its chains message if chains_len > 0:
 * renumbered into the stream's sequence and stamped with the time. Returns −1 (nothing
 * published) for a frame that refers to a keyframe or a frame never published here, e.g. from a
 * worker that was replaced meanwhile or a frame that went missing; the next must be a keyframe.
 * A delta that does not belong to the frame is left out. */
int chan_publish_frame(chan *c, const uint8_t *frame, size_t len, const uint8_t *delta,
                       size_t delta_len, const uint8_t *chains, size_t chains_len);
void chan_publish_text(chan *c, const char *json, size_t len);
/* A new worker: its numbering starts over and its first frame must be a keyframe. */
void chan_new_source(chan *c);
/* Viewers now, and whether one waits for a keyframe or for a frame with its delta form (both
 * cleared by the call; either may be NULL). */
int chan_viewers(chan *c, bool *want_key, bool *want_delta);
void chan_close(chan *c);

/* Viewer side (the websocket thread). */
/* Join: false when max_viewers are there already or the stream has closed. */
bool chan_join(chan *c, chan_cursor *cur, int max_viewers);
void chan_leave(chan *c);
/* The next message this viewer should get (referenced; unref after sending), or NULL. Sets
 * *closed when the stream has ended and nothing is left to send. Frames stay latest-only under
 * hold_frames too: once it is lifted, the viewer gets the newest (after its keyframe). Every frame
 * returned is one the viewer can decode: the predicted frame when it has the frames before it,
 * else its delta. Without a delta of it, the viewer asks, and the next frame comes with one; that
 * delta is the viewer's even if it takes it only after newer frames came (so that a viewer that
 * reads at its own pace is never starved). A viewer that needs two frames in a row to follow the
 * predicted ones again gets the frame after its delta as a delta too. */
chan_blob *chan_next(chan *c, chan_cursor *cur, bool *closed);

#endif
