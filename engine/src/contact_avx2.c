/* AVX2 contact kernel: the scalar contact law of step.c for four touching pairs at a time, with
 * the same IEEE operations in the same order (no FMA), so results are bit-identical to the
 * scalar reference. Branches of the scalar code become computed-both-ways-and-selected lanes. */
#include "contact.h"

#include <string.h>

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
/* cap_to of step.c: scale down to lim where |f| > lim; `capped` reports the lanes */
AVX2 static inline v3 vcap(v3 f, v4d lim, v4l *capped) {
  const v4d f2 = vdot(f, f);
  const v4l m = f2 > lim * lim;
  *capped = m;
  return vpick(m, vscale(f, lim / vsqrt(f2)), f);
}

AVX2 static inline v3 load3(const grn_vec3 *v, const int idx[4]) {
  return (v3){{v[idx[0]].x, v[idx[1]].x, v[idx[2]].x, v[idx[3]].x},
              {v[idx[0]].y, v[idx[1]].y, v[idx[2]].y, v[idx[3]].y},
              {v[idx[0]].z, v[idx[1]].z, v[idx[2]].z, v[idx[3]].z}};
}

AVX2 static inline void store_row(float dst[3], v3 v, int k) {
  dst[0] = (float)v.x[k];
  dst[1] = (float)v.y[k];
  dst[2] = (float)v.z[k];
}

AVX2 double grn__contacts_avx2(const pair_ctx *c, const int32_t *list, int count) {
  const v4d kn = splat(GRN_KN), cn = splat(c->cn), ct = splat(c->ct), h = splat(GRN_H);
  const v4d mkt = splat(-GRN_KT), inv_mkt = splat(-1.0 / GRN_KT), zero = splat(0.0);
  const v4d mu = splat(c->mu), coh = splat(c->coh);
  v4d omax = zero;
  for (int g = 0; g < count; g += 4) {
    int a[4], b[4], p[4], slot[4];
    for (int k = 0; k < 4; k++) {
      a[k] = list[3 * (g + k)];
      p[k] = list[3 * (g + k) + 1];
      slot[k] = list[3 * (g + k) + 2];
      b[k] = c->pb[p[k]];
    }
    /* geometry */
    const v3 d = vsub(load3(c->pos, b), load3(c->pos, a));
    const v4d ra = {c->rad[a[0]], c->rad[a[1]], c->rad[a[2]], c->rad[a[3]]};
    const v4d rb = {c->rad[b[0]], c->rad[b[1]], c->rad[b[2]], c->rad[b[3]]};
    const v4d sum = ra + rb;
    const v4d dist = vsqrt(vdot(d, d));
    const v3 n = vscale(d, splat(1.0) / (dist + splat(1e-300)));
    const v4d over = sum - dist;
    omax = pick(over > omax, over, omax);
    /* normal */
    const v3 wa = load3(c->spin, a), wb = load3(c->spin, b);
    const v3 rv = vsub(load3(c->vel, b), load3(c->vel, a));
    const v4d vn = vdot(rv, n);
    v4d fn = kn * over - cn * vn;
    fn = pick(fn > zero, fn, zero);
    /* tangential spring */
    const v3 s = vadd(vscale(wa, ra), vscale(wb, rb));
    const v3 vt = vsub(vsub(rv, vscale(n, vn)), vcross(s, n));
    v3 u;
    for (int k = 0; k < 4; k++) {
      const grn_hist *hk = &c->hist[p[k]];
      u.x[k] = hk->u[0];
      u.y[k] = hk->u[1];
      u.z[k] = hk->u[2];
    }
    u = vadd(vsub(u, vscale(n, vdot(u, n))), vscale(vt, h));
    const v4d lim = mu * fn;
    v4l slid, unused;
    const v3 ft0 = vscale(u, mkt);
    const v3 ft_slide = vcap(ft0, lim, &slid);
    const v3 ft_stick = vcap(vsub(ft0, vscale(vt, ct)), lim, &unused);
    const v3 ft = vpick(slid, ft_slide, ft_stick);
    u = vpick(slid, vscale(ft_slide, inv_mkt), u);
    /* force on b and torques */
    const v3 f = vadd(vscale(n, fn - coh), ft);
    const v3 cr = vcross(n, ft);
    v3 ta = vscale(cr, -ra), tb = vscale(cr, -rb);
    v3 th = {zero, zero, zero};
    if (c->mur > 0.0) {
      v3 wr = vsub(wa, wb);
      wr = vsub(wr, vscale(n, vdot(wr, n)));
      for (int k = 0; k < 4; k++) {
        const grn_hist *hk = &c->hist[p[k]];
        th.x[k] = hk->th[0];
        th.y[k] = hk->th[1];
        th.z[k] = hk->th[2];
      }
      th = vadd(vsub(th, vscale(n, vdot(th, n))), vscale(wr, h));
      const v3 m0 = vscale(th, splat(-c->kr));
      const v4d mlim = splat(c->mur) * (ra * rb / sum) * fn;
      v4l rolled;
      const v3 m_roll = vcap(m0, mlim, &rolled);
      const v3 m_stick = vcap(vsub(m0, vscale(wr, splat(c->cr))), mlim, &unused);
      const v3 mom = vpick(rolled, m_roll, m_stick);
      th = vpick(rolled, vscale(m_roll, splat(-1.0 / c->kr)), th);
      ta = vadd(ta, mom);
      tb = vsub(tb, mom);
    }
    for (int k = 0; k < 4; k++) {
      const int q = p[k];
      c->pfn[q] = fn[k] > 1e-6 ? (float)fn[k] : 1e-6f;
      grn_hist *hk = &c->hist[q];
      hk->u[0] = (float)u.x[k];
      hk->u[1] = (float)u.y[k];
      hk->u[2] = (float)u.z[k];
      if (c->mur > 0.0) {
        hk->th[0] = (float)th.x[k];
        hk->th[1] = (float)th.y[k];
        hk->th[2] = (float)th.z[k];
      }
      grn_force_row *row = &c->table[slot[k]];
      store_row(row->f, f, k);
      store_row(row->ta, ta, k);
      store_row(row->tb, tb, k);
    }
  }
  double o = 0.0;
  for (int k = 0; k < 4; k++) {
    o = omax[k] > o ? omax[k] : o;
  }
  return o;
}

#else

bool grn__simd_available(void) {
  return false;
}

double grn__contacts_avx2(const pair_ctx *c, const int32_t *list, int count) {
  (void)c;
  (void)list;
  (void)count;
  return 0.0;
}

#endif
