/* AVX2 contact kernel: the scalar contact law of contact_law.h for four touching pairs at a time,
 * with the same IEEE operations in the same order (no FMA), so results are bit-identical to the
 * scalar reference. Branches of the scalar code become computed-both-ways-and-selected lanes; in a
 * flow a sieve first picks the touching pairs, so that the law runs on full groups of them. */
#include "contact.h"

#include <string.h>

const int32_t grn__packed_lanes[16][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}, {1, 0, 0, 0}, {0, 1, 0, 0},
                                          {2, 0, 0, 0}, {0, 2, 0, 0}, {1, 2, 0, 0}, {0, 1, 2, 0},
                                          {3, 0, 0, 0}, {0, 3, 0, 0}, {1, 3, 0, 0}, {0, 1, 3, 0},
                                          {2, 3, 0, 0}, {0, 2, 3, 0}, {1, 2, 3, 0}, {0, 1, 2, 3}};

#if defined(__x86_64__) && defined(GRN_SIMD)
#include <immintrin.h>

typedef double v4d __attribute__((vector_size(32)));
typedef long long v4l __attribute__((vector_size(32)));

#define AVX2 __attribute__((target("avx2")))

bool grn__simd_available(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

typedef struct v3 {
  v4d x, y, z;
} v3;

AVX2 static inline v4d splat(double s) {
  return (v4d){s, s, s, s};
}
AVX2 static inline v4d vsqrt(v4d a) {
  return (v4d)_mm256_sqrt_pd((__m256d)a);
}
/* a > b ? a : b in each lane, as the scalar code's conditional (NaN or equal: b) */
AVX2 static inline v4d above(v4d a, v4d b) {
  return (v4d)_mm256_max_pd((__m256d)a, (__m256d)b);
}
/* lanes of `yes` where mask is set, else `no` */
AVX2 static inline v4d pick(v4l mask, v4d yes, v4d no) {
  return (v4d)(((v4l)yes & mask) | ((v4l)no & ~mask));
}
AVX2 static inline v3 vsub(v3 a, v3 b) {
  return (v3){a.x - b.x, a.y - b.y, a.z - b.z};
}
AVX2 static inline v3 vadd(v3 a, v3 b) {
  return (v3){a.x + b.x, a.y + b.y, a.z + b.z};
}
AVX2 static inline v3 vscale(v3 a, v4d s) {
  return (v3){a.x * s, a.y * s, a.z * s};
}
AVX2 static inline v4d vdot(v3 a, v3 b) {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}
AVX2 static inline v3 vcross(v3 a, v3 b) {
  return (v3){a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
AVX2 static inline v3 vpick(v4l m, v3 a, v3 b) {
  return (v3){pick(m, a.x, b.x), pick(m, a.y, b.y), pick(m, a.z, b.z)};
}
/* The two branches of contact_law.h's Coulomb-type limit at once: `slip` is the spring alone (k·x),
 * `stick` the spring with its dashpot. Lanes where the spring alone exceeds lim slip: scaled down
 * to lim, and their spring's state *spring (u or theta) made again from the result times `back`.
 * The others take the dashpot sum, scaled down only if it exceeds lim. Only a group where one of
 * `lanes` (those whose result is kept) is capped needs any of this; a slipping lane is capped too.
 * In a resting bed almost none is, and in an avalanche three groups in four are not: they skip
 * the square root and division (the slowest instructions of the kernel) and every blend. */
AVX2 static inline v3 vlimit(v3 slip, v3 stick, v4d lim, v4l lanes, v4d back, v3 *spring) {
  const v4d lim2 = lim * lim, s2 = vdot(slip, slip), t2 = vdot(stick, stick);
  const v4l slid = s2 > lim2, over = (slid | (t2 > lim2)) & lanes;
  if (_mm256_movemask_pd((__m256d)over) == 0) {
    return stick;
  }
  v3 f = vpick(slid, slip, stick);
  f = vpick(over, vscale(f, lim / vsqrt(pick(slid, s2, t2))), f);
  *spring = vpick(slid, vscale(f, back), *spring);
  return f;
}

/* x, y, z of four grains: a 32-byte load at each (x, y, z and the next grain's x, which the
 * arrays are padded for), then a 4×4 transpose. */
AVX2 static inline v3 transpose3(__m256d r0, __m256d r1, __m256d r2, __m256d r3) {
  const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
  const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
  return (v3){(v4d)_mm256_permute2f128_pd(t0, t2, 0x20), (v4d)_mm256_permute2f128_pd(t1, t3, 0x20),
              (v4d)_mm256_permute2f128_pd(t0, t2, 0x31)};
}

/* v[b] − v[a] of four pairs: subtracted as loaded (x, y, z and a spare lane), then transposed
 * once instead of once for each side. */
AVX2 static inline v3 diff3(const grn_vec3 *v, const int b[4], const int a[4]) {
  __m256d r[4];
  for (int k = 0; k < 4; k++) {
    r[k] = _mm256_sub_pd(_mm256_loadu_pd(&v[b[k]].x), _mm256_loadu_pd(&v[a[k]].x));
  }
  return transpose3(r[0], r[1], r[2], r[3]);
}

/* The spins' share of the contact point's velocity, wa·ra + wb·rb, and (roll) the relative spin
 * wa − wb of four pairs. Without roll s alone is made as loaded and then transposed; with it
 * both spins are transposed, which takes fewer shuffles than transposing s and wr. */
AVX2 static inline void spins(const pair_ctx *c, const int a[4], const int b[4], v4d ra, v4d rb,
                              bool roll, v3 *s, v3 *wr) {
  __m256d sk[4];
  if (roll) {
    __m256d ak[4], bk[4];
    for (int k = 0; k < 4; k++) {
      ak[k] = _mm256_loadu_pd(&c->spin[a[k]].x);
      bk[k] = _mm256_loadu_pd(&c->spin[b[k]].x);
    }
    const v3 wa = transpose3(ak[0], ak[1], ak[2], ak[3]),
             wb = transpose3(bk[0], bk[1], bk[2], bk[3]);
    *s = vadd(vscale(wa, ra), vscale(wb, rb));
    *wr = vsub(wa, wb);
    return;
  }
  for (int k = 0; k < 4; k++) {
    const __m256d wa = _mm256_loadu_pd(&c->spin[a[k]].x), wb = _mm256_loadu_pd(&c->spin[b[k]].x);
    sk[k] = _mm256_add_pd(_mm256_mul_pd(wa, _mm256_broadcast_sd(&c->rad[a[k]])),
                          _mm256_mul_pd(wb, _mm256_broadcast_sd(&c->rad[b[k]])));
  }
  *s = transpose3(sk[0], sk[1], sk[2], sk[3]);
}

/* Four pairs' history as doubles: the tangential spring u and (roll) the rolling angle theta.
 * Transposed as floats, where one 4×4 transpose gives u and theta's first component. */
AVX2 static inline void load_hist(const grn_hist *h, const int idx[4], bool roll, v3 *u, v3 *th) {
  __m128 x0 = _mm_loadu_ps(h[idx[0]].u), x1 = _mm_loadu_ps(h[idx[1]].u); /* u0 u1 u2 th0 */
  __m128 x2 = _mm_loadu_ps(h[idx[2]].u), x3 = _mm_loadu_ps(h[idx[3]].u);
  _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
  *u = (v3){(v4d)_mm256_cvtps_pd(x0), (v4d)_mm256_cvtps_pd(x1), (v4d)_mm256_cvtps_pd(x2)};
  if (roll) {
    __m128 m[4]; /* th1 th2 of each pair */
    for (int k = 0; k < 4; k++) {
      m[k] = _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)&h[idx[k]].th[1]));
    }
    const __m128 lo = _mm_unpacklo_ps(m[0], m[1]), hi = _mm_unpacklo_ps(m[2], m[3]);
    *th = (v3){(v4d)_mm256_cvtps_pd(x3), (v4d)_mm256_cvtps_pd(_mm_movelh_ps(lo, hi)),
               (v4d)_mm256_cvtps_pd(_mm_movehl_ps(hi, lo))};
  }
}

/* four doubles to four floats, each rounded as a scalar (float) cast would */
AVX2 static inline __m128 f32(v4d v) {
  return _mm256_cvtpd_ps((__m256d)v);
}

/* The set lanes of a 4-bit mask as four indices, packed to the front. */
AVX2 static inline __m128i lanes_of(unsigned mask) {
  return _mm_loadu_si128((const __m128i *)grn__packed_lanes[mask]);
}

/* How contacts() finds lane k of group g: (owner, pair, slot) triples; the pairs q0 + g + k of a
 * range; or the range's pairs q0 + sel[g + k] that a sieve found certainly touching. */
enum lanes_from { TRIPLES, RANGE, PICKED };

__attribute__((always_inline)) AVX2 static inline double
contacts(const pair_ctx *c, const int32_t *src, int32_t q0, int32_t base, int count, int *touching,
         int32_t *slow, int *nslow, enum lanes_from from, const int32_t *sel, int32_t *act,
         int *nact) {
  int nt = 0;
  const v4d kn = splat(GRN_KN), cn = splat(c->cn), ct = splat(c->ct), h = splat(GRN_H);
  const v4d mkt = splat(-GRN_KT), inv_mkt = splat(-1.0 / GRN_KT), zero = splat(0.0);
  const v4d mu = splat(c->mu), coh = splat(c->coh);
  v4d omax = zero;
  int tally = 0, ns = 0;
  const bool roll = c->mur > 0.0;
  for (int g = 0; g < count; g += 4) {
    int a[4], b[4], p[4], slot[4];
    for (int k = 0; k < 4; k++) {
      if (from != TRIPLES) { /* src: the owner of each pair */
        p[k] = q0 + (from == PICKED ? sel[g + k] : g + k);
        a[k] = src[p[k]];
        slot[k] = base + p[k];
      } else { /* src: (owner, pair, slot) triples */
        a[k] = src[3 * (g + k)];
        p[k] = src[3 * (g + k) + 1];
        slot[k] = src[3 * (g + k) + 2];
      }
      b[k] = c->pb[p[k]];
      p[k] = hist_of(c, p[k]); /* from here on p indexes history and pfn */
    }
    /* geometry */
    const v3 d = diff3(c->pos, b, a);
    const v4d ra = {c->rad[a[0]], c->rad[a[1]], c->rad[a[2]], c->rad[a[3]]};
    const v4d rb = {c->rad[b[0]], c->rad[b[1]], c->rad[b[2]], c->rad[b[3]]};
    const v4d sum = ra + rb;
    const v4d d2 = vdot(d, d);
    /* certainly touching: d2 < rs²·(1 − 1e-9) means sqrt(d2) < rs·(1 − 5e-10), so the scalar law's
     * overlap rs − sqrt(d2) is > 0 too, whatever the rounding; apart: beyond the reach, with no
     * history. Anything else (parting, a liquid bridge, within rounding of first touch) goes to
     * the scalar law: its lanes here store nothing but a row the scalar law writes again. */
    v4l sure = {-1, -1, -1, -1};
    unsigned ms = 15u;
    if (from != PICKED) { /* picked lanes were sieved: all certainly touching */
      const v4d reach = sum + splat(c->gap);
      sure = d2 < sum * sum * splat(1.0 - 1e-9);
      const v4l far = d2 >= reach * reach;
      const v4d fv = {c->pfn[p[0]], c->pfn[p[1]], c->pfn[p[2]], c->pfn[p[3]]};
      const v4l odd = (~sure & ~far) | (far & (fv != zero));
      ms = (unsigned)_mm256_movemask_pd((__m256d)sure);
      const unsigned mo = (unsigned)_mm256_movemask_pd((__m256d)odd);
      tally += __builtin_popcount(ms);
      for (unsigned bits = mo; bits; bits &= bits - 1u) {
        slow[ns++] = g + __builtin_ctz(bits);
      }
      if (act) { /* the lanes whose row may be other than zero, in order, without a branch */
        _mm_storeu_si128((__m128i *)&act[nt],
                         _mm_add_epi32(lanes_of(ms | mo), _mm_set1_epi32(q0 + g)));
        nt += __builtin_popcount(ms | mo);
      }
    }
    const v4d dist = vsqrt(d2);
    const v3 n = vscale(d, splat(1.0) / (dist + splat(1e-300)));
    const v4d over = sum - dist;
    omax = from == PICKED ? above(over, omax) : pick(sure & (over > omax), over, omax);
    /* normal */
    v3 s, wr = {zero, zero, zero};
    spins(c, a, b, ra, rb, roll, &s, &wr);
    const v3 rv = diff3(c->vel, b, a);
    const v4d vn = vdot(rv, n);
    v4d fn = kn * over - cn * vn;
    fn = above(fn, zero);
    /* tangential spring */
    const v3 vt = vsub(vsub(rv, vscale(n, vn)), vcross(s, n));
    v3 u, th = {zero, zero, zero};
    load_hist(c->hist, p, roll, &u, &th);
    u = vadd(vsub(u, vscale(n, vdot(u, n))), vscale(vt, h));
    const v4d lim = mu * fn;
    const v3 ft0 = vscale(u, mkt);
    const v3 ft = vlimit(ft0, vsub(ft0, vscale(vt, ct)), lim, sure, inv_mkt, &u);
    /* force on b and torques */
    v3 f = vadd(vscale(n, fn - coh), ft);
    const v3 cr = vcross(n, ft);
    v3 ta = vscale(cr, -ra), tb = vscale(cr, -rb);
    if (roll) {
      wr = vsub(wr, vscale(n, vdot(wr, n)));
      th = vadd(vsub(th, vscale(n, vdot(th, n))), vscale(wr, h));
      const v3 m0 = vscale(th, splat(-c->kr));
      const v4d mlim = splat(c->mur) * (ra * rb / sum) * fn;
      const v3 mom =
          vlimit(m0, vsub(m0, vscale(wr, splat(c->cr))), mlim, sure, splat(-1.0 / c->kr), &th);
      ta = vadd(ta, mom);
      tb = vsub(tb, mom);
    }
    /* the scalar law's fn > 1e-6 ? (float)fn : 1e-6f, four at a time: (float)1e-6 is 1e-6f */
    const __m128 pf = f32(above(fn, splat(1e-6)));
    for (unsigned bits = ms; bits; bits &= bits - 1u) {
      const int k = __builtin_ctz(bits);
      c->pfn[p[k]] = pf[k];
    }
    /* rows: nine floats per pair, written as one transposed 8-float block and one float; lanes
     * that are not touching write a zero row (apart pairs must read as zero) */
    f = vpick(sure, f, (v3){zero, zero, zero});
    ta = vpick(sure, ta, (v3){zero, zero, zero});
    tb = vpick(sure, tb, (v3){zero, zero, zero});
    const __m256 y0 = _mm256_set_m128(f32(ta.y), f32(f.x)),
                 y1 = _mm256_set_m128(f32(ta.z), f32(f.y));
    const __m256 y2 = _mm256_set_m128(f32(tb.x), f32(f.z)),
                 y3 = _mm256_set_m128(f32(tb.y), f32(ta.x));
    /* both 4×4 transposes at once, one in each half: row k's first eight floats in ys[k] */
    const __m256 t0 = _mm256_unpacklo_ps(y0, y1), t1 = _mm256_unpackhi_ps(y0, y1);
    const __m256 t2 = _mm256_unpacklo_ps(y2, y3), t3 = _mm256_unpackhi_ps(y2, y3);
    const __m256 ys[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xee),
                          _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xee)};
    const __m128 tbz = f32(tb.z);
    for (int k = 0; k < 4; k++) {
      float *row = (float *)&c->table[slot[k]];
      _mm256_storeu_ps(row, ys[k]);
      row[8] = tbz[k];
    }
    /* history: u and, with rolling resistance, theta */
    __m128 h0 = f32(u.x), h1 = f32(u.y), h2 = f32(u.z), h3 = f32(th.x);
    _MM_TRANSPOSE4_PS(h0, h1, h2, h3);
    const __m128 hs[4] = {h0, h1, h2, h3};
    if (roll) {
      const __m128 y = f32(th.y), z = f32(th.z), lo = _mm_unpacklo_ps(y, z),
                   hi = _mm_unpackhi_ps(y, z);
      const __m128 yz[4] = {lo, _mm_movehl_ps(lo, lo), hi, _mm_movehl_ps(hi, hi)}; /* th1 th2 */
      for (unsigned bits = ms; bits; bits &= bits - 1u) {
        const int k = __builtin_ctz(bits);
        _mm_storeu_ps(c->hist[p[k]].u, hs[k]); /* u0 u1 u2 th0 */
        _mm_storel_pi((__m64 *)&c->hist[p[k]].th[1], yz[k]);
      }
    } else { /* u alone: theta keeps what it had */
      for (unsigned bits = ms; bits; bits &= bits - 1u) {
        const int k = __builtin_ctz(bits);
        c->hist[p[k]].u[0] = hs[k][0];
        c->hist[p[k]].u[1] = hs[k][1];
        c->hist[p[k]].u[2] = hs[k][2];
      }
    }
  }
  double o = 0.0;
  for (int k = 0; k < 4; k++) {
    o = omax[k] > o ? omax[k] : o;
  }
  *touching += tally;
  if (nslow) {
    *nslow = ns;
  }
  if (nact) {
    *nact = nt;
  }
  return o;
}

/* The geometry alone of the pairs q0 .. q0 + count − 1 (count a multiple of 4), classified as
 * contacts() classifies its lanes: certainly touching ones go to sel[], doubtful ones to slow[]
 * (offsets from q0), and apart ones without history get their zero row here if c->keep_zero.
 * Returns how many were picked. */
AVX2 static int sieve(const pair_ctx *c, const int32_t *owner, int32_t q0, int32_t base, int count,
                      int32_t *sel, int32_t *slow, int *nslow, int32_t *act, int *nact) {
  const v4d zero = splat(0.0);
  int np = 0, ns = 0, nt = 0;
  for (int g = 0; g < count; g += 4) {
    int a[4], b[4], hq[4];
    for (int k = 0; k < 4; k++) {
      a[k] = owner[q0 + g + k];
      b[k] = c->pb[q0 + g + k];
      hq[k] = hist_of(c, q0 + g + k);
    }
    const v3 d = diff3(c->pos, b, a);
    const v4d ra = {c->rad[a[0]], c->rad[a[1]], c->rad[a[2]], c->rad[a[3]]};
    const v4d rb = {c->rad[b[0]], c->rad[b[1]], c->rad[b[2]], c->rad[b[3]]};
    const v4d sum = ra + rb, d2 = vdot(d, d), reach = sum + splat(c->gap);
    const v4l sure = d2 < sum * sum * splat(1.0 - 1e-9);
    const v4l far = d2 >= reach * reach;
    const v4d fv = {c->pfn[hq[0]], c->pfn[hq[1]], c->pfn[hq[2]], c->pfn[hq[3]]};
    const v4l odd = (~sure & ~far) | (far & (fv != zero));
    const unsigned ms = (unsigned)_mm256_movemask_pd((__m256d)sure);
    const unsigned mo = (unsigned)_mm256_movemask_pd((__m256d)odd);
    /* without a branch per lane, which a flow's mix of touching and apart pairs mispredicts */
    const __m128i lane = _mm_set1_epi32(g);
    _mm_storeu_si128((__m128i *)&sel[np], _mm_add_epi32(lanes_of(ms), lane));
    np += __builtin_popcount(ms);
    _mm_storeu_si128((__m128i *)&act[nt], _mm_add_epi32(lanes_of(ms | mo), _mm_set1_epi32(q0 + g)));
    nt += __builtin_popcount(ms | mo);
    for (unsigned bits = mo; bits; bits &= bits - 1u) {
      slow[ns++] = g + __builtin_ctz(bits);
    }
    for (unsigned bits = c->keep_zero ? ~(ms | mo) & 15u : 0u; bits; bits &= bits - 1u) {
      float *row = (float *)&c->table[base + q0 + g + __builtin_ctz(bits)];
      _mm_storeu_ps(row, _mm_setzero_ps());
      _mm_storeu_ps(row + 4, _mm_setzero_ps());
      row[8] = 0.0f;
    }
  }
  *nslow = ns;
  *nact = nt;
  return np;
}

AVX2 double grn__contacts_avx2(const pair_ctx *c, const int32_t *list, int count, int *touching,
                               int32_t *slow, int *nslow) {
  return contacts(c, list, 0, 0, count, touching, slow, nslow, TRIPLES, NULL, NULL, NULL);
}

AVX2 double grn__contacts_range_avx2(const pair_ctx *c, const int32_t *owner, int32_t q0,
                                     int32_t base, int count, int *touching, int32_t *slow,
                                     int *nslow, int32_t *act, int *nact) {
  if (!c->sieve) {
    return contacts(c, owner, q0, base, count, touching, slow, nslow, RANGE, NULL, act, nact);
  }
  /* the law for the touching pairs only, four at a time; the last group is filled up with copies
   * of its last pair, which compute and store the same values again */
  int32_t sel[GRN_KERNEL_MAX + 3];
  int np = sieve(c, owner, q0, base, count, sel, slow, nslow, act, nact);
  *touching += np;
  if (np == 0) {
    return 0.0;
  }
  for (; np & 3; np++) {
    sel[np] = sel[np - 1];
  }
  int unused = 0;
  return contacts(c, owner, q0, base, np, &unused, NULL, NULL, PICKED, sel, NULL, NULL);
}

#else

bool grn__simd_available(void) {
  return false;
}

double grn__contacts_avx2(const pair_ctx *c, const int32_t *list, int count, int *touching,
                          int32_t *slow, int *nslow) {
  (void)c;
  (void)list;
  (void)count;
  (void)touching;
  (void)slow;
  *nslow = 0;
  return 0.0;
}

double grn__contacts_range_avx2(const pair_ctx *c, const int32_t *owner, int32_t q0, int32_t base,
                                int count, int *touching, int32_t *slow, int *nslow, int32_t *act,
                                int *nact) {
  (void)c;
  (void)act;
  *nact = 0;
  (void)owner;
  (void)q0;
  (void)base;
  (void)count;
  (void)touching;
  (void)slow;
  *nslow = 0;
  return 0.0;
}

#endif
