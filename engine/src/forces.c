/* The granular pair pass (spec §2, reference 001): every listed pair's contact law into its row
 * of the contact-force table, in pair order, scalar or four at a time by the AVX2 kernel. */
#include "step.h"

#include <string.h>

/* Listed pairs a thread collects for the AVX2 kernel: (owner, pair, row slot) triples. */
#define TOUCH_BATCH 256
typedef struct batch {
  int32_t item[3 * TOUCH_BATCH];
  int n;
} batch;

static inline void law_one(const pair_ctx *c, const int32_t *it, pass_sums *sum) {
  const double over = pair_force(c, it[0], it[1], &c->table[it[2]]);
  if (over > 0.0) {
    sum->touching++;
    sum->omax = over > sum->omax ? over : sum->omax;
  }
}

/* The kernel takes the pairs four at a time and hands the doubtful ones (parting, a liquid
 * bridge, within rounding of first touch) back to the scalar law; each pair's result depends on
 * its own inputs only, so which code computes it, and when, does not matter. */
static void batch_flush(const pair_ctx *c, batch *bt, pass_sums *sum) {
  const int full = bt->n & ~3;
  int32_t slow[TOUCH_BATCH];
  int nslow = 0;
  if (full > 0) {
    const double o = grn__contacts_avx2(c, bt->item, full, &sum->touching, slow, &nslow);
    sum->omax = o > sum->omax ? o : sum->omax;
  }
  for (int k = 0; k < nslow; k++) {
    law_one(c, &bt->item[3 * slow[k]], sum);
  }
  for (int k = full; k < bt->n; k++) {
    law_one(c, &bt->item[3 * k], sum);
  }
  bt->n = 0;
}

/* Forces of the near pairs q0 .. q1 − 1 (the fused step's block, rows at base + q): the kernel
 * takes them in place, four at a time. Returns how many pairs it wrote to act (in order: those
 * whose row may be other than zero; every other row is zero), or −1 without the kernel, when any
 * row may be other than zero. act has room for q1 − q0. */
int grn__range_forces(const pair_ctx *c, const int32_t *restrict owner, int32_t q0, int32_t q1,
                      int32_t base, bool simd, pass_sums *sum, int32_t *act) {
  int32_t slow[GRN_KERNEL_MAX];
  int32_t q = q0;
  int nact = 0;
  while (simd && q1 - q >= 4) {
    const int k = q1 - q < GRN_KERNEL_MAX ? (q1 - q) & ~3 : GRN_KERNEL_MAX;
    int nslow = 0, more = 0;
    const double o = grn__contacts_range_avx2(c, owner, q, base, k, &sum->touching, slow, &nslow,
                                              act + nact, &more);
    sum->omax = o > sum->omax ? o : sum->omax;
    for (int j = 0; j < nslow; j++) {
      const int32_t it[3] = {owner[q + slow[j]], q + slow[j], base + q + slow[j]};
      law_one(c, it, sum);
    }
    nact += more;
    q += k;
  }
  for (; q < q1; q++) {
    const int32_t it[3] = {owner[q], q, base + q};
    law_one(c, it, sum);
    act[nact++] = q;
  }
  return simd ? nact : -1;
}

/* Forces of every pair owned by grain a: with SIMD they are queued for the kernel. */
static inline void owner_forces(const pair_ctx *c, const int32_t *restrict pstart, int a, batch *bt,
                                bool simd, pass_sums *sum) {
  const int p1 = pstart[a + 1];
  for (int p = pstart[a]; p < p1; p++) {
    if (!simd) {
      const int32_t it[3] = {a, p, p};
      law_one(c, it, sum);
      continue;
    }
    int32_t *it = &bt->item[3 * bt->n];
    it[0] = a;
    it[1] = p;
    it[2] = p;
    if (++bt->n == TOUCH_BATCH) {
      batch_flush(c, bt, sum);
    }
  }
}

pair_ctx grn__pair_ctx_of(const grn_world *w, grn_force_row *rows, bool ring) {
  /* sieving pays where many near pairs are apart or grains flow (an avalanche gains 11 % though
   * 95 % of its near pairs touch), not in a bed at rest (5 % slower); the last step decides, and
   * either way the bits are the same */
  const bool sieve =
      ring && ((int64_t)w->fig.contacts * 4 < (int64_t)w->gran.near.m * 3 || w->fig.flowing > 0.1);
  const pair_ctx c = {w->pos,
                      w->vel,
                      w->spin,
                      w->rad,
                      ring ? w->gran.near.b : w->pairs.pb,
                      ring ? w->gran.near.p : NULL,
                      w->pairs.hist,
                      w->pairs.pfn,
                      rows,
                      grn__param(w, GRN_SP_MU),
                      grn__param(w, GRN_SP_MUR),
                      grn__param(w, GRN_SP_COH),
                      grn__reach_gap(w),
                      w->k.cn,
                      w->k.ct,
                      w->k.kr,
                      w->k.cr,
                      ring,
                      sieve,
                      w->opt.threads > 1};
  return c;
}

/* The force pass over a table of rows: the reference over the whole list and a full table (also
 * what tests inspect), or (near) over the near list, row q of the table for near pair q. Inactive
 * rows of the full table must read as zero: after a rebuild, a fused or a near step it is
 * cleared once; near rows of apart pairs are zeroed every time. */
int grn__forces_pass(grn_world *w, bool near) {
  const int rows = near ? w->gran.near.m : w->pairs.m;
  if (w->pairs.tcap < rows) {
    grn__free(w, w->pairs.table, sizeof(grn_force_row) * (size_t)w->pairs.tcap);
    w->pairs.tcap = 0;
    const int want = w->pairs.m + w->pairs.m / 4 + 64;
    w->pairs.table = grn__alloc(w, sizeof(grn_force_row) * (size_t)want);
    if (!w->pairs.table) {
      return GRN_E_NOMEM;
    }
    w->pairs.tcap = want;
    w->pairs.table_valid = false;
  }
  if (near) {
    w->pairs.table_valid = false;
  } else if (!w->pairs.table_valid && w->pairs.m > 0) {
    memset(w->pairs.table, 0, sizeof(grn_force_row) * (size_t)w->pairs.m);
    w->pairs.table_valid = true;
  }
  const pair_ctx c = grn__pair_ctx_of(w, w->pairs.table, near);
  const int32_t *restrict pstart = near ? w->gran.near.start : w->pairs.pstart;
  const int n = w->n, nthreads = w->opt.threads;
  const bool simd = w->opt.simd;
  double omax = 0.0;
  int touching = 0;
  (void)nthreads;
  /* Pairs whose grains were removed never reach here: a removal marks the list dirty and the
   * next step rebuilds before computing forces. */
#pragma omp parallel num_threads(nthreads) reduction(max : omax) reduction(+ : touching)
  {
    const pair_ctx lc = c; /* thread-local copy: its address never escapes, so no aliasing */
    batch bt;
    bt.n = 0;
    pass_sums sum = {0};
#pragma omp for schedule(static)
    for (int a = 0; a < n; a++) {
      owner_forces(&lc, pstart, a, &bt, simd, &sum);
    }
    batch_flush(&lc, &bt, &sum);
    omax = sum.omax > omax ? sum.omax : omax;
    touching += sum.touching;
  }
  w->fig.over_max = omax;
  w->fig.contacts = touching;
  return GRN_OK;
}

int grn__forces(grn_world *w) {
  return grn__forces_pass(w, false);
}
