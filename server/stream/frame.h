/* The stream's binary frames (schema/stream.md): grains quantized to 16 bits per axis on one
 * uniform grid, keyframes with radii and scene geometry, deltas against the last keyframe as
 * zigzag byte planes, all zstd-compressed. Encoded once per frame for every viewer. */
#ifndef GRAINLAB_FRAME_H
#define GRAINLAB_FRAME_H

#include "grainlab/grainlab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FRAME_MAGIC 0x464e5247u /* "GRNF" little-endian */
#define FRAME_VERSION 1
#define FRAME_HEADER 64     /* bytes */
#define FRAME_KEY_EVERY 2.0 /* s: the longest a viewer waits for a keyframe */

enum { FRAME_KEY = 1, FRAME_DELTA = 2, FRAME_CHAINS = 3 };

/* The fixed header, as laid out on the wire (little-endian, packed). */
typedef struct frame_header {
  uint32_t magic;
  uint8_t version, kind;
  uint16_t reserved;
  uint32_t seq;     /* this frame */
  uint32_t key_seq; /* the keyframe it refers to (itself for a keyframe) */
  uint32_t count;   /* grains */
  uint32_t raw_size, payload_size;
  uint32_t reserved2;
  double t;              /* simulated time, s */
  float origin[3];       /* grid origin, m */
  float step;            /* grid step, m, the same on every axis */
  uint64_t published_us; /* when the daemon published it, µs since the epoch (0: not yet) */
} frame_header;
_Static_assert(sizeof(frame_header) == FRAME_HEADER, "frame header is 64 bytes on the wire");

typedef struct frame_encoder frame_encoder;

frame_encoder *frame_encoder_new(void);
void frame_encoder_free(frame_encoder *e);
/* Encode the world's grains now. A keyframe when asked, at the first frame, every
 * FRAME_KEY_EVERY seconds, or when grains came, went or left the keyframe's grid. The frame
 * stays valid until the next call. Returns 0 or −1 (out of memory). */
int frame_encode(frame_encoder *e, const grn_world *w, bool force_key, const uint8_t **out,
                 size_t *len);

/* The force chains of the world as it was at the last frame: a FRAME_CHAINS message naming
 * grains by their index in that frame's order (so only valid with the keyframe it refers to). */
int frame_encode_chains(frame_encoder *e, const grn_contact *chains, int n, const uint8_t **out,
                        size_t *len);

/* A decoder's state: the last keyframe's grid and positions. */
typedef struct frame_decoder {
  uint32_t key_seq, count;
  float origin[3], step;
  uint16_t *key_q; /* 3 planes of count */
  double *pos;     /* decoded positions, xyz per grain */
  uint8_t *shade, *radius;
  grn_geometry geometry;
  double t;
  size_t cap;
} frame_decoder;

/* Decode one frame; −1 on anything malformed or a delta whose keyframe it has not seen. */
int frame_decode(frame_decoder *d, const uint8_t *buf, size_t len);
void frame_decoder_free(frame_decoder *d);

/* Decode a FRAME_CHAINS message for the decoder's keyframe: up to cap pairs into out (a, b are
 * grain indices). Returns the number of pairs, or −1 on anything malformed. */
int frame_decode_chains(const frame_decoder *d, const uint8_t *buf, size_t len, grn_contact *out,
                        int cap);

#endif
