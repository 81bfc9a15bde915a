/* The pair pass shared by the scalar reference (contact_law.h) and the AVX2 kernel
 * (contact_avx2.c): both apply the same IEEE operations in the same order, so their results are
 * bit-identical. */
#ifndef GRAINLAB_CONTACT_H
#define GRAINLAB_CONTACT_H

#include "internal.h"

/* Read-mostly view of the world for the pair loop: local restrict pointers let the compiler keep
 * them in registers (stores into the table cannot alias the grain arrays). */
typedef struct pair_ctx {
  const grn_vec3 *restrict pos, *restrict vel, *restrict spin;
  const double *restrict rad;
  const int32_t *restrict pb;
  const int32_t *restrict hp; /* pair -> its history and pfn entry; NULL: the same index */
  grn_hist *restrict hist;
  float *restrict pfn;
  grn_force_row *restrict table;
  double mu, mur, coh, gap, cn, ct, kr, cr;
  bool ring;  /* rows live in buffers reused over the step (fused): inactive rows are zeroed too */
  bool sieve; /* the range kernel finds the touching pairs first and runs the law on those only */
  bool keep_zero; /* a sieve writes zero rows too (bands between threads read every row) */
} pair_ctx;

static inline int32_t hist_of(const pair_ctx *c, int32_t p) {
  return c->hp ? c->hp[p] : p;
}

/* Whether this CPU can run the AVX2 kernel (and the build has it). */
bool grn__simd_available(void);

/* Contact law of listed pairs, four at a time. `list` holds (owner, pair, row slot) triples;
 * count is a multiple of 4. Touching pairs get their row, history and pfn, apart pairs without
 * history a zero row; the list positions of any other pair (for the scalar law to decide) are
 * written to slow[*nslow] (at most count). Adds the touching pairs to *touching and returns
 * their largest overlap. */
double grn__contacts_avx2(const pair_ctx *c, const int32_t *list, int count, int *touching,
                          int32_t *slow, int *nslow);
/* The most pairs one call of the range kernel takes. */
#define GRN_KERNEL_MAX 256
/* The same for the pairs q0 .. q0 + count − 1 (count ≤ GRN_KERNEL_MAX) of owners owner[q], rows
 * at base + q; slow gets offsets from q0, and act[*nact], in order, the pairs whose row may be
 * other than zero (the touching and the doubtful ones). */
double grn__contacts_range_avx2(const pair_ctx *c, const int32_t *owner, int32_t q0, int32_t base,
                                int count, int *touching, int32_t *slow, int *nslow, int32_t *act,
                                int *nact);

#endif
