/* Frame encoder and decoder of the stream (see frame.h and schema/stream.md). */
#include "frame.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* The geometry goes on the wire as the struct's bytes: schema/stream.md gives these offsets. */
_Static_assert(sizeof(grn_geometry) == 208 && offsetof(grn_geometry, box) == 40 &&
                   offsetof(grn_geometry, silo_r) == 80 && offsetof(grn_geometry, plate) == 88 &&
                   offsetof(grn_geometry, dam) == 112 && offsetof(grn_geometry, tool) == 136 &&
                   offsetof(grn_geometry, tilt) == 176 && offsetof(grn_geometry, drum_r) == 184,
               "grn_geometry's layout is part of the stream format");

#define SPEED_FULL 2.0     /* m/s: shade 255 */
#define RADIUS_STEP 0.0005 /* m per radius unit: 0–0.1275 m */
#define GRID_MARGIN 1.0    /* m around the keyframe's grains, room to move before a new key */
/* zstd's fastest level loses nothing here: the residuals are short-range noise that Huffman
 * codes, and matches shorter than 7 bytes in it cost more than the literals they replace
 * (measured on a draining silo: 4 % smaller than level 3 with its default minimum of 5). */
#define ZSTD_LEVEL 1
#define ZSTD_MIN_MATCH 7

struct frame_encoder {
  uint32_t seq, key_seq;
  double key_t, last_t;
  bool have_key, last_key;
  int run; /* frames since the keyframe, itself included, up to FRAME_ORDER_MAX: the next order */
  float origin[3], step;
  int key_n;     /* grains in the keyframe */
  int n, n2;     /* in the last frame (the keyframe's and those that came since), the one before */
  uint32_t kept; /* the last frame's leading grains that are the frame before's, moved on */
  uint32_t *key_id; /* the last frame's ids, ascending: the keyframe's, then those that came */
  uint8_t *rad;     /* the last frame's radius codes */
  uint16_t *key_q;  /* the keyframe's quantized positions, 3 planes */
  /* q[0] the frame being made, q[1] the last one, q[2] the one before; shade likewise */
  uint16_t *q[FRAME_ORDER_MAX + 1];
  uint8_t *shade[2];
  size_t ncap;
  int32_t *slot; /* id -> storage index this frame */
  size_t slotcap;
  uint8_t *raw, *out;
  size_t rawcap, outcap;
  ZSTD_CCtx *zc;
};

frame_encoder *frame_encoder_new(void) {
  frame_encoder *e = calloc(1, sizeof *e);
  if (e && !(e->zc = ZSTD_createCCtx())) {
    free(e);
    return NULL;
  }
  if (e && (ZSTD_isError(ZSTD_CCtx_setParameter(e->zc, ZSTD_c_compressionLevel, ZSTD_LEVEL)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(e->zc, ZSTD_c_minMatch, ZSTD_MIN_MATCH)))) {
    ZSTD_freeCCtx(e->zc);
    free(e);
    return NULL;
  }
  return e;
}

void frame_encoder_free(frame_encoder *e) {
  if (e) {
    ZSTD_freeCCtx(e->zc);
    free(e->key_id);
    free(e->key_q);
    for (int h = 0; h <= FRAME_ORDER_MAX; h++) {
      free(e->q[h]);
    }
    free(e->shade[0]);
    free(e->shade[1]);
    free(e->rad);
    free(e->slot);
    free(e->raw);
    free(e->out);
    free(e);
  }
}

static int reserve(void **p, size_t *cap, size_t need) {
  if (need <= *cap) {
    return 0;
  }
  void *q = realloc(*p, need);
  if (!q) {
    return -1;
  }
  *p = q;
  *cap = need;
  return 0;
}

/* Grows each of `count` per-grain arrays (element sizes `each`) to n grains, contents kept; *cap
 * becomes n once all have grown (those grown before a failure stay so: harmless). */
static int grow_grains(void **const arrays[], const size_t each[], size_t count, size_t *cap,
                       size_t n) {
  for (size_t i = 0; n > *cap && i < count; i++) {
    void *p = realloc(*arrays[i], n * each[i]);
    if (!p) {
      return -1;
    }
    *arrays[i] = p;
  }
  *cap = n > *cap ? n : *cap;
  return 0;
}

static int grow_encoder(frame_encoder *e, size_t n) {
  void **const arrays[] = {(void **)&e->key_id,   (void **)&e->key_q, (void **)&e->q[0],
                           (void **)&e->q[1],     (void **)&e->q[2],  (void **)&e->shade[0],
                           (void **)&e->shade[1], (void **)&e->rad};
  const size_t each[] = {sizeof(uint32_t), 6, 6, 6, 6, 1, 1, 1};
  return grow_grains(arrays, each, sizeof each / sizeof each[0], &e->ncap, n);
}

static inline uint32_t zigzag(int32_t v) {
  return ((uint32_t)v << 1) ^ (v < 0 ? 0xffffffffu : 0u);
}

static inline int32_t unzigzag(uint32_t u) {
  return (int32_t)(u >> 1) ^ -(int32_t)(u & 1u);
}

/* A residual's zigzag code in three byte planes per axis: byte b of axis a's in plane 3b + a, so
 * the low bytes of all three axes (nearly all the information) come first and the high bytes
 * (nearly all zero) after them. */
static inline void put_residual(uint8_t *r, size_t nn, int a, size_t k, int32_t d) {
  const uint32_t z = zigzag(d);
  r[(size_t)a * nn + k] = (uint8_t)z;
  r[(size_t)(3 + a) * nn + k] = (uint8_t)(z >> 8);
  r[(size_t)(6 + a) * nn + k] = (uint8_t)(z >> 16);
}

static inline int32_t get_residual(const uint8_t *r, size_t nn, int a, size_t k) {
  return unzigzag(r[(size_t)a * nn + k] | (uint32_t)r[(size_t)(3 + a) * nn + k] << 8 |
                  (uint32_t)r[(size_t)(6 + a) * nn + k] << 16);
}

/* Compress the raw payload in e->raw behind a header: the frame in e->out, valid until the next
 * call. */
static int finish(frame_encoder *e, uint8_t kind, uint8_t order, uint32_t seq, uint32_t count,
                  size_t raw, double t, const uint8_t **out, size_t *len) {
  const size_t bound = ZSTD_compressBound(raw);
  if (reserve((void **)&e->out, &e->outcap, FRAME_HEADER + bound) != 0) {
    return -1;
  }
  const size_t z = ZSTD_compress2(e->zc, e->out + FRAME_HEADER, bound, e->raw, raw);
  if (ZSTD_isError(z)) {
    return -1;
  }
  frame_header h;
  memset(&h, 0, sizeof h);
  h.magic = FRAME_MAGIC;
  h.version = FRAME_VERSION;
  h.kind = kind;
  h.order = order;
  h.seq = seq;
  h.key_seq = e->key_seq;
  h.count = count;
  h.raw_size = (uint32_t)raw;
  h.payload_size = (uint32_t)z;
  h.t = t;
  memcpy(h.origin, e->origin, sizeof h.origin);
  h.step = e->step;
  h.kept = kind == FRAME_CHAINS ? 0 : e->kept; /* chains count pairs, not grains */
  memcpy(e->out, &h, sizeof h);
  *out = e->out;
  *len = FRAME_HEADER + z;
  return 0;
}

/* The grains that came since the last frame, if they can ride on a frame between keyframes: every
 * grain of the last frame still there, the new ones all after them in id order (so appended at the
 * end, the order still ascending). Their ids go to key_id[e->n ..]; returns how many, or −1. */
static int arrivals(frame_encoder *e, int n, uint32_t max_id) {
  if (n < e->n) {
    return -1;
  }
  for (int k = 0; k < e->n; k++) {
    const uint32_t id = e->key_id[k];
    if (id > max_id || e->slot[id] < 0) {
      return -1;
    }
  }
  int m = 0;
  for (uint32_t id = e->n ? e->key_id[e->n - 1] + 1 : 0; id <= max_id && e->n + m < n; id++) {
    if (e->slot[id] >= 0) {
      e->key_id[e->n + m++] = id;
    }
  }
  return e->n + m == n ? m : -1;
}

/* The new grains' part of a frame, after the residuals and shades of the `base` grains before
 * them: q on x, y, z planes of u16, shade, radius code, 8 bytes each. */
static void put_new(uint8_t *r, const uint16_t *q, size_t n, size_t base, const uint8_t *shade,
                    const uint8_t *rad) {
  const size_t m = n - base;
  for (int a = 0; a < 3; a++) {
    for (size_t k = 0; k < m; k++) {
      memcpy(r + 2 * ((size_t)a * m + k), &q[(size_t)a * n + base + k], 2);
    }
  }
  memcpy(r + 6 * m, shade + base, m);
  memcpy(r + 7 * m, rad + base, m);
}

int frame_encode(frame_encoder *e, const grn_world *w, bool force_key, const uint8_t **out,
                 size_t *len) {
  grn_grains_view g;
  grn_world_grains(w, &g);
  const double *pos = g.pos, *vel = g.vel;
  /* grains in id order: a stable order, unlike storage (renumbered by cell at each rebuild) */
  uint32_t max_id = 0;
  int n = 0;
  for (int i = 0; i < g.count; i++) {
    if (g.alive[i]) {
      max_id = g.id[i] > max_id ? g.id[i] : max_id;
      n++;
    }
  }
  size_t slotcap = e->slotcap;
  if (reserve((void **)&e->slot, &slotcap, sizeof(int32_t) * ((size_t)max_id + 1)) != 0 ||
      grow_encoder(e, (size_t)n + 1) != 0) {
    return -1;
  }
  e->slotcap = slotcap;
  memset(e->slot, 0xff, sizeof(int32_t) * ((size_t)max_id + 1));
  for (int i = 0; i < g.count; i++) {
    if (g.alive[i]) {
      e->slot[g.id[i]] = i;
    }
  }
  const double t = grn_world_time(w);
  /* the same world, moved on since the last frame: a client may draw the grains both frames
   * share between the two (after a restart or a Reset, or with the clock gone back, it may not) */
  const bool goes_on = e->have_key && t > e->last_t;
  /* a frame between keyframes carries the last frame's grains, and new ones after them, all on
   * the keyframe's grid */
  bool key = force_key || !e->have_key || t - e->key_t >= FRAME_KEY_EVERY;
  const int m = key ? -1 : arrivals(e, n, max_id);
  key = key || m < 0;
  for (int k = 0; !key && k < n; k++) {
    const double *p = &pos[3 * e->slot[e->key_id[k]]];
    for (int a = 0; a < 3; a++) {
      const double q = (p[a] - e->origin[a]) / e->step;
      key = key || !(q >= 0.0 && q <= 65535.0);
    }
  }
  const size_t nn = (size_t)n, base = key ? 0 : (size_t)e->n;
  const size_t raw = key ? nn * 8 + sizeof(grn_geometry) : base * 10 + (nn - base) * 8;
  if (reserve((void **)&e->raw, &e->rawcap, raw + 1) != 0) {
    return -1;
  }
  if (key) {
    int k = 0;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    /* the grains the last frame had, in the same places of the order: grains that came after
     * them (a pour's new ones, with higher ids) leave the prefix whole */
    bool same = goes_on;
    e->kept = 0;
    for (uint32_t id = 0; id <= max_id && k < n; id++) {
      if (e->slot[id] >= 0) {
        same = same && k < e->n && e->key_id[k] == id;
        e->kept += same;
        e->key_id[k++] = id;
        for (int a = 0; a < 3; a++) {
          const double v = pos[3 * e->slot[id] + a];
          lo[a] = v < lo[a] ? v : lo[a];
          hi[a] = v > hi[a] ? v : hi[a];
        }
      }
    }
    double ext = 0.0;
    for (int a = 0; a < 3; a++) {
      lo[a] = n ? lo[a] - GRID_MARGIN : 0.0;
      hi[a] = n ? hi[a] + GRID_MARGIN : 1.0;
      ext = hi[a] - lo[a] > ext ? hi[a] - lo[a] : ext;
      e->origin[a] = (float)lo[a];
    }
    /* one uniform step for every axis, rounded up so the largest extent still fits */
    e->step = (float)(ext / 65535.0);
    e->step = nextafterf(e->step, INFINITY);
    e->key_n = n;
    e->key_seq = e->seq;
    e->key_t = t;
    e->have_key = true;
    e->run = 0;
  } else {
    e->kept = goes_on ? (uint32_t)base : 0;
  }
  uint16_t *q = e->q[0];
  uint8_t *shade = e->shade[0];
  for (size_t k = 0; k < nn; k++) {
    const int i = e->slot[e->key_id[k]];
    for (int a = 0; a < 3; a++) {
      q[a * nn + k] = (uint16_t)round((pos[3 * i + a] - e->origin[a]) / e->step);
    }
    const double *v = &vel[3 * i];
    const double speed = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    shade[k] = (uint8_t)(speed >= SPEED_FULL ? 255 : lround(speed / SPEED_FULL * 255.0));
    const long rq = lround(g.radius[i] / RADIUS_STEP);
    e->rad[k] = (uint8_t)(rq > 255 ? 255 : rq);
  }
  /* the raw payload: keyframe = x, y, z planes of u16, shade, radius, geometry; predicted =
   * residual planes of the last frame's grains against the frames before, their shades' change
   * since the last frame, then the new grains whole */
  const int order = key ? 0 : e->run;
  uint8_t *r = e->raw;
  if (key) {
    memcpy(r, q, sizeof *q * 3 * nn); /* the host's byte order is the wire's, little-endian */
    memcpy(e->key_q, q, sizeof *q * 3 * nn);
    memcpy(r + 6 * nn, shade, nn);
    memcpy(r + 7 * nn, e->rad, nn);
    grn_geometry geo;
    grn_world_geometry(w, &geo);
    memcpy(r + 8 * nn, &geo, sizeof geo);
  } else {
    /* q1: the last frame's (its n grains), q2: the one before's (n2): a grain that came in the
     * last frame has no q2 and is predicted where it was */
    const uint16_t *q1 = e->q[1], *q2 = e->q[2];
    const size_t n1 = base, n2 = (size_t)e->n2;
    for (int a = 0; a < 3; a++) {
      for (size_t k = 0; k < n1; k++) {
        const int32_t p = order == 2 && k < n2 ? 2 * (int32_t)q1[(size_t)a * n1 + k] -
                                                     (int32_t)q2[(size_t)a * n2 + k]
                                               : (int32_t)q1[(size_t)a * n1 + k];
        put_residual(r, n1, a, k, (int32_t)q[(size_t)a * nn + k] - p);
      }
    }
    for (size_t k = 0; k < n1; k++) {
      r[9 * n1 + k] = (uint8_t)(shade[k] - e->shade[1][k]);
    }
    put_new(r + 10 * n1, q, nn, n1, shade, e->rad);
  }
  /* this frame becomes the last one, the last one the one before */
  uint16_t *oldest = e->q[FRAME_ORDER_MAX];
  memmove(&e->q[1], &e->q[0], sizeof e->q[0] * FRAME_ORDER_MAX);
  e->q[0] = oldest;
  e->shade[0] = e->shade[1];
  e->shade[1] = shade;
  e->n2 = key ? 0 : e->n;
  e->n = n;
  e->run = e->run < FRAME_ORDER_MAX ? e->run + 1 : FRAME_ORDER_MAX;
  e->last_key = key;
  e->last_t = t;
  if (finish(e, key ? FRAME_KEY : FRAME_PREDICTED, (uint8_t)order, e->seq++, (uint32_t)n, raw, t,
             out, len) != 0) {
    e->have_key = false; /* nobody got this frame: the next one cannot refer to it */
    return -1;
  }
  return 0;
}

void frame_encoder_restart(frame_encoder *e) {
  e->have_key = false;
}

int frame_encode_delta(frame_encoder *e, const uint8_t **out, size_t *len) {
  *out = NULL;
  *len = 0;
  if (!e->have_key || e->seq == 0) {
    return -1;
  }
  if (e->last_key) {
    return 0; /* a keyframe is its own reference */
  }
  /* the keyframe's grains against their keyframe q, then the grains that came since, whole */
  const size_t nn = (size_t)e->n, kn = (size_t)e->key_n, raw = kn * 10 + (nn - kn) * 8;
  if (reserve((void **)&e->raw, &e->rawcap, raw + 1) != 0) {
    return -1;
  }
  const uint16_t *q = e->q[1];
  for (int a = 0; a < 3; a++) {
    for (size_t k = 0; k < kn; k++) {
      put_residual(e->raw, kn, a, k,
                   (int32_t)q[(size_t)a * nn + k] - (int32_t)e->key_q[(size_t)a * kn + k]);
    }
  }
  memcpy(e->raw + 9 * kn, e->shade[1], kn);
  put_new(e->raw + 10 * kn, q, nn, kn, e->shade[1], e->rad);
  return finish(e, FRAME_DELTA, 0, e->seq - 1, (uint32_t)e->n, raw, e->last_t, out, len);
}

static int grow_decoder(frame_decoder *d, size_t n) {
  void **const arrays[] = {(void **)&d->key_q, (void **)&d->q,   (void **)&d->q_prev,
                           (void **)&d->q_new, (void **)&d->pos, (void **)&d->shade,
                           (void **)&d->radius};
  const size_t each[] = {6, 6, 6, 6, 3 * sizeof(double), 1, 1};
  return grow_grains(arrays, each, sizeof each / sizeof each[0], &d->cap, n);
}

int frame_decode(frame_decoder *d, const uint8_t *buf, size_t len) {
  frame_header h;
  if (len < FRAME_HEADER) {
    return -1;
  }
  memcpy(&h, buf, sizeof h);
  if (h.magic != FRAME_MAGIC || h.version != FRAME_VERSION ||
      (h.kind != FRAME_KEY && h.kind != FRAME_DELTA && h.kind != FRAME_PREDICTED) ||
      h.payload_size != len - FRAME_HEADER || h.count > GRN_MAX_GRAINS || h.kept > h.count ||
      !(h.step > 0.0f) ||
      (h.kind == FRAME_PREDICTED ? h.order < 1 || h.order > FRAME_ORDER_MAX : h.order != 0)) {
    return -1;
  }
  const size_t nn = h.count;
  const bool key = h.kind == FRAME_KEY;
  /* the grains coded against frames before: a predicted frame's are the last frame's, a delta's
   * its keyframe's; the grains after them came since, whole */
  const size_t base = key ? 0 : h.kind == FRAME_DELTA ? d->key_count : d->count;
  if (!key && (h.key_seq != d->key_seq || !d->key_q || nn < base)) {
    return -1;
  }
  const size_t want = key ? nn * 8 + sizeof(grn_geometry) : base * 10 + (nn - base) * 8;
  if (h.raw_size != want) {
    return -1;
  }
  /* a predicted frame extrapolates the frames right before it: this decoder must have them all */
  if (h.kind == FRAME_PREDICTED && (d->seq != h.seq - 1 || d->run < h.order)) {
    return -1;
  }
  /* `kept` counts grains of the frame right before: a decoder that has it knows how many it had
   * (step is set by the first keyframe decoded) */
  if (d->step > 0.0f && d->seq == h.seq - 1 && h.kept > d->count) {
    return -1;
  }
  /* the compressed frame must say it holds exactly that much before anything is allocated for it:
   * a few hostile bytes claiming 4 M grains would otherwise cost 160 MB */
  if (ZSTD_getFrameContentSize(buf + FRAME_HEADER, h.payload_size) != (unsigned long long)want) {
    return -1;
  }
  uint8_t *raw = malloc(want + 1);
  if (!raw || grow_decoder(d, nn + 1) != 0) {
    free(raw);
    return -1;
  }
  const size_t got = ZSTD_decompress(raw, want, buf + FRAME_HEADER, h.payload_size);
  if (ZSTD_isError(got) || got != want) {
    free(raw);
    return -1;
  }
  /* the new q into scratch: a grain off the grid refuses the frame and changes nothing */
  uint16_t *q = d->q_new;
  const size_t n1 = d->count, n2 = d->prev_count, m = nn - base;
  const uint8_t *added = raw + 10 * base;
  bool bad = false;
  for (int a = 0; a < 3; a++) {
    if (key) {
      memcpy(q + (size_t)a * nn, raw + 2 * (size_t)a * nn, 2 * nn);
      continue;
    }
    for (size_t k = 0; k < base; k++) {
      int32_t p;
      if (h.kind == FRAME_DELTA) {
        p = d->key_q[(size_t)a * base + k];
      } else if (h.order == 2 && k < n2) {
        p = 2 * (int32_t)d->q[(size_t)a * n1 + k] - (int32_t)d->q_prev[(size_t)a * n2 + k];
      } else {
        p = d->q[(size_t)a * n1 + k];
      }
      const int32_t v = p + get_residual(raw, base, a, k);
      bad = bad || v < 0 || v > 65535;
      q[(size_t)a * nn + k] = (uint16_t)v;
    }
    memcpy(q + (size_t)a * nn + base, added + 2 * (size_t)a * m, 2 * m);
  }
  if (bad) {
    free(raw);
    return -1;
  }
  if (key) {
    memcpy(d->key_q, q, sizeof *q * 3 * nn);
    memcpy(d->shade, raw + 6 * nn, nn);
    memcpy(d->radius, raw + 7 * nn, nn);
    memcpy(&d->geometry, raw + 8 * nn, sizeof d->geometry);
    d->key_seq = h.seq;
    d->key_count = h.count;
    memcpy(d->origin, h.origin, sizeof d->origin);
    d->step = h.step;
    d->run = 1;
  } else {
    for (size_t k = 0; k < base; k++) {
      d->shade[k] =
          h.kind == FRAME_DELTA ? raw[9 * base + k] : (uint8_t)(d->shade[k] + raw[9 * base + k]);
    }
    memcpy(d->shade + base, added + 6 * m, m);
    memcpy(d->radius + base, added + 7 * m, m);
    /* a delta right after the frame before continues the run; after a gap it starts one */
    const bool next = d->seq == h.seq - 1;
    d->run = next && d->run < FRAME_ORDER_MAX ? d->run + 1 : next ? FRAME_ORDER_MAX : 1;
  }
  d->prev_count = key ? 0 : d->count;
  d->count = h.count;
  d->q_new = d->q_prev;
  d->q_prev = d->q;
  d->q = q;
  d->seq = h.seq;
  for (size_t k = 0; k < nn; k++) {
    for (int a = 0; a < 3; a++) {
      d->pos[3 * k + a] = (double)h.origin[a] + (double)q[(size_t)a * nn + k] * (double)h.step;
    }
  }
  d->t = h.t;
  d->kept = h.kept;
  free(raw);
  return 0;
}

void frame_decoder_free(frame_decoder *d) {
  free(d->key_q);
  free(d->q);
  free(d->q_prev);
  free(d->q_new);
  free(d->pos);
  free(d->shade);
  free(d->radius);
  memset(d, 0, sizeof *d);
}

static int index_of(const frame_encoder *e, uint32_t id) {
  int lo = 0, hi = e->n - 1;
  while (lo <= hi) {
    const int mid = (lo + hi) / 2;
    if (e->key_id[mid] == id) {
      return mid;
    }
    if (e->key_id[mid] < id) {
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return -1;
}

int frame_encode_chains(frame_encoder *e, const grn_contact *chains, int n, const uint8_t **out,
                        size_t *len) {
  if (!e->have_key || e->seq == 0) {
    return -1;
  }
  /* planes of a indices, b indices and forces: neighbours in the list share high bytes */
  const size_t nn = (size_t)(n > 0 ? n : 0), raw = 12 * nn;
  if (reserve((void **)&e->raw, &e->rawcap, raw + 1) != 0) {
    return -1;
  }
  size_t kept = 0;
  for (size_t k = 0; k < nn; k++) {
    const int a = index_of(e, chains[k].a), b = index_of(e, chains[k].b);
    if (a < 0 || b < 0) {
      continue; /* not in the frame: cannot happen while frames follow every step */
    }
    const uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
    memcpy(e->raw + 4 * kept, &ua, 4);
    memcpy(e->raw + 4 * (nn + kept), &ub, 4);
    memcpy(e->raw + 4 * (2 * nn + kept), &chains[k].fn, 4);
    kept++;
  }
  if (kept < nn) { /* close the gaps the planes were laid out for */
    memmove(e->raw + 4 * kept, e->raw + 4 * nn, 4 * kept);
    memmove(e->raw + 8 * kept, e->raw + 8 * nn, 4 * kept);
  }
  /* the chains belong to the frame just encoded: its sequence number, no time of their own */
  return finish(e, FRAME_CHAINS, 0, e->seq - 1, (uint32_t)kept, 12 * kept, 0.0, out, len);
}

int frame_decode_chains(const frame_decoder *d, const uint8_t *buf, size_t len, grn_contact *out,
                        int cap) {
  frame_header h;
  if (len < FRAME_HEADER) {
    return -1;
  }
  memcpy(&h, buf, sizeof h);
  if (h.magic != FRAME_MAGIC || h.version != FRAME_VERSION || h.kind != FRAME_CHAINS ||
      h.payload_size != len - FRAME_HEADER || h.key_seq != d->key_seq || !d->key_q ||
      h.count > (uint32_t)cap || (size_t)h.raw_size != 12 * (size_t)h.count) {
    return -1;
  }
  const size_t nn = h.count;
  uint8_t *raw = malloc(12 * nn + 1);
  if (!raw) {
    return -1;
  }
  const size_t got = ZSTD_decompress(raw, 12 * nn, buf + FRAME_HEADER, h.payload_size);
  int rc = ZSTD_isError(got) || got != 12 * nn ? -1 : (int)nn;
  for (size_t k = 0; rc >= 0 && k < nn; k++) {
    memcpy(&out[k].a, raw + 4 * k, 4);
    memcpy(&out[k].b, raw + 4 * (nn + k), 4);
    memcpy(&out[k].fn, raw + 4 * (2 * nn + k), 4);
    if (out[k].a >= d->count || out[k].b >= d->count) {
      rc = -1;
    }
  }
  free(raw);
  return rc;
}
