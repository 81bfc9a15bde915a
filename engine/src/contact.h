/* The pair pass shared by the scalar reference (step.c) and the AVX2 kernel (contact_avx2.c):
 * both apply the same IEEE operations in the same order, so their results are bit-identical. */
#ifndef GRAINLAB_CONTACT_H
#define GRAINLAB_CONTACT_H

#include "internal.h"

/* Read-mostly view of the world for the pair loop: local restrict pointers let the compiler keep
 * them in registers (stores into the table cannot alias the grain arrays). */
typedef struct pair_ctx {
  const grn_vec3 *restrict pos, *restrict vel, *restrict spin;
  const double *restrict rad;
  const int32_t *restrict pb;
  grn_hist *restrict hist;
  float *restrict pfn;
  grn_force_row *restrict table;
  double mu, mur, coh, gap, cn, ct, kr, cr;
  bool ring; /* rows live in a ring shared over the step: inactive rows are zeroed every time */
} pair_ctx;

/* Whether this CPU can run the AVX2 kernel (and the build has it). */
bool grn__simd_available(void);

/* Contact law for touching pairs, four at a time. `list` holds (owner, pair, row slot) triples;
 * count is a multiple of 4. Every listed pair must be touching (overlap > 0). Returns the
 * largest overlap among them. */
double grn__contacts_avx2(const pair_ctx *c, const int32_t *list, int count);

#endif
