/* The near list (grn_near): the pairs of the pair list that can touch before the next refresh,
 * which the fused and near steps walk instead of the whole list. */
#include "internal.h"

#include <math.h>
#include <string.h>

/* A listed pair apart by more than its reach plus both grains' allowances cannot touch, nor feel
 * a bridge, before one of the two has moved its allowance from where the refresh found it: until
 * then it would be found apart, with zero history and a zero row, at every step. Its row adds
 * nothing to the sums (adding +0 leaves a sum unchanged to the bit), so the fused step may leave
 * it out. Each grain's allowance is a distance, checked as the grain moves (finish_one), so the
 * list is refreshed when one grain has actually gone that far, not when one grain is briefly
 * fast. Allowances cover K steps (NEAR_STEPS, or fewer when the pair list is rebuilt sooner, as
 * in a flow whose fastest grains bring the rebuild on every few steps): the grains below the
 * 95th percentile of speed are slow and share one (their top speed·H·K), the others are fast and
 * get their own (a quarter over their speed, plus what gravity adds in K steps) — so one
 * rattler, or a stream of falling grains, neither widens every margin nor keeps all its pairs.
 * The slow allowance never goes below NEAR_MIN/2 (a bed at rest would otherwise refresh for
 * nothing), and the list is the whole pair list once that would reach past the skin. */
#define NEAR_STEPS 24
#define NEAR_MIN 0.002 /* m */
#define NEAR_FAST 0.05 /* at most this fraction of the grains is slow-marked fast */

bool grn__near_stale(const grn_world *w) {
  return !w->gran.near.valid || w->gran.near.gap != grn__reach_gap(w) || w->gran.near.over > 0;
}

static int grow_near(grn_world *w, int need) {
  void **const arrays[] = {(void **)&w->gran.near.b, (void **)&w->gran.near.p,
                           (void **)&w->gran.near.a, (void **)&w->gran.near.rref};
  const size_t each[] = {sizeof(int32_t), sizeof(int32_t), sizeof(int32_t), sizeof(int32_t)};
  return grn__regrow(w, arrays, each, 4, &w->gran.near.cap, need);
}

/* Whether listed pair p of an owner at pa is near: it touches (or holds a bridge), or lies within
 * both grains' reach and allowances (ra: the owner's radius, the reach gap and its allowance). */
static inline bool is_near(const grn_world *w, grn_vec3 pa, double ra, int p) {
  const int b = w->pairs.pb[p];
  const double dx = w->pos[b].x - pa.x, dy = w->pos[b].y - pa.y, dz = w->pos[b].z - pa.z;
  const double r = ra + w->rad[b] + (double)w->gran.near.nu[b];
  return (w->pairs.pfn[p] != 0.0f) | (dx * dx + dy * dy + dz * dz < r * r);
}

static inline double near_reach(const grn_world *w, int a) {
  return w->rad[a] + grn__reach_gap(w) + (double)w->gran.near.nu[a];
}

/* Near pairs of owner a: marks them in near[] (indexed by pair) and counts them. */
static inline int near_mark(const grn_world *w, int a, uint8_t *near) {
  const grn_vec3 pa = w->pos[a];
  const double ra = near_reach(w, a);
  int k = 0;
  for (int p = w->pairs.pstart[a]; p < w->pairs.pstart[a + 1]; p++) {
    near[p] = is_near(w, pa, ra, p);
    k += near[p];
  }
  return k;
}

/* The refresh's figures, once either way of packing has made the list. */
static int near_done(grn_world *w, int nm, int span, double margin, int nfast) {
  w->gran.near.m = nm;
  w->gran.near.span = span;
  w->gran.near.margin = margin;
  w->gran.near.fast = nfast;
  w->gran.near.over = 0;
  w->gran.near.refreshes++;
  w->gran.near.gap = grn__reach_gap(w);
  w->gran.near.valid = true;
  return GRN_OK;
}

#if defined(__x86_64__) && defined(GRN_SIMD)
#include <immintrin.h>

/* near_one_pass's rows four pairs at a time, with the same double operations in the same order
 * (no FMA), so the same list: the kept lanes packed to the front and stored whole (the list has
 * room for four entries past its pairs). Scalar loads, not gathers: this host's gathers are
 * microcoded. Returns the number kept; *span_out the span. */
__attribute__((target("avx2"))) static int near_rows_avx2(grn_world *w, int *span_out) {
  const int n = w->n;
  const int32_t *restrict pstart = w->pairs.pstart, *restrict pb = w->pairs.pb;
  const grn_vec3 *restrict pos = w->pos;
  const double *restrict rad = w->rad;
  const float *restrict nu = w->gran.near.nu, *restrict pfn = w->pairs.pfn;
  int32_t *restrict ob = w->gran.near.b, *restrict op = w->gran.near.p,
                    *restrict oa = w->gran.near.a, *restrict start = w->gran.near.start;
  const double gap = grn__reach_gap(w);
  const __m128i lane = _mm_setr_epi32(0, 1, 2, 3), bit = _mm_setr_epi32(1, 2, 4, 8);
  __m128i span = _mm_setzero_si128();
  int q = 0;
  start[0] = 0;
  for (int a = 0; a < n; a++) {
    const __m256d xa = _mm256_set1_pd(pos[a].x), ya = _mm256_set1_pd(pos[a].y),
                  za = _mm256_set1_pd(pos[a].z), ra = _mm256_set1_pd(rad[a] + gap + (double)nu[a]);
    const __m128i va = _mm_set1_epi32(a);
    const int p1 = pstart[a + 1];
    for (int p = pstart[a]; p < p1; p += 4) {
      const __m128i live = _mm_cmpgt_epi32(_mm_set1_epi32(p1 - p), lane);
      const __m128i b = _mm_maskload_epi32(pb + p, live); /* grain 0 in lanes past the row */
      const int b0 = _mm_extract_epi32(b, 0), b1 = _mm_extract_epi32(b, 1),
                b2 = _mm_extract_epi32(b, 2), b3 = _mm_extract_epi32(b, 3);
      /* x, y, z and the next grain's x of each (the array has a spare vector), transposed */
      const __m256d r0 = _mm256_loadu_pd(&pos[b0].x), r1 = _mm256_loadu_pd(&pos[b1].x),
                    r2 = _mm256_loadu_pd(&pos[b2].x), r3 = _mm256_loadu_pd(&pos[b3].x);
      const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
      const __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
      const __m256d dx = _mm256_sub_pd(_mm256_permute2f128_pd(t0, t2, 0x20), xa),
                    dy = _mm256_sub_pd(_mm256_permute2f128_pd(t1, t3, 0x20), ya),
                    dz = _mm256_sub_pd(_mm256_permute2f128_pd(t0, t2, 0x31), za);
      const __m256d rr =
          _mm256_add_pd(_mm256_add_pd(ra, _mm256_setr_pd(rad[b0], rad[b1], rad[b2], rad[b3])),
                        _mm256_cvtps_pd(_mm_setr_ps(nu[b0], nu[b1], nu[b2], nu[b3])));
      const __m256d d2 = _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy)),
                                       _mm256_mul_pd(dz, dz));
      /* NaN != 0 holds, as in the scalar test */
      const __m128 held = _mm_cmp_ps(_mm_maskload_ps(pfn + p, live), _mm_setzero_ps(), _CMP_NEQ_UQ);
      const unsigned keep =
          ((unsigned)_mm256_movemask_pd(_mm256_cmp_pd(d2, _mm256_mul_pd(rr, rr), _CMP_LT_OQ)) |
           (unsigned)_mm_movemask_ps(held)) &
          (unsigned)_mm_movemask_ps(_mm_castsi128_ps(live));
      const __m128i pick = _mm_loadu_si128((const __m128i *)grn__packed_lanes[keep]);
      _mm_storeu_si128((__m128i *)(ob + q),
                       _mm_castps_si128(_mm_permutevar_ps(_mm_castsi128_ps(b), pick)));
      _mm_storeu_si128((__m128i *)(op + q), _mm_add_epi32(pick, _mm_set1_epi32(p)));
      _mm_storeu_si128((__m128i *)(oa + q), va);
      const __m128i kept = _mm_cmpeq_epi32(_mm_and_si128(_mm_set1_epi32((int)keep), bit), bit);
      span = _mm_max_epi32(span, _mm_and_si128(kept, _mm_abs_epi32(_mm_sub_epi32(b, va))));
      q += __builtin_popcount(keep);
    }
    start[a + 1] = q;
  }
  span = _mm_max_epi32(span, _mm_shuffle_epi32(span, 0x4e));
  span = _mm_max_epi32(span, _mm_shuffle_epi32(span, 0xb1));
  *span_out = _mm_cvtsi128_si32(span);
  return q;
}
#endif

/* One thread: each owner's near pairs marked and packed in the same pass (no marks kept between
 * two passes over the whole list); the list has room for every listed pair and four more. The
 * same list as the two passes make. */
static int near_one_pass(grn_world *w, double margin, int nfast) {
  const int n = w->n;
  if (grow_near(w, w->pairs.m + 4) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  int q = 0, span = 0;
#if defined(__x86_64__) && defined(GRN_SIMD)
  if (w->opt.simd) {
    q = near_rows_avx2(w, &span);
    return near_done(w, q, span, margin, nfast);
  }
#endif
  w->gran.near.start[0] = 0;
  for (int a = 0; a < n; a++) {
    const grn_vec3 pa = w->pos[a];
    const double ra = near_reach(w, a);
    for (int p = w->pairs.pstart[a]; p < w->pairs.pstart[a + 1]; p++) {
      /* written always, kept by advancing (the list has room for four more than every pair) */
      const int b = w->pairs.pb[p], d = b > a ? b - a : a - b;
      const bool keep = is_near(w, pa, ra, p);
      w->gran.near.b[q] = b;
      w->gran.near.p[q] = p;
      w->gran.near.a[q] = a;
      span = keep && d > span ? d : span;
      q += keep;
    }
    w->gran.near.start[a + 1] = q;
  }
  return near_done(w, q, span, margin, nfast);
}

int grn__near_refresh(grn_world *w) {
  w->gran.near.valid = false;
  w->gran.fused.on = false;
  const int n = w->n, nthreads = w->opt.threads;
  (void)nthreads;
  /* speeds by powers of two of v², to find the speed that all but NEAR_FAST of the grains keep
   * below without sorting */
  int hist[64] = {0}, alive = 0;
  for (int i = 0; i < n; i++) {
    const double v2 =
        w->vel[i].x * w->vel[i].x + w->vel[i].y * w->vel[i].y + w->vel[i].z * w->vel[i].z;
    /* v2 < 2^e: frexp's exponent, read from the bits (a libm call a grain was a tenth of the
     * refresh); zero, subnormals and NaN land in the lowest bin, as before */
    uint64_t bits = 0;
    memcpy(&bits, &v2, sizeof bits);
    int e = v2 > 0.0 ? (int)((bits >> 52) & 0x7ff) - 1022 : -40;
    e = e < -40 ? -40 : (e > 23 ? 23 : e);
    if (w->flags[i] & GRN_F_ALIVE) {
      hist[e + 40]++;
      alive++;
    }
  }
  int top = 63, above = 0;
  while (top > 0 && above + hist[top] <= (int)(NEAR_FAST * alive)) {
    above += hist[top--];
  }
  /* the next rebuild is likely as far off as the last was from the one before */
  int steps = NEAR_STEPS;
  if (w->pairs.rebuild_every > 0 && w->pairs.rebuild_every < NEAR_STEPS) {
    steps = (int)w->pairs.rebuild_every;
  }
  const double hk = GRN_H * steps;
  /* all but `above` grains have v² < 2^(top − 40) */
  const double vslow = sqrt(ldexp(1.0, top - 40));
  double margin = 2.0 * vslow * hk;
  margin = margin > NEAR_MIN ? margin : NEAR_MIN;
  const double vcut = margin / (2.0 * hk);
  const bool whole = !(margin < w->pairs.skin - grn__reach_gap(w));
  int nfast = 0;
  for (int i = 0; i < n; i++) {
    const double v2 =
        w->vel[i].x * w->vel[i].x + w->vel[i].y * w->vel[i].y + w->vel[i].z * w->vel[i].z;
    w->gran.near.ref[i] = w->pos[i];
    if (whole) {
      w->gran.near.nu[i] = INFINITY;
    } else if (v2 < vcut * vcut) {
      w->gran.near.nu[i] = (float)(0.5 * margin);
    } else {
      w->gran.near.nu[i] = (float)((1.25 * sqrt(v2) + GRN_G * hk) * hk);
      nfast++;
    }
  }
  if (nthreads == 1 && !whole) {
    return near_one_pass(w, margin, nfast);
  }
  if (grn__scratch(w, (size_t)w->pairs.m + 1) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  uint8_t *near = w->pairs.scr.scratch;
#pragma omp parallel for schedule(static) num_threads(nthreads)
  for (int a = 0; a < n; a++) {
    w->gran.near.start[a + 1] =
        whole ? w->pairs.pstart[a + 1] - w->pairs.pstart[a] : near_mark(w, a, near);
  }
  w->gran.near.start[0] = 0;
  for (int a = 0; a < n; a++) {
    w->gran.near.start[a + 1] += w->gran.near.start[a];
  }
  const int nm = w->gran.near.start[n];
  if (grow_near(w, nm) != GRN_OK) {
    return GRN_E_NOMEM;
  }
  int span = 0;
#pragma omp parallel for schedule(static) num_threads(nthreads) reduction(max : span)
  for (int a = 0; a < n; a++) {
    int q = w->gran.near.start[a];
    const int qend = w->gran.near.start[a + 1];
    for (int p = w->pairs.pstart[a]; p < w->pairs.pstart[a + 1] && q < qend; p++) {
      /* written always, kept by advancing: no write goes past the owner's own entries */
      const int b = w->pairs.pb[p], d = b > a ? b - a : a - b;
      const bool keep = whole || near[p];
      w->gran.near.b[q] = b;
      w->gran.near.p[q] = p;
      w->gran.near.a[q] = a;
      span = keep && d > span ? d : span;
      q += keep;
    }
  }

  return near_done(w, nm, span, whole ? INFINITY : margin, nfast);
}

/* Reference lists of the near pairs, once the fused step is planned (or not): the two-pass near
 * step gathers through them; the fused step keeps its own for the grains at thread boundaries. */
void grn__near_refs(grn_world *w) {
  if (!w->gran.fused.on) {
    grn__refs_of(w->n, w->gran.near.m, w->gran.near.b, w->gran.near.rstart, w->gran.near.rref,
                 w->pairs.scr.newidx);
  }
}

void grn__near_free(grn_world *w) {
  grn_near *nr = &w->gran.near;
  const size_t cap = (size_t)w->cap, m = (size_t)nr->cap;
  grn__free(w, nr->nu, sizeof(float) * cap);
  grn__free(w, nr->ref, sizeof(grn_vec3) * cap);
  grn__free(w, nr->start, sizeof(int32_t) * (cap + 1));
  grn__free(w, nr->rstart, sizeof(int32_t) * (cap + 1));
  grn__free(w, nr->b, sizeof(int32_t) * m);
  grn__free(w, nr->p, sizeof(int32_t) * m);
  grn__free(w, nr->a, sizeof(int32_t) * m);
  grn__free(w, nr->rref, sizeof(int32_t) * m);
}
