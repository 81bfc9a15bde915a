/* A bare laboratory world for engine tests: no grains, no walls, no floor unless a test sets
 * them, so single-grain experiments can be compared with textbook mechanics. */
#ifndef GRAINLAB_TEST_LAB_H
#define GRAINLAB_TEST_LAB_H

#include "../../engine/src/internal.h"

#include <string.h>

static inline grn_world *lab_new(int threads) {
  grn_world_def d;
  grn_error e;
  if (grn_world_def_default(&d, "pour", &e) != GRN_OK) {
    return NULL;
  }
  d.grains = 1;
  d.fill = GRN_FILL_BED;
  d.threads = threads;
  d.allow_sleep = false;
  grn_world *w = NULL;
  if (grn_world_create(&d, &w, &e) != GRN_OK) {
    return NULL;
  }
  /* drop the bed's grain and geometry */
  for (int i = 0; i < w->n; i++) {
    grn__kill(w, i);
  }
  grn__rebuild(w);
  memset(&w->geom, 0, sizeof w->geom);
  w->geom.floor_y = -1e9;
  w->geom.fx0 = w->geom.fz0 = -INFINITY;
  w->geom.fx1 = w->geom.fz1 = INFINITY;
  w->geom.kill_y = -1e12;
  w->geom.mu_wall = GRN_MU_FLOOR;
  w->geom.mu_floor = GRN_MU_FLOOR;
  w->geom.mur_floor = GRN_MUR_FLOOR;
  w->settle.drag = 0.0;
  w->gravity = (grn_vec3){0.0, 0.0, 0.0};
  return w;
}

static inline void lab_floor(grn_world *w, double y) {
  w->geom.floor_y = y;
}

static inline int lab_add(grn_world *w, double x, double y, double z, double r, double vx,
                          double vy, double vz) {
  const grn_vec3 v = {vx, vy, vz};
  grn__add_grain(w, x, y, z, r, v);
  return w->n - 1;
}

/* index of the grain with stable id `id` (storage order changes at every rebuild) */
static inline int lab_find(const grn_world *w, uint32_t id) {
  for (int i = 0; i < w->n; i++) {
    if (w->id[i] == id && (w->flags[i] & GRN_F_ALIVE)) {
      return i;
    }
  }
  return -1;
}

#endif
