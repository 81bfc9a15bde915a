/* The stream's binary frames (schema/stream.md): grains quantized to 16 bits per axis on one
 * uniform grid; keyframes with radii and scene geometry; predicted frames, each grain's residual
 * against the extrapolation of its last two frames, with grains that came since appended whole;
 * deltas against the keyframe, for a viewer that lacks those two; zigzag byte planes, all
 * zstd-compressed. Encoded once per frame for every viewer. */
#ifndef GRAINLAB_FRAME_H
#define GRAINLAB_FRAME_H

#include "grainlab/grainlab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FRAME_MAGIC 0x464e5247u /* "GRNF" little-endian */
#define FRAME_VERSION 4
#define FRAME_HEADER 64     /* bytes */
#define FRAME_KEY_EVERY 2.0 /* s: the longest a viewer waits for a keyframe */
#define FRAME_ORDER_MAX 2   /* a predicted frame refers to at most the two frames before it */

enum { FRAME_KEY = 1, FRAME_DELTA = 2, FRAME_CHAINS = 3, FRAME_PREDICTED = 4 };

/* The fixed header, as laid out on the wire (little-endian, packed). */
typedef struct frame_header {
  uint32_t magic;
  uint8_t version, kind;
  uint8_t order; /* a predicted frame: the frames right before it that it needs (1 or 2); else 0 */
  uint8_t reserved;
  uint32_t seq;     /* this frame */
  uint32_t key_seq; /* the keyframe it refers to (itself for a keyframe) */
  uint32_t count;   /* grains */
  uint32_t raw_size, payload_size;
  uint32_t kept;         /* leading grains that are frame seq − 1's, in one world, moved on */
  double t;              /* simulated time, s */
  float origin[3];       /* grid origin, m */
  float step;            /* grid step, m, the same on every axis */
  uint64_t published_us; /* when the daemon published it, µs since the epoch (0: not yet) */
} frame_header;
_Static_assert(sizeof(frame_header) == FRAME_HEADER, "frame header is 64 bytes on the wire");

typedef struct frame_encoder frame_encoder;

frame_encoder *frame_encoder_new(void);
void frame_encoder_free(frame_encoder *e);
/* Encode the world's grains now: a keyframe when asked, at the first frame, every
 * FRAME_KEY_EVERY seconds, or when grains came, went or left the keyframe's grid; else a
 * predicted frame, which only a viewer that decoded the frames before it can use. The frame
 * stays valid until the next call (of any frame_encode function). Returns 0 or −1 (out of
 * memory). */
int frame_encode(frame_encoder *e, const grn_world *w, bool force_key, const uint8_t **out,
                 size_t *len);

/* Forget the keyframe: the next frame is a keyframe that shares no grain with the frames before
 * (kept 0). For a world that was replaced, so that no client draws grains moving between the two.
 */
void frame_encoder_restart(frame_encoder *e);

/* The last frame again, as a delta against its keyframe (same seq, same decoded grains): what a
 * viewer that skipped frames can use. *len = 0 (nothing) when that frame is a keyframe itself.
 * Valid until the next call; 0 or −1 (no frame yet, out of memory). */
int frame_encode_delta(frame_encoder *e, const uint8_t **out, size_t *len);

/* The force chains of the world as it was at the last frame: a FRAME_CHAINS message naming
 * grains by their index in that frame's order (so only valid with the keyframe it refers to). */
int frame_encode_chains(frame_encoder *e, const grn_contact *chains, int n, const uint8_t **out,
                        size_t *len);

/* A decoder's state: the last keyframe's grid and q, and the last two frames' q. Zero it to
 * start. */
typedef struct frame_decoder {
  uint32_t key_seq, key_count; /* the keyframe, and its grains */
  uint32_t count, prev_count;  /* grains in the last frame decoded (the keyframe's first, then
                                  those that came since), and in the one before it (0: none) */
  uint32_t kept;               /* the last frame's `kept` */
  float origin[3], step;
  uint32_t seq; /* the last frame decoded */
  int run;      /* frames decoded one after another up to seq since the keyframe, at most 2 */
  uint16_t *key_q, *q, *q_prev, *q_new; /* 3 planes of key_count, count, prev_count; scratch */
  double *pos;                          /* decoded positions, xyz per grain */
  uint8_t *shade, *radius;
  grn_geometry geometry;
  double t;
  size_t cap;
} frame_decoder;

/* Decode one frame; −1 on anything malformed, a delta whose keyframe it has not decoded, or a
 * predicted frame without the frames it refers to. A refused frame leaves the state as it was. */
int frame_decode(frame_decoder *d, const uint8_t *buf, size_t len);
void frame_decoder_free(frame_decoder *d);

/* Decode a FRAME_CHAINS message for the decoder's keyframe: up to cap pairs into out (a, b are
 * grain indices). Returns the number of pairs, or −1 on anything malformed. */
int frame_decode_chains(const frame_decoder *d, const uint8_t *buf, size_t len, grn_contact *out,
                        int cap);

#endif
