/* Shared pieces of the granular step, split by concept over forces.c (the pair pass), walls.c
 * (floor, walls, drum and tool), integrate.c (each grain's rows summed in pair order, then
 * integration) and fused.c (both in one sweep, and its planning). The per-grain pieces are
 * static inline so both the gather and the fused sweep inline them as before. */
#ifndef GRAINLAB_STEP_H
#define GRAINLAB_STEP_H

#include "contact_law.h"

typedef struct pass_sums {
  double omax, vm2;
  int touching, moving, count, killed;
  int over;  /* grains that moved as far as the near list allows them */
  int moved; /* grains that moved as far as the pair list allows them */
} pass_sums;

/* Per-grain pass view, copied into each thread so that stores cannot alias the pointers. */
typedef struct grain_ctx {
  grn_vec3 *restrict pos, *restrict vel, *restrict spin;
  const double *restrict rad, *restrict inv_m, *restrict inv_i;
  double *restrict hf;
  uint8_t *restrict flags;
  const int32_t *restrict pstart, *restrict rstart, *restrict rref;
  const float *restrict nu;      /* the near list's allowance of each grain, or NULL */
  const grn_vec3 *restrict nref; /* and its position at the refresh */
  const grn_vec3 *restrict ref;  /* the pair list's positions at its rebuild and slack */
  const double *restrict slack;
  grn_geom geom;
  grn_consts k;
} grain_ctx;

/* walls.c: floor, plate, hole rim, box, dam, silo, drum and tool forces on grain i */
void grn__boundaries(const grain_ctx *w, int i, grn_vec3 *f, grn_vec3 *t);

/* Whether grn__boundaries() would leave grain i alone: no plate, dam, silo, drum or tool, no
 * floor history to clear, above the floor (or plate) and inside the box walls and the silo's
 * cylinder, by the very tests it makes.
 * Most grains of a bed are, and the call costs more than these comparisons. */
static inline bool clear_of_walls(const grain_ctx *w, int i) {
  const grn_geom *g = &w->geom;
  if (g->dam || g->drum_r > 0.0 || g->tool || (w->flags[i] & (GRN_F_FLOOR | GRN_F_WALL))) {
    return false;
  }
  const grn_vec3 p = w->pos[i];
  const double r = w->rad[i];
  if (g->plate) {
    /* a radius or more above the plate: the plate's floor_contact finds no overlap, and the
     * hole's rim is at least dy = r away (dy ≥ r gives dy² ≥ r² after rounding too) */
    if (!(g->plate_y + r - p.y <= 0.0) || !(p.y - g->plate_y >= r)) {
      return false;
    }
  } else if (!(g->floor_y + r - p.y <= 0.0)) {
    return false; /* floor_contact would look at it (if it is over the floor) */
  }
  if (g->silo_r > 0.0) {
    const double rho2 = p.x * p.x + p.z * p.z, lim = g->silo_r - r;
    if (rho2 > lim * lim) {
      return false; /* against the silo's cylinder */
    }
  }
  return !g->box ||
         !(p.x - r < g->xmin || p.x + r > g->xmax || p.z - r < g->zmin || p.z + r > g->zmax);
}

/* A row's share for the smaller partner b: the force and b's torque. */
static inline void add_partner_row(const grn_force_row *row, grn_vec3 *f, grn_vec3 *t) {
  f->x += row->f[0];
  f->y += row->f[1];
  f->z += row->f[2];
  t->x += row->tb[0];
  t->y += row->tb[1];
  t->z += row->tb[2];
}

/* Every grain sums its rows in pair order: the pairs where it is the smaller partner under an
 * earlier owner, its own pairs, then those under later owners (the reference list is in pair
 * order, so it splits at the grain's own range). Whoever computes a grain and whenever, its sum is
 * the same to the bit; the fused step relies on this order to add each row the moment it is made.
 */
__attribute__((always_inline)) static inline void
sum_rows(const grain_ctx *c, const grn_force_row *restrict rows, int i, double ft[6]) {
  grn_vec3 f = v3(0, 0, 0), t = v3(0, 0, 0);
  const int p0 = c->pstart[i], p1 = c->pstart[i + 1], q1 = c->rstart[i + 1];
  int q = c->rstart[i];
  for (; q < q1 && c->rref[q] < p0; q++) {
    add_partner_row(&rows[c->rref[q]], &f, &t);
  }
  for (int p = p0; p < p1; p++) {
    const grn_force_row *row = &rows[p];
    f.x -= row->f[0];
    f.y -= row->f[1];
    f.z -= row->f[2];
    t.x += row->ta[0];
    t.y += row->ta[1];
    t.z += row->ta[2];
  }
  for (; q < q1; q++) {
    add_partner_row(&rows[c->rref[q]], &f, &t);
  }
  ft[0] = f.x;
  ft[1] = f.y;
  ft[2] = f.z;
  ft[3] = t.x;
  ft[4] = t.y;
  ft[5] = t.z;
}

/* Boundaries and integration of grain i, given the sum of its rows. */
__attribute__((always_inline)) static inline void
finish_one(const grain_ctx *c, int i, const double ft[6], const grn_world *w, pass_sums *sum) {
  if ((c->flags[i] & (GRN_F_ALIVE | GRN_F_FIXED)) != GRN_F_ALIVE) {
    return;
  }
  const double h = GRN_H, drag = w->t < w->settle.drag ? 0.97 : 1.0;
  const grn_vec3 g = w->gravity;
  grn_vec3 f = v3(ft[0], ft[1], ft[2]), t = v3(ft[3], ft[4], ft[5]);
  if (!clear_of_walls(c, i)) {
    grn__boundaries(c, i, &f, &t);
  }

  /* semi-implicit Euler: new velocity from force, then position from the new velocity */
  const double im = c->inv_m[i], ii = c->inv_i[i], vmax2 = GRN_VMAX * GRN_VMAX;
  grn_vec3 v = c->vel[i];
  v.x = (v.x + (f.x * im + g.x) * h) * drag;
  v.y = (v.y + (f.y * im + g.y) * h) * drag;
  v.z = (v.z + (f.z * im + g.z) * h) * drag;
  double v2 = dot(v, v);
  const grn_vec3 sp = add(c->spin[i], scale(t, ii * h));
  if (!(v2 < vmax2)) {
    if (!isfinite(v2)) {
      /* a NaN (or infinite) velocity is removed, never propagated to its neighbours */
      c->flags[i] = 0;
      sum->killed++;
      return;
    }
    v = scale(v, GRN_VMAX / sqrt(v2));
    v2 = vmax2;
  }
  if (!isfinite(sp.x + sp.y + sp.z)) {
    c->flags[i] = 0;
    sum->killed++;
    return;
  }
  c->vel[i] = v;
  c->spin[i] = sp;
  c->pos[i] = add(c->pos[i], scale(v, h));
  {
    /* a hair of slack for the rounding of this distance: the list is made again before a pair it
     * left out could touch */
    const grn_vec3 d = sub(c->pos[i], c->ref[i]);
    const double e = c->slack[i] * (1.0 - 1e-9);
    sum->moved += dot(d, d) >= e * e;
  }
  sum->vm2 = v2 > sum->vm2 ? v2 : sum->vm2;
  if (c->nu) { /* the same hair of slack for the near list */
    const grn_vec3 d = sub(c->pos[i], c->nref[i]);
    const double e = (double)c->nu[i] * (1.0 - 1e-9);
    sum->over += dot(d, d) >= e * e;
  }
  sum->moving += v2 > GRN_VFLOW * GRN_VFLOW;
  sum->count++;
  if (c->pos[i].y < w->geom.kill_y) {
    c->flags[i] = 0; /* removed for good: every flag goes */
    sum->killed++;
  }
}

/* forces.c */
pair_ctx grn__pair_ctx_of(const grn_world *w, grn_force_row *rows, bool ring);
int grn__range_forces(const pair_ctx *c, const int32_t *restrict owner, int32_t q0, int32_t q1,
                      int32_t base, bool simd, pass_sums *sum, int32_t *act);
int grn__forces_pass(grn_world *w, bool near);
/* integrate.c */
grain_ctx grn__grain_ctx_of(const grn_world *w, bool near);
void grn__finish_pass(grn_world *w, const pass_sums *sum);

#endif
