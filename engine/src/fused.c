/* The fused granular step and its planning: forces and sums in one sweep over the near list. */
#include "step.h"

#include <string.h>

/* ---- fused step ----------------------------------------------------------------------------
 * Forces and sums in one sweep over the near list, so that no table of rows is kept. Grains are
 * in cell order, so every pair (a, b) has |a − b| ≤ S (the span, measured at each refresh). The
 * sweep makes the rows of a block of owners, then adds each row, in pair order, to the running
 * sums of both its grains: that is the order in which every grain sums its rows (sum_rows), so the
 * sums are the gather's to the bit, while a row is used once, in cache, the moment it is made.
 * Grain g is complete once the owners up to g + S are done (no later owner has g as a partner):
 * it is then integrated and its running sum cleared for the next step. Threads take contiguous
 * chunks; a grain within S of a chunk boundary B has rows from two threads: first those of owners
 * before B, then those of owners from B on, in pair order. The earlier thread carries its running
 * sums up to B + S; the later one keeps the rows of its owners [B, B + 2S) in a band. After a
 * barrier each such grain continues the earlier thread's sum with the band's rows, in the same
 * order, so its bits are the one-thread sweep's. (Bands once kept the rows of owners on both
 * sides, twice the memory: 9 MB of a 100 000-grain lattice settling on two threads.) */
#define GATHER_BLOCK 64
#define FUSED_KEEP_MAX ((size_t)1 << 20) /* bytes of buffers a rebuild keeps */

static int32_t chunk_lo(const grn_world *w, int t) {
  return (int32_t)((int64_t)w->n * t / w->opt.threads);
}

/* The rows kept at a chunk boundary for its gather: pairs [p0, p1) at off + (p − p0) of the row
 * buffer (p0 == p1: none). */
typedef struct band {
  int32_t p0, p1, off;
} band;

static band band_of(const grn_world *w, int k);

/* Band k's reference list: for each grain B − S + j within S of its boundary B, starts[j] ..
 * starts[j + 1] index the pairs of the band (owners from B on) where it is the partner, in pair
 * order. It lies after the lists of the bands before it. */
static int32_t *band_refs_at(const grn_world *w, int k, int32_t **refs) {
  const band bd = band_of(w, k);
  const int s2 = 2 * w->gran.fused.span;
  int32_t *starts = w->gran.fused.bref + (size_t)(k - 1) * (size_t)(s2 + 1) +
                    (size_t)(bd.off - w->gran.fused.ring_rows * w->opt.threads);
  *refs = starts + s2 + 1;
  return starts;
}

/* Make band k's reference list (a counting sort of its pairs by partner). */
static void band_refs(grn_world *w, int k) {
  int32_t *refs = NULL;
  const band bd = band_of(w, k);
  int32_t *starts = band_refs_at(w, k, &refs);
  const int s2 = 2 * w->gran.fused.span, lo = chunk_lo(w, k) - w->gran.fused.span;
  const int32_t *nb = w->gran.near.b;
  memset(starts, 0, sizeof(int32_t) * (size_t)(s2 + 1));
  for (int p = bd.p0; p < bd.p1; p++) {
    const unsigned j = (unsigned)(nb[p] - lo);
    if (j < (unsigned)s2) {
      starts[j + 1]++;
    }
  }
  for (int j = 0; j < s2; j++) {
    starts[j + 1] += starts[j];
  }
  for (int p = bd.p0; p < bd.p1; p++) {
    const unsigned j = (unsigned)(nb[p] - lo);
    if (j < (unsigned)s2) {
      refs[starts[j]++] = p;
    }
  }
  for (int j = s2; j > 0; j--) {
    starts[j] = starts[j - 1];
  }
  starts[0] = 0;
}

/* Plan the fused step after a refresh; fused stays off when chunks are too small for bands. */
int grn__plan_fused(grn_world *w) {
  w->gran.fused.on = false;
  const int n = w->n, nt = w->opt.threads;
  const int span = w->gran.near.span;
  /* with threads, each chunk needs room for its bands; one thread has no bands, and its ring of
   * sums may be as long as the world (a flow's fast grains have partners far off in cell order) */
  if (w->gran.fused.off || n < 64 || (nt > 1 && n / nt < 4 * span + 2 * GATHER_BLOCK)) {
    return GRN_OK;
  }
  /* each thread's block buffer: the rows of any GATHER_BLOCK consecutive owners */
  int block = 64;
  for (int a = 0; a < n; a++) {
    const int e = a + GATHER_BLOCK;
    const int k = w->gran.near.start[e < n ? e : n] - w->gran.near.start[a];
    block = k > block ? k : block;
  }
  /* a band at each inner chunk boundary B: the rows of owners [B, B + 2S) */
  int64_t rows = (int64_t)block * nt;
  for (int k = 1; k < nt; k++) {
    const int b = chunk_lo(w, k);
    rows += w->gran.near.start[b + 2 * span] - w->gran.near.start[b];
  }
  if (rows > INT32_MAX / 2) {
    return GRN_OK;
  }
  if (rows > w->gran.fused.ringcap) {
    const int64_t want = rows + rows / 4;
    grn_force_row *q = grn__alloc(w, sizeof(grn_force_row) * (size_t)want);
    if (!q) {
      return GRN_OK; /* the reference passes need no rows kept: carry on without fusing */
    }
    grn__free(w, w->gran.fused.ring, sizeof(grn_force_row) * (size_t)w->gran.fused.ringcap);
    w->gran.fused.ring = q;
    w->gran.fused.ringcap = (int)want;
  }
  if ((int64_t)block * nt > w->gran.fused.actcap) {
    const int want = block * nt;
    int32_t *a = grn__alloc(w, sizeof(int32_t) * (size_t)want);
    if (!a) {
      return GRN_OK;
    }
    grn__free(w, w->gran.fused.act, sizeof(int32_t) * (size_t)w->gran.fused.actcap);
    w->gran.fused.act = a;
    w->gran.fused.actcap = want;
  }
  /* running sums, in a ring per thread: grain g's sum is in use from owner g − S (its first row)
   * to g + S + GATHER_BLOCK (its integration), so a ring wider than that never holds two grains
   * at once, and it stays in cache where a sum per grain would stream through memory. Zero
   * between steps: the sweep clears each sum once its grain is integrated. */
  int sums = 64;
  while (sums < 2 * span + 2 * GATHER_BLOCK + 64) {
    sums *= 2;
  }
  if ((int64_t)sums * nt > w->gran.fused.fsumcap) {
    const int want = sums * nt;
    double *f = grn__alloc(w, 6 * sizeof(double) * (size_t)want);
    if (!f) {
      return GRN_OK;
    }
    grn__free(w, w->gran.fused.fsum, 6 * sizeof(double) * (size_t)w->gran.fused.fsumcap);
    w->gran.fused.fsum = f;
    w->gran.fused.fsumcap = want;
  }
  memset(w->gran.fused.fsum, 0, 6 * sizeof(double) * (size_t)w->gran.fused.fsumcap);
  w->gran.fused.fsum_mask = sums - 1;
  w->gran.fused.span = span;
  w->gran.fused.ring_rows = block;
  /* the bands' reference lists: 2S + 1 starts and at most a row each */
  const int64_t brefs = rows - (int64_t)block * nt + (int64_t)(nt - 1) * (2 * span + 1);
  if (brefs > w->gran.fused.brefcap) {
    const int64_t want = brefs + brefs / 4;
    int32_t *r = grn__alloc(w, sizeof(int32_t) * (size_t)want);
    if (!r) {
      return GRN_OK;
    }
    grn__free(w, w->gran.fused.bref, sizeof(int32_t) * (size_t)w->gran.fused.brefcap);
    w->gran.fused.bref = r;
    w->gran.fused.brefcap = (int)want;
  }
  for (int k = 1; k < nt; k++) {
    band_refs(w, k);
  }
  w->gran.fused.on = true;
  return GRN_OK;
}

/* Band k's rows: its pair range and where it starts in the row buffer. */
static band band_of(const grn_world *w, int k) {
  int32_t o = w->gran.fused.ring_rows * w->opt.threads;
  for (int j = 1; j < k; j++) {
    const int b = chunk_lo(w, j);
    o += w->gran.near.start[b + 2 * w->gran.fused.span] - w->gran.near.start[b];
  }
  const int b = chunk_lo(w, k);
  return (band){w->gran.near.start[b], w->gran.near.start[b + 2 * w->gran.fused.span], o};
}

/* Copy the rows of owners [a0, a1) (in the block buffer at base + q) that the band keeps. */
static void keep_band(const grain_ctx *c, const grn_force_row *rows, int32_t base, int a0, int a1,
                      const band *bd, grn_force_row *keep) {
  const int q0 = c->pstart[a0], q1 = c->pstart[a1];
  const int lo = q0 > bd->p0 ? q0 : bd->p0, hi = q1 < bd->p1 ? q1 : bd->p1;
  if (lo < hi) {
    memcpy(&keep[bd->off + (lo - bd->p0)], &rows[base + lo],
           sizeof(grn_force_row) * (size_t)(hi - lo));
  }
}

/* A row's share for its partner's running sum: the force and the partner's torque. */
static inline void to_partner(double *restrict sb, const grn_force_row *row) {
  sb[0] += row->f[0];
  sb[1] += row->f[1];
  sb[2] += row->f[2];
  sb[3] += row->tb[0];
  sb[4] += row->tb[1];
  sb[5] += row->tb[2];
}

/* Add the rows of owners [a0, a1) (in the block buffer at base + q) to the running sums of the
 * grains in [ilo, ihi), in pair order, and copy those the band keeps. */
static void add_block(const grain_ctx *c, const int32_t *restrict nb, const grn_force_row *rows,
                      int32_t base, double *restrict fsum, int32_t fm, int a0, int a1, int ilo,
                      int ihi, const band *bd, grn_force_row *keep) {
  for (int a = a0; a < a1; a++) {
    const int p0 = c->pstart[a], p1 = c->pstart[a + 1];
    if (a >= ilo && a < ihi) {
      double *sa = &fsum[6 * (size_t)(a & fm)];
      double fx = sa[0], fy = sa[1], fz = sa[2], tx = sa[3], ty = sa[4], tz = sa[5];
      for (int p = p0; p < p1; p++) {
        const grn_force_row *row = &rows[base + p];
        fx -= row->f[0];
        fy -= row->f[1];
        fz -= row->f[2];
        tx += row->ta[0];
        ty += row->ta[1];
        tz += row->ta[2];
      }
      sa[0] = fx;
      sa[1] = fy;
      sa[2] = fz;
      sa[3] = tx;
      sa[4] = ty;
      sa[5] = tz;
    }
    for (int p = p0; p < p1; p++) {
      const int b = nb[p];
      if (b >= ilo && b < ihi) {
        const grn_force_row *row = &rows[base + p];
        to_partner(&fsum[6 * (size_t)(b & fm)], row);
      }
    }
  }
  keep_band(c, rows, base, a0, a1, bd, keep);
}

#if defined(__x86_64__) && defined(GRN_SIMD)
#include <immintrin.h>

/* add_block for a block the kernel took (which it only does where AVX2 runs it): only the pairs
 * act[0 .. nact − 1] (in pair order) have rows other than zero, and adding a zero row leaves a sum
 * unchanged to the bit (a sum that starts at +0 and only adds and subtracts never becomes −0), so
 * they alone are added. Each grain still gets its rows in pair order: pair by pair, owner and
 * partner alike. Each sum takes its row four and two at a time, every lane with the scalar
 * operation (the owner subtracts f and adds ta, the partner adds f and tb), so the bits are
 * add_block's. */
__attribute__((target("avx2"))) static void
add_active(const grain_ctx *c, const int32_t *restrict na, const int32_t *restrict nb,
           const grn_force_row *rows, int32_t base, double *restrict fsum, int32_t fm,
           const int32_t *act, int nact, int ilo, int ihi, int a0, int a1, const band *bd,
           grn_force_row *keep) {
  for (int k = 0; k < nact; k++) {
    const int q = act[k], a = na[q], b = nb[q];
    const float *row = (const float *)&rows[base + q];
    const __m128 f_ta0 = _mm_loadu_ps(row); /* f0 f1 f2 ta0 */
    if (a >= ilo && a < ihi) {
      double *sa = &fsum[6 * (size_t)(a & fm)];
      const __m256d x = _mm256_cvtps_pd(f_ta0), s = _mm256_loadu_pd(sa);
      _mm256_storeu_pd(sa, _mm256_blend_pd(_mm256_sub_pd(s, x), _mm256_add_pd(s, x), 8));
      const __m128d t = _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(row + 4))));
      _mm_storeu_pd(sa + 4, _mm_add_pd(_mm_loadu_pd(sa + 4), t));
    }
    if (b >= ilo && b < ihi) {
      double *sb = &fsum[6 * (size_t)(b & fm)];
      const __m128 f_tb0 = _mm_insert_ps(f_ta0, _mm_load_ss(row + 6), 0x30); /* f0 f1 f2 tb0 */
      _mm256_storeu_pd(sb, _mm256_add_pd(_mm256_loadu_pd(sb), _mm256_cvtps_pd(f_tb0)));
      const __m128d t = _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(row + 7))));
      _mm_storeu_pd(sb + 4, _mm_add_pd(_mm_loadu_pd(sb + 4), t));
    }
  }
  keep_band(c, rows, base, a0, a1, bd, keep);
}
#endif

/* Continue grain i's running sum si (the earlier chunk's rows) with its rows of pairs from q0 on,
 * in pair order (sum_rows' order, so the bits are the one-thread sweep's). Pair p's row is at
 * rows[d + p]; ref[0 .. nref − 1] are the pairs from q0 on where i is the partner. */
static void continue_sum(const grain_ctx *c, const grn_force_row *rows, int32_t d, int32_t q0,
                         const int32_t *ref, int nref, double *restrict si, int i) {
  const int p0 = c->pstart[i], p1 = c->pstart[i + 1];
  int q = 0;
  for (; q < nref && ref[q] < p0; q++) {
    to_partner(si, &rows[d + ref[q]]);
  }
  for (int p = p0 > q0 ? p0 : q0; p < p1; p++) {
    const grn_force_row *row = &rows[d + p];
    si[0] -= row->f[0];
    si[1] -= row->f[1];
    si[2] -= row->f[2];
    si[3] += row->ta[0];
    si[4] += row->ta[1];
    si[5] += row->ta[2];
  }
  for (; q < nref; q++) {
    to_partner(si, &rows[d + ref[q]]);
  }
}

/* Integrate grain g from its running sum, and clear the sum for the next step. */
static inline void finish_sum(const grain_ctx *c, double *restrict fsum, int32_t fm, int g,
                              const grn_world *w, pass_sums *sum) {
  double *sg = &fsum[6 * (size_t)(g & fm)];
  finish_one(c, g, sg, w, sum);
  memset(sg, 0, 6 * sizeof(double));
}

void grn__step_fused(grn_world *w) {
  const pair_ctx pc = grn__pair_ctx_of(w, w->gran.fused.ring, true);
  const grain_ctx gc = grn__grain_ctx_of(w, true);
  const int32_t *restrict pstart = w->gran.near.start;
  const int nt = w->opt.threads, span = w->gran.fused.span;
  const bool simd = w->opt.simd;
  const int32_t fm = w->gran.fused.fsum_mask;
  double omax = 0.0, vm2 = 0.0;
  int touching = 0, moving = 0, count = 0, killed = 0, over = 0, moved = 0;
  w->pairs.table_valid = false; /* the full table is not maintained here */
  w->gran.fused.sieved += pc.sieve && simd;
#pragma omp parallel num_threads(nt) reduction(max : omax, vm2)                       \
    reduction(+ : touching, moving, count, killed, over, moved)
  {
    const pair_ctx lc = pc;
    const grain_ctx lg = gc;
    pass_sums sum = {0};
    /* phase 1: each chunk sweeps its owners and integrates its interior grains behind them */
#pragma omp for schedule(static, 1)
    for (int t = 0; t < nt; t++) {
      const int lo = chunk_lo(w, t), hi = chunk_lo(w, t + 1);
      /* the band of its first owners; sums from lo + S (earlier grains continue the previous
       * chunk's sums) to the end of its partners, hi + S, of which it integrates those to hi − S */
      const band bd = t > 0 ? band_of(w, t) : (band){0, 0, 0};
      const int ilo = t > 0 ? lo + span : lo, ihi = t < nt - 1 ? hi + span : hi;
      const int fin = t < nt - 1 ? hi - span : hi;
      double *fsum = w->gran.fused.fsum + 6 * (size_t)(fm + 1) * (size_t)t;
      int g = ilo;
      for (int a0 = lo; a0 < hi; a0 += GATHER_BLOCK) {
        const int a1 = a0 + GATHER_BLOCK < hi ? a0 + GATHER_BLOCK : hi;
        const int32_t base = t * w->gran.fused.ring_rows - pstart[a0];
        int32_t *act = w->gran.fused.act + (size_t)t * (size_t)w->gran.fused.ring_rows;
        const int nact =
            grn__range_forces(&lc, w->gran.near.a, pstart[a0], pstart[a1], base, simd, &sum, act);
        bool added = false; /* the kernel took the block (nact ≥ 0) only where AVX2 runs */
#if defined(__x86_64__) && defined(GRN_SIMD)
        if (nact >= 0) {
          add_active(&lg, w->gran.near.a, w->gran.near.b, w->gran.fused.ring, base, fsum, fm, act,
                     nact, ilo, ihi, a0, a1, &bd, w->gran.fused.ring);
          added = true;
        }
#else
        (void)nact;
#endif
        if (!added) {
          add_block(&lg, w->gran.near.b, w->gran.fused.ring, base, fsum, fm, a0, a1, ilo, ihi, &bd,
                    w->gran.fused.ring);
        }
        for (; g < fin && g + span < a1; g++) {
          finish_sum(&lg, fsum, fm, g, w, &sum);
        }
      }
      for (; g < fin; g++) {
        finish_sum(&lg, fsum, fm, g, w, &sum);
      }
    }
    /* phase 2 (after the loop's barrier): grains within S of each inner boundary */
#pragma omp for schedule(static, 1)
    for (int k = 1; k < nt; k++) {
      int32_t *refs = NULL;
      const band bd = band_of(w, k);
      const int32_t *starts = band_refs_at(w, k, &refs);
      double *fsum = w->gran.fused.fsum + 6 * (size_t)(fm + 1) * (size_t)(k - 1);
      const int lo = chunk_lo(w, k) - span;
      for (int j = 0; j < 2 * span; j++) {
        const int i = lo + j;
        continue_sum(&lg, w->gran.fused.ring, bd.off - bd.p0, bd.p0, refs + starts[j],
                     starts[j + 1] - starts[j], &fsum[6 * (size_t)(i & fm)], i);
        finish_sum(&lg, fsum, fm, i, w, &sum);
      }
    }
    omax = sum.omax > omax ? sum.omax : omax;
    vm2 = sum.vm2 > vm2 ? sum.vm2 : vm2;
    touching += sum.touching;
    moving += sum.moving;
    count += sum.count;
    killed += sum.killed;
    over += sum.over;
    moved += sum.moved;
  }
  w->fig.over_max = omax;
  w->fig.contacts = touching;
  const pass_sums total = {omax, vm2, touching, moving, count, killed, over, moved};
  grn__finish_pass(w, &total);
}

/* At a rebuild: off until the plan after it, and its buffers let go if they are large, so that
 * the rebuild's scratch never sits on top of them (a 100 000-grain lattice settling on two threads
 * held 6.6 MB of them, sized for its widest span). Small ones are kept: a world of a few thousand
 * grains then steps without allocating, however often it rebuilds. */
void grn__fused_let_go(grn_world *w) {
  const grn_fused *f = &w->gran.fused;
  const size_t bytes = sizeof(grn_force_row) * (size_t)f->ringcap +
                       6 * sizeof(double) * (size_t)f->fsumcap +
                       sizeof(int32_t) * ((size_t)f->actcap + (size_t)f->brefcap);
  if (bytes >= FUSED_KEEP_MAX) {
    grn__fused_free(w);
  }
  w->gran.fused.on = false;
}

void grn__fused_free(grn_world *w) {
  grn_fused *f = &w->gran.fused;
  grn__free(w, f->ring, sizeof(grn_force_row) * (size_t)f->ringcap);
  grn__free(w, f->fsum, 6 * sizeof(double) * (size_t)f->fsumcap);
  grn__free(w, f->act, sizeof(int32_t) * (size_t)f->actcap);
  grn__free(w, f->bref, sizeof(int32_t) * (size_t)f->brefcap);
  f->ring = NULL;
  f->fsum = NULL;
  f->act = NULL;
  f->bref = NULL;
  f->ringcap = f->fsumcap = f->actcap = f->brefcap = 0;
  f->on = false;
}
