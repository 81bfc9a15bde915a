/* Frame encoder and decoder of the stream (see frame.h and schema/stream.md). */
#include "frame.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* The geometry goes on the wire as the struct's bytes: schema/stream.md gives these offsets. */
_Static_assert(sizeof(grn_geometry) == 184 && offsetof(grn_geometry, box) == 40 &&
                   offsetof(grn_geometry, silo_r) == 80 && offsetof(grn_geometry, plate) == 88 &&
                   offsetof(grn_geometry, dam) == 112 && offsetof(grn_geometry, tool) == 136 &&
                   offsetof(grn_geometry, tilt) == 176,
               "grn_geometry's layout is part of the stream format");

#define SPEED_FULL 2.0     /* m/s: shade 255 */
#define RADIUS_STEP 0.0005 /* m per radius unit: 0–0.1275 m */
#define GRID_MARGIN 1.0    /* m around the keyframe's grains, room to move before a new key */

struct frame_encoder {
  uint32_t seq, key_seq;
  double key_t;
  bool have_key;
  float origin[3], step;
  int n;            /* grains in the keyframe */
  uint32_t *key_id; /* their ids, ascending */
  uint16_t *key_q;  /* their quantized positions, 3 planes */
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
  return e;
}

void frame_encoder_free(frame_encoder *e) {
  if (e) {
    ZSTD_freeCCtx(e->zc);
    free(e->key_id);
    free(e->key_q);
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

static inline uint32_t zigzag(int32_t v) {
  return ((uint32_t)v << 1) ^ (v < 0 ? 0xffffffffu : 0u);
}

static inline int32_t unzigzag(uint32_t u) {
  return (int32_t)(u >> 1) ^ -(int32_t)(u & 1u);
}

/* Compress the raw payload in e->raw behind a header: the frame in e->out, valid until the next
 * call. */
static int finish(frame_encoder *e, uint8_t kind, uint32_t seq, uint32_t count, size_t raw,
                  double t, const uint8_t **out, size_t *len) {
  const size_t bound = ZSTD_compressBound(raw);
  if (reserve((void **)&e->out, &e->outcap, FRAME_HEADER + bound) != 0) {
    return -1;
  }
  const size_t z = ZSTD_compressCCtx(e->zc, e->out + FRAME_HEADER, bound, e->raw, raw, 3);
  if (ZSTD_isError(z)) {
    return -1;
  }
  frame_header h;
  memset(&h, 0, sizeof h);
  h.magic = FRAME_MAGIC;
  h.version = FRAME_VERSION;
  h.kind = kind;
  h.seq = seq;
  h.key_seq = e->key_seq;
  h.count = count;
  h.raw_size = (uint32_t)raw;
  h.payload_size = (uint32_t)z;
  h.t = t;
  memcpy(h.origin, e->origin, sizeof h.origin);
  h.step = e->step;
  memcpy(e->out, &h, sizeof h);
  *out = e->out;
  *len = FRAME_HEADER + z;
  return 0;
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
  if (reserve((void **)&e->slot, &slotcap, sizeof(int32_t) * ((size_t)max_id + 1)) != 0) {
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
  /* a delta needs the same grains as the keyframe, all still on its grid */
  bool key = force_key || !e->have_key || n != e->n || t - e->key_t >= FRAME_KEY_EVERY;
  for (int k = 0; !key && k < n; k++) {
    const uint32_t id = e->key_id[k];
    if (id > max_id || e->slot[id] < 0) {
      key = true;
      break;
    }
    const double *p = &pos[3 * e->slot[id]];
    for (int a = 0; a < 3; a++) {
      const double q = (p[a] - e->origin[a]) / e->step;
      key = key || !(q >= 0.0 && q <= 65535.0);
    }
  }
  const size_t nn = (size_t)n;
  size_t ncap = e->ncap, qcap = e->ncap;
  if (key) {
    if (reserve((void **)&e->key_id, &ncap, sizeof(uint32_t) * (nn + 1)) != 0 ||
        reserve((void **)&e->key_q, &qcap, sizeof(uint16_t) * 3 * (nn + 1)) != 0) {
      return -1;
    }
    e->ncap = ncap < qcap ? ncap : qcap;
    int k = 0;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t id = 0; id <= max_id && k < n; id++) {
      if (e->slot[id] >= 0) {
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
    e->n = n;
    e->key_seq = e->seq;
    e->key_t = t;
    e->have_key = true;
  }
  /* the raw payload: keyframe = x, y, z planes of u16, shade, radius, geometry;
   * delta = three byte planes of zigzag(q − q_key) per axis, then shade */
  const size_t raw = key ? nn * 8 + sizeof(grn_geometry) : nn * 10;
  if (reserve((void **)&e->raw, &e->rawcap, raw + 1) != 0) {
    return -1;
  }
  uint8_t *r = e->raw;
  for (size_t k = 0; k < nn; k++) {
    const int i = e->slot[e->key_id[k]];
    for (int a = 0; a < 3; a++) {
      const double q = round((pos[3 * i + a] - e->origin[a]) / e->step);
      const uint16_t u = (uint16_t)q;
      if (key) {
        e->key_q[a * nn + k] = u;
        memcpy(r + 2 * (a * nn + k), &u, 2);
      } else {
        const uint32_t z = zigzag((int32_t)u - (int32_t)e->key_q[a * nn + k]);
        r[(3 * a + 0) * nn + k] = (uint8_t)z;
        r[(3 * a + 1) * nn + k] = (uint8_t)(z >> 8);
        r[(3 * a + 2) * nn + k] = (uint8_t)(z >> 16);
      }
    }
    const double *v = &vel[3 * i];
    const double speed = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    r[(key ? 6 : 9) * nn + k] =
        (uint8_t)(speed >= SPEED_FULL ? 255 : lround(speed / SPEED_FULL * 255.0));
    if (key) {
      const long rq = lround(g.radius[i] / RADIUS_STEP);
      r[7 * nn + k] = (uint8_t)(rq > 255 ? 255 : rq);
    }
  }
  if (key) {
    grn_geometry geo;
    grn_world_geometry(w, &geo);
    memcpy(r + 8 * nn, &geo, sizeof geo);
  }
  return finish(e, key ? FRAME_KEY : FRAME_DELTA, e->seq++, (uint32_t)n, raw, t, out, len);
}

static int grow_decoder(frame_decoder *d, size_t n) {
  if (n <= d->cap) {
    return 0;
  }
  uint16_t *q = realloc(d->key_q, sizeof *q * 3 * n);
  if (q) {
    d->key_q = q;
  }
  double *p = realloc(d->pos, sizeof *p * 3 * n);
  if (p) {
    d->pos = p;
  }
  uint8_t *s = realloc(d->shade, n);
  if (s) {
    d->shade = s;
  }
  uint8_t *r = realloc(d->radius, n);
  if (r) {
    d->radius = r;
  }
  if (!q || !p || !s || !r) {
    return -1;
  }
  d->cap = n;
  return 0;
}

int frame_decode(frame_decoder *d, const uint8_t *buf, size_t len) {
  frame_header h;
  if (len < FRAME_HEADER) {
    return -1;
  }
  memcpy(&h, buf, sizeof h);
  if (h.magic != FRAME_MAGIC || h.version != FRAME_VERSION ||
      (h.kind != FRAME_KEY && h.kind != FRAME_DELTA) || h.payload_size != len - FRAME_HEADER ||
      h.count > GRN_MAX_GRAINS || !(h.step > 0.0f)) {
    return -1;
  }
  const size_t nn = h.count;
  const bool key = h.kind == FRAME_KEY;
  const size_t want = key ? nn * 8 + sizeof(grn_geometry) : nn * 10;
  if (h.raw_size != want ||
      (!key && (h.key_seq != d->key_seq || h.count != d->count || !d->key_q))) {
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
  for (size_t k = 0; k < nn; k++) {
    for (int a = 0; a < 3; a++) {
      uint16_t u;
      if (key) {
        memcpy(&u, raw + 2 * (a * nn + k), 2);
        d->key_q[a * nn + k] = u;
      } else {
        const uint32_t z = raw[(3 * a) * nn + k] | (uint32_t)raw[(3 * a + 1) * nn + k] << 8 |
                           (uint32_t)raw[(3 * a + 2) * nn + k] << 16;
        u = (uint16_t)(d->key_q[a * nn + k] + unzigzag(z));
      }
      d->pos[3 * k + a] = (double)h.origin[a] + (double)u * (double)h.step;
    }
    d->shade[k] = raw[(key ? 6 : 9) * nn + k];
    if (key) {
      d->radius[k] = raw[7 * nn + k];
    }
  }
  if (key) {
    memcpy(&d->geometry, raw + 8 * nn, sizeof d->geometry);
    d->key_seq = h.seq;
    d->count = h.count;
    memcpy(d->origin, h.origin, sizeof d->origin);
    d->step = h.step;
  }
  d->t = h.t;
  free(raw);
  return 0;
}

void frame_decoder_free(frame_decoder *d) {
  free(d->key_q);
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
  return finish(e, FRAME_CHAINS, e->seq - 1, (uint32_t)kept, 12 * kept, 0.0, out, len);
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
