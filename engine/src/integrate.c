/* Integration of the granular step (spec §2): each grain's rows summed in pair order (the same
 * bits for any thread count), boundaries, semi-implicit Euler, and the pass's figures. */
#include "step.h"

/* The reference pass reads the whole list; the fused step its near pairs. */
grain_ctx grn__grain_ctx_of(const grn_world *w, bool near) {
  const grain_ctx c = {w->pos,
                       w->vel,
                       w->spin,
                       w->rad,
                       w->inv_m,
                       w->inv_i,
                       w->hf,
                       w->flags,
                       near ? w->gran.near.start : w->pairs.pstart,
                       near ? w->gran.near.rstart : w->pairs.rstart,
                       near ? w->gran.near.rref : w->pairs.rref,
                       near ? w->gran.near.nu : NULL,
                       near ? w->gran.near.ref : NULL,
                       w->pairs.ref,
                       w->pairs.slack,
                       w->geom,
                       w->k};
  return c;
}

void grn__finish_pass(grn_world *w, const pass_sums *sum) {
  w->fig.flowing = sum->count > 0 ? (double)sum->moving / sum->count : 0.0;
  w->fig.vmax = sqrt(sum->vm2);
  w->gran.near.over += sum->over;
  /* a grain removed: the list is made again; a grain moved as far as the list allows it: it is
   * listed again (relist.c) */
  w->pairs.dirty = w->pairs.dirty || sum->killed > 0;
  w->pairs.moved = w->pairs.moved || sum->moved > 0;
  w->fig.alive -= sum->killed;
}

/* The grain pass over the table of forces_pass. */
static void gather_pass(grn_world *w, bool near) {
  const int n = w->n, nthreads = w->opt.threads;
  const grain_ctx shared = grn__grain_ctx_of(w, near);
  double vm2 = 0.0;
  int moving = 0, count = 0, killed = 0, over = 0, moved = 0;
  (void)nthreads;
#pragma omp parallel num_threads(nthreads) reduction(max : vm2)                      \
    reduction(+ : moving, count, killed, over, moved)
  {
    const grain_ctx c = shared;
    pass_sums sum = {0};
#pragma omp for schedule(static)
    for (int i = 0; i < n; i++) {
      double ft[6];
      sum_rows(&c, w->pairs.table, i, ft);
      finish_one(&c, i, ft, w, &sum);
    }
    vm2 = sum.vm2 > vm2 ? sum.vm2 : vm2;
    moving += sum.moving;
    count += sum.count;
    killed += sum.killed;
    over += sum.over;
    moved += sum.moved;
  }
  const pass_sums total = {0.0, vm2, 0, moving, count, killed, over, moved};
  grn__finish_pass(w, &total);
}

void grn__gather_integrate(grn_world *w) {
  grn__pair_refs(w);
  gather_pass(w, false);
}

/* Both passes over the near list: for worlds whose thread chunks are too short for the fused
 * step's bands (a few thousand grains on two threads). Same bits as the reference. */
int grn__step_near(grn_world *w) {
  const int rc = grn__forces_pass(w, true);
  if (rc == GRN_OK) {
    gather_pass(w, true);
  }
  return rc;
}
